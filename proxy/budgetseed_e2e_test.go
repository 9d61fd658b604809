package proxy_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"

	"github.com/agate-gateway/agate/internal/gatewaytest"
	"github.com/agate-gateway/agate/limits/redistest"
	"github.com/agate-gateway/agate/proxy"
)

// TestBudgets_ReseededAfterRestart: a key spends its budget through one gateway, which
// shuts down; a new gateway on the same ledger (the same SQLite file, the same
// PostgreSQL database), its limiter empty, refuses the key's next request with
// insufficient_quota, while a key that spent nothing is served; the same for a team's
// budget, spent by one of its keys before the restart and refusing another after. With
// state redis, the same after the redis-server lost its data.
func TestBudgets_ReseededAfterRestart(t *testing.T) {
	t.Parallel() // its own gateway, fakes and servers (#54)
	// "redis": state redis, and the redis-server loses its data (killed, restarted)
	// between the two gateways.
	for _, db := range []string{"sqlite", "postgres", "redis"} {
		t.Run(db, func(t *testing.T) {
			ledgerYAML := "ledger: {type: sqlite, path: " + sqliteLedgers.Fresh(t) + ", flush_interval: 1h}\n"
			if db == "postgres" {
				ledgerYAML = "ledger: {type: postgres, url: \"" + postgres.NewDatabase(t) + "\", flush_interval: 1h, spool_path: off}\n"
			}
			var rs *redistest.Server
			if db == "redis" {
				rs = redistest.Start(t)
				ledgerYAML += fmt.Sprintf("state: {type: redis, url: %q, timeout: 2s}\n", rs.URL())
			}
			yaml := `
backends: {offline: {type: mock}}
models: {demo: {backend: offline}}
keys:
  alice: {key: sk-alice, models: ["*"], budget: {tokens: 3, period: 24h}}
  bob: {key: sk-bob, models: ["*"], budget: {tokens: 3, period: 24h}}
  dave: {key: sk-dave, models: ["*"], team: ops}
  erin: {key: sk-erin, models: ["*"], team: ops}
teams: {ops: {budget: {tokens: 3, period: 24h}}}
` + ledgerYAML
			ask := func(g *gatewaytest.Gateway, key string) error {
				c := gatewaytest.OpenAI(g.V1(), key)
				_, err := c.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
					Model: "demo", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi there")}})
				return err
			}
			first := gatewaytest.StartYAML(t, yaml, gatewaytest.Options{Runtime: proxy.TestRuntime})
			for _, key := range []string{"sk-alice", "sk-dave"} {
				if err := ask(first, key); err != nil {
					t.Fatalf("%s's first request: %v", key, err)
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := first.Server.Shutdown(ctx); err != nil { // drains the ledger
				t.Fatal(err)
			}
			if rs != nil {
				rs.Kill() // its data is lost
				rs.Restart()
			}

			second := gatewaytest.StartYAML(t, yaml, gatewaytest.Options{Runtime: proxy.TestRuntime})
			err := ask(second, "sk-alice")
			var apiErr *openai.Error
			if !errors.As(err, &apiErr) || apiErr.StatusCode != 429 || apiErr.Code != "insufficient_quota" {
				t.Fatalf("alice after the restart: %v; want 429 insufficient_quota (her budget was spent before it)", err)
			}
			if err := ask(second, "sk-erin"); !errors.As(err, &apiErr) || apiErr.StatusCode != 429 || apiErr.Code != "insufficient_quota" {
				t.Fatalf("erin after the restart: %v; want 429 insufficient_quota (her team's budget was spent by dave before it)", err)
			}
			if err := ask(second, "sk-bob"); err != nil {
				t.Errorf("bob, who spent nothing: %v", err)
			}
		})
	}
}
