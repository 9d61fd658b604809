package proxy

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/openai/openai-go/v3"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// scraped is a /metrics scrape parsed with expfmt; it implements prometheus.Gatherer.
type scraped map[string]*dto.MetricFamily

func (s scraped) Gather() ([]*dto.MetricFamily, error) {
	out := make([]*dto.MetricFamily, 0, len(s))
	for _, f := range s {
		out = append(out, f)
	}
	return out, nil
}

var _ prometheus.Gatherer = scraped(nil)

func (g *gateway) scrape() scraped {
	g.t.Helper()
	r := g.do("GET", "/metrics", "", nil)
	if r.status != 200 {
		g.t.Fatalf("/metrics: %d", r.status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(bytes.NewReader(r.body))
	if err != nil {
		g.t.Fatalf("parsing /metrics: %v", err)
	}
	return scraped(families)
}

// TestMetrics sends known traffic and checks the scraped figures exactly.
func TestMetrics(t *testing.T) {
	up := newUpstream(t, okUpstream("two words"))
	g := startGateway(t, `
backends:
  offline: {type: mock}
  up: {type: openai, base_url: "{{UP}}", retries: {max: 0}}
models:
  demo: {backend: offline}
  gpt: {backend: up, upstream_model: up-model}
keys:
  alice: {key: sk-alice, models: ["*"]}
  bob: {key: sk-bob, models: ["gpt"]}
`, map[string]string{"UP": up.v1()})
	ctx := context.Background()
	alice, bob := g.client("sk-alice"), g.client("sk-bob")

	// Two mock completions of 3 and 4 words: prompt 7, completion 7.
	for _, text := range []string{"one two three", "one two three four"} {
		if _, err := alice.Chat.Completions.New(ctx, userParams("demo", text)); err != nil {
			t.Fatal(err)
		}
	}
	// One streamed mock completion of 2 words, with usage.
	p := userParams("demo", "streamed words")
	p.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
	s := alice.Chat.Completions.NewStreaming(ctx, p)
	for s.Next() {
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	// Two passthrough streams without usage (Agate still counts the upstream's usage chunk:
	// prompt 5, completion 2, cached 3 each) and one non-stream (prompt 5, completion 2).
	for range 2 {
		s := bob.Chat.Completions.NewStreaming(ctx, userParams("gpt", "hi"))
		for s.Next() {
		}
		if err := s.Err(); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := bob.Chat.Completions.New(ctx, userParams("gpt", "hi")); err != nil {
		t.Fatal(err)
	}
	// Rejections: bob may not use demo and an unknown model (both 404), a bad key (401).
	bob.Chat.Completions.New(ctx, userParams("demo", "hi"))
	alice.Chat.Completions.New(ctx, userParams("nope", "hi"))
	mallory := g.client("sk-mallory")
	mallory.Chat.Completions.New(ctx, userParams("demo", "hi"))

	// A stream's writer records its metrics and leaves the in-flight gauge after the
	// client has read the last byte: wait for the gauge to come back to 0 (bounded), then
	// scrape again. A scrape is no snapshot (it reads one family after another), so the
	// one that saw the gauge at 0 may have read the duration histogram before a writer's
	// last observation; one begun after it has everything the writers recorded.
	m := g.scrape()
	for deadline := time.Now().Add(5 * time.Second); gatheredValue(t, m, "gateway_inflight_requests", nil) != 0 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond) // poll
		m = g.scrape()
	}
	m = g.scrape()
	got := map[string]float64{}
	want := map[string]float64{}
	check := func(key string, w float64, name string, labels map[string]string) {
		want[key] = w
		got[key] = gatheredValue(t, m, name, labels)
	}
	req := "gateway_requests_total"
	check("requests demo alice 200 non-stream", 2, req, map[string]string{"model": "demo", "backend": "offline", "key": "alice", "code": "200", "stream": "false"})
	check("requests demo alice 200 stream", 1, req, map[string]string{"model": "demo", "backend": "offline", "key": "alice", "code": "200", "stream": "true"})
	check("requests gpt bob 200 stream", 2, req, map[string]string{"model": "gpt", "backend": "up", "key": "bob", "code": "200", "stream": "true"})
	check("requests gpt bob 200 non-stream", 1, req, map[string]string{"model": "gpt", "backend": "up", "key": "bob", "code": "200", "stream": "false"})
	check("requests forbidden bob 404", 1, req, map[string]string{"model": "unknown", "backend": "", "key": "bob", "code": "404"})
	check("requests unknown alice 404", 1, req, map[string]string{"model": "unknown", "backend": "", "key": "alice", "code": "404"})
	check("requests 401", 1, req, map[string]string{"code": "401"})
	check("requests total", 9, req, nil)
	tok := "gateway_tokens_total"
	check("tokens demo prompt", 3+4+2, tok, map[string]string{"model": "demo", "backend": "offline", "key": "alice", "type": "prompt"})
	check("tokens demo completion", 3+4+2, tok, map[string]string{"model": "demo", "backend": "offline", "key": "alice", "type": "completion"})
	check("tokens gpt prompt", 3*5, tok, map[string]string{"model": "gpt", "backend": "up", "key": "bob", "type": "prompt"})
	check("tokens gpt completion", 3*2, tok, map[string]string{"model": "gpt", "backend": "up", "key": "bob", "type": "completion"})
	check("tokens gpt cached", 2*3, tok, map[string]string{"model": "gpt", "backend": "up", "key": "bob", "type": "cached"})
	check("inflight", 0, "gateway_inflight_requests", nil)
	check("upstream attempts", 3, "gateway_upstream_duration_seconds", map[string]string{"backend": "up", "code": "200"})
	check("request durations", 6, "gateway_request_duration_seconds", nil)
	check("time to first token (streams only)", 3, "gateway_time_to_first_token_seconds", nil)
	check("config reloads", 0, "gateway_config_reloads_total", nil)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("metrics (-want +got):\n%s", diff)
	}
	for _, name := range []string{"go_goroutines", "process_cpu_seconds_total", "gateway_config_reloads_total"} {
		if _, ok := m[name]; !ok {
			t.Errorf("/metrics lacks %s", name)
		}
	}
	// No secret in any label.
	for _, f := range m {
		for _, mm := range f.GetMetric() {
			for _, l := range mm.GetLabel() {
				if v := l.GetValue(); v == "sk-alice" || v == "sk-bob" || v == "sk-mallory" {
					t.Errorf("%s has a client key in label %s", f.GetName(), l.GetName())
				}
			}
		}
	}
}

// TestMetrics_FallbackAndKeySeries: a request answered by a fallback counts its tokens
// under the fallback's model and backend, and itself under the model the client asked
// for; requests of two keys, alternating, each count under their own key. (The model call
// keeps the series it found for a route and key: these are the cases where it must not
// keep them.)
func TestMetrics_FallbackAndKeySeries(t *testing.T) {
	p := newUpstream(t, failWith(503, "overloaded"))
	s := newUpstream(t, okUpstream("fallback answer"))
	g := startGateway(t, `
backends:
  primary: {type: openai, base_url: "{{P}}", retries: {max: 0}}
  second: {type: openai, base_url: "{{S}}", retries: {max: 0}}
models:
  main: {backend: primary, fallbacks: [spare]}
  spare: {backend: second}
keys:
  alice: {key: sk-alice, models: ["*"]}
  bob: {key: sk-bob, models: ["*"]}
`, map[string]string{"P": p.v1(), "S": s.v1()})
	for _, key := range []string{"sk-alice", "sk-bob", "sk-alice", "sk-bob", "sk-alice"} {
		client := g.client(key)
		if _, err := client.Chat.Completions.New(context.Background(), userParams("main", "hi")); err != nil {
			t.Fatal(err)
		}
	}
	for _, tt := range []struct {
		name   string
		metric string
		labels map[string]string
		want   float64
	}{
		{"alice's prompt tokens, under the fallback", "gateway_tokens_total", map[string]string{"model": "spare", "backend": "second", "key": "alice", "type": "prompt"}, 3 * 5},
		{"bob's completion tokens, under the fallback", "gateway_tokens_total", map[string]string{"model": "spare", "backend": "second", "key": "bob", "type": "completion"}, 2 * 2},
		{"no tokens under the failed model", "gateway_tokens_total", map[string]string{"model": "main"}, 0},
		{"alice's requests, under the model asked for", "gateway_requests_total", map[string]string{"model": "main", "backend": "primary", "key": "alice", "code": "200"}, 3},
		{"bob's requests", "gateway_requests_total", map[string]string{"model": "main", "backend": "primary", "key": "bob", "code": "200"}, 2},
		{"failed attempts", "gateway_upstream_duration_seconds", map[string]string{"backend": "primary", "code": "503"}, 5},
		{"answered attempts", "gateway_upstream_duration_seconds", map[string]string{"backend": "second", "code": "200"}, 5},
	} {
		if got := g.metricValue(tt.metric, tt.labels); got != tt.want {
			t.Errorf("%s: %s%v = %v, want %v", tt.name, tt.metric, tt.labels, got, tt.want)
		}
	}
}
