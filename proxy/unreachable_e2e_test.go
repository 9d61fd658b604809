package proxy_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/agate-gateway/agate/internal/gatewaytest"
	"github.com/agate-gateway/agate/internal/logjson"
	"github.com/agate-gateway/agate/proxy"
)

// closedPort returns a loopback address nothing listens on: connecting is refused.
func closedPort(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// TestUnreachableUpstream_SaysWhy: an upstream that cannot be reached is a 502 whose
// message names the class of the failure (not the address); the log line names it with
// the transport's own message, once per failure; the access line carries the status the
// client got; gateway_upstream_duration_seconds counts it under code 0 (no answer), as
// its help text says, and the request is counted once.
func TestUnreachableUpstream_SaysWhy(t *testing.T) {
	t.Parallel() // nothing shared, no clock or environment of the process (#54)
	addr := closedPort(t)
	var logs gatewaytest.Buffer
	g := gatewaytest.StartYAML(t, fmt.Sprintf(`backends:
  dead: {type: openai, base_url: "http://%s/v1", api_key: upstream-secret, retries: {max: 0}}
models:
  m: {backend: dead, upstream_model: up-model}
keys:
  alice: {key: sk-alice, models: ["*"]}
`, addr), gatewaytest.Options{Runtime: proxy.TestRuntime, Logger: slog.New(logjson.New(&logs, nil))})
	client := gatewaytest.OpenAI(g.V1(), "sk-alice")
	for i, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			params := openai.ChatCompletionNewParams{Model: "m", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}}
			var err error
			if stream {
				s := client.Chat.Completions.NewStreaming(context.Background(), params)
				for s.Next() {
				}
				err = s.Err()
			} else {
				_, err = client.Chat.Completions.New(context.Background(), params)
			}
			var apiErr *openai.Error
			if !errors.As(err, &apiErr) {
				t.Fatalf("error %v (%T) is not an *openai.Error", err, err)
			}
			if apiErr.StatusCode != 502 || !strings.Contains(apiErr.Message, "backend dead: connection refused") || strings.Contains(apiErr.Message, addr) {
				t.Errorf("status %d message %q: want a 502 naming the backend and the cause's class, not the address", apiErr.StatusCode, apiErr.Message)
			}
			line := accessLineOf(t, g, &logs, "m", i+1)
			if line["status"] != float64(502) {
				t.Errorf("access line status %v, want 502 (what the client got)", line["status"])
			}
			var causes int
			for _, l := range strings.Split(logs.String(), "\n") {
				if strings.Contains(l, `"request failed"`) && strings.Contains(l, "(cause: connection refused: ") && strings.Contains(l, addr) {
					causes++
				}
			}
			if causes != i+1 {
				t.Errorf("%d log lines name the cause, want %d:\n%s", causes, i+1, logs.String())
			}
			if n := testutil.ToFloat64(g.Metrics.Requests.WithLabelValues("m", "dead", "alice", "502", fmt.Sprint(stream), "chat")); n != 1 {
				t.Errorf("gateway_requests_total{code=502,stream=%v} = %v, want 1", stream, n)
			}
		})
	}
	codes := map[string]uint64{}
	mfs, err := g.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "gateway_upstream_duration_seconds" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "code" {
					codes[l.GetValue()] += m.GetHistogram().GetSampleCount()
				}
			}
		}
	}
	if want := map[string]uint64{"0": 2}; fmt.Sprint(codes) != fmt.Sprint(want) {
		t.Errorf("gateway_upstream_duration_seconds attempts by code %v, want %v", codes, want)
	}
}
