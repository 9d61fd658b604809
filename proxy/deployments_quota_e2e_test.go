package proxy_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/redis/go-redis/v9"

	"github.com/agate-gateway/agate/internal/gatewaytest"
	"github.com/agate-gateway/agate/limits/redistest"
	"github.com/agate-gateway/agate/proxy"
)

// TestDeployments_QuotaAcrossReplicas: two gateways sharing a real redis-server spend one
// deployment quota. Deployment d0 takes 4 requests a minute and is preferred (weight 100
// to 1): the first gateway spends it; once the replicas have exchanged their counts
// (balancing.quota_sync, 20ms here) the second sends d0 one request before its first
// exchange and every one after it to d1. The quota's windows are clock minutes: with
// less than 2 s of the current one left (the test takes some 0.3 s), it waits for the next.
func TestDeployments_QuotaAcrossReplicas(t *testing.T) {
	if left := time.Until(time.Now().Truncate(time.Minute).Add(time.Minute)); left < 2*time.Second {
		time.Sleep(left + 10*time.Millisecond)
	}
	srv := redistest.Start(t)
	f0, f1 := newCachingAnthropic(t, "d0"), newCachingAnthropic(t, "d1")
	yaml := fmt.Sprintf(`backends:
  d0: {type: anthropic, base_url: %q, api_key: upstream-secret, retries: {max: 0}}
  d1: {type: anthropic, base_url: %q, api_key: upstream-secret, retries: {max: 0}}
models:
  pool:
    deployments:
      - {backend: d0, upstream_model: claude-sonnet-4-5, weight: 100, limits: {requests_per_minute: 4}}
      - {backend: d1, upstream_model: claude-sonnet-4-5, weight: 1}
balancing: {quota_sync: 20ms}
state: {type: redis, url: %q}
`, f0.srv.URL, f1.srv.URL, srv.URL())
	g1 := gatewaytest.StartYAML(t, yaml, gatewaytest.Options{Runtime: proxy.TestRuntime})
	g2 := gatewaytest.StartYAML(t, yaml, gatewaytest.Options{Runtime: proxy.TestRuntime})
	ask := func(g *gatewaytest.Gateway) string {
		t.Helper()
		c := gatewaytest.Anthropic(g.URL, "client-key")
		msg, err := c.Messages.New(context.Background(), anthropic.MessageNewParams{
			Model: "pool", MaxTokens: 64, Messages: []anthropic.MessageParam{userText("hello")}})
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimPrefix(msg.Content[0].Text, "answer from ")
	}
	opts, err := redis.ParseURL(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	rc := redis.NewClient(opts)
	t.Cleanup(func() { rc.Close() })
	// shared waits until the replicas' exchanges have put n requests of d0 in Redis.
	shared := func(n int64) {
		t.Helper()
		deadline := time.Now().Add(2 * time.Second)
		for time.Now().Before(deadline) {
			keys, _ := rc.Keys(context.Background(), "*quota:{pool/d0/*").Result()
			if len(keys) == 1 {
				if got, _ := rc.HGet(context.Background(), keys[0], "r").Int64(); got >= n {
					return
				}
			}
			time.Sleep(5 * time.Millisecond)
		}
		t.Fatalf("d0's shared count never reached %d", n)
	}
	var first []string
	for range 3 {
		first = append(first, ask(g1))
	}
	time.Sleep(25 * time.Millisecond) // past the interval: g1's next pick exchanges
	first = append(first, ask(g1))
	if got := strings.Join(first, ","); got != "d0,d0,d0,d0" {
		t.Fatalf("first gateway: %s, want d0 four times (its quota)", got)
	}
	shared(4)
	// g2 has not exchanged yet: its first pick knows only its own counts and goes to d0
	// (the interval's overshoot), and starts its first exchange; every request after that
	// one goes to d1. Without sharing g2 would send d0 four requests of its own.
	var second []string
	for i := range 6 {
		second = append(second, ask(g2))
		if i == 0 {
			shared(5)
			time.Sleep(20 * time.Millisecond) // the exchange's answer applied
		}
	}
	if got := strings.Join(second, ","); got != "d0,d1,d1,d1,d1,d1" {
		t.Fatalf("second gateway: %s, want d0 once (before its first exchange), then d1", got)
	}
}
