package proxy

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/tidwall/gjson"
)

// The tests of this file lock what every upstream call is admitted against: count_tokens
// passes its key's limits, a fallback its own model's limits, and concurrent requests
// reserve their estimate so that a budget is not exceeded in proportion to concurrency.

// countTokensBody is a count_tokens request for model; "hold" in text makes the fake
// upstream wait.
func countTokensBody(model, text string) string {
	return fmt.Sprintf(`{"model":%q,"messages":[{"role":"user","content":%q}]}`, model, text)
}

// TestLimits_CountTokensAdmitted: POST /v1/messages/count_tokens is admitted like any
// request: it counts against the key's requests per minute, holds a concurrency slot
// while the upstream counts, is refused over a budget, and is charged no tokens. Every
// refusal is Anthropic's error shape with status 429, and never reaches the upstream.
func TestLimits_CountTokensAdmitted(t *testing.T) {
	t.Parallel() // nothing shared, no clock or environment of the process (#54)
	for _, mode := range stateModes {
		t.Run(mode.name, func(t *testing.T) {
			var calls atomic.Int64
			held, release := make(chan struct{}, 1), make(chan struct{})
			up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
				calls.Add(1)
				if strings.Contains(string(r.Context().Value(bodyKey{}).([]byte)), "hold") {
					held <- struct{}{}
					<-release
				}
				replayJSON(200, []byte(`{"input_tokens":7}`))(w, r)
			})
			rs := startReplicas(t, mode, `
backends:
  claude: {type: anthropic, base_url: "{{URL}}", api_key: upstream-secret, retries: {max: 0}}
  offline: {type: mock}
models: {m-claude: {backend: claude, upstream_model: claude-x}, demo: {backend: offline}}
keys:
  rpm: {key: rpm-key, models: ["*"], limits: {requests_per_minute: 3}}
  conc: {key: conc-key, models: ["*"], limits: {concurrent: 1}}
  budget: {key: budget-key, models: ["*"], budget: {tokens: 10}}
{{STATE}}
`, map[string]string{"URL": up.URL})
			count := func(g *gateway, key, text string) httpResult {
				return g.do("POST", "/v1/messages/count_tokens", "", []byte(countTokensBody("m-claude", text)), "x-api-key", key)
			}
			// refused checks an Anthropic-shaped 429 of error type typ naming what.
			refused := func(what string, r httpResult, typ, mentions string) {
				t.Helper()
				got := []string{fmt.Sprint(r.status), gjson.GetBytes(r.body, "type").Str, gjson.GetBytes(r.body, "error.type").Str}
				if diff := cmp.Diff([]string{"429", "error", typ}, got); diff != "" {
					t.Errorf("%s: status, type, error.type (-want +got):\n%s\n%s", what, diff, r.body)
				}
				if !strings.Contains(gjson.GetBytes(r.body, "error.message").Str, mentions) {
					t.Errorf("%s: message %q does not mention %q", what, gjson.GetBytes(r.body, "error.message").Str, mentions)
				}
				if r.header.Get("Retry-After") == "" {
					t.Errorf("%s: no Retry-After", what)
				}
			}

			var statuses []int
			for i := range 5 {
				statuses = append(statuses, count(rs.replicas[i%2], "rpm-key", "hi").status)
			}
			if diff := cmp.Diff([]int{200, 200, 200, 429, 429}, statuses); diff != "" {
				t.Errorf("count_tokens statuses of a key with requests_per_minute 3 (-want +got):\n%s", diff)
			}
			refused("over requests per minute", count(rs.replicas[0], "rpm-key", "hi"), "rate_limit_error", "requests per minute (limit 3)")
			if got := calls.Load(); got != 3 {
				t.Errorf("upstream count_tokens calls = %d, want 3 (refusals never reach it)", got)
			}

			// A count in flight holds the key's one slot.
			done := make(chan httpResult)
			go func() { done <- count(rs.replicas[0], "conc-key", "hold on") }()
			<-held
			refused("over concurrency", count(rs.replicas[1], "conc-key", "hi"), "rate_limit_error", "concurrent requests (limit 1)")
			close(release)
			if r := <-done; r.status != 200 {
				t.Fatalf("the held count: %d %s", r.status, r.body)
			}
			if r := count(rs.replicas[1], "conc-key", "hi"); r.status != 200 {
				t.Errorf("after the held count ended (slot released): %d %s", r.status, r.body)
			}

			// Counting charges no tokens: the budget is whole after three counts.
			for i := range 3 {
				if r := count(rs.replicas[i%2], "budget-key", "one two three"); r.status != 200 {
					t.Fatalf("count %d: %d %s", i, r.status, r.body)
				}
			}
			if got := rs.replicas[0].metricValue("gateway_budget_remaining", map[string]string{"key": "budget", "unit": "tokens"}); got != 10 {
				t.Errorf("budget left after three counts = %v, want 10 (nothing charged)", got)
			}
			// Spent (the mock charges 5 + 5 tokens), the budget refuses counts too.
			if r := rs.replicas[0].chat("budget-key", chatBody("demo", "one two three four five", false)); r.status != 200 {
				t.Fatalf("chat: %d %s", r.status, r.body)
			}
			refused("over the budget", count(rs.replicas[1], "budget-key", "hi"), "rate_limit_error", "tokens budget")
		})
	}
}

// TestLimits_FallbackOwnLimits: a model reached as a fallback is admitted against its own
// limits when the gateway decides to call it; over them it is skipped like a fallback the
// key may not use (counted with reason limited), and the next fallback is tried. Its slot
// is released when the request ends.
func TestLimits_FallbackOwnLimits(t *testing.T) {
	t.Parallel() // its own gateway, fakes and servers (#54)
	tests := []struct {
		name     string
		limits   string // the expensive model's limits
		next     bool   // cheap-b follows expensive among cheap's fallbacks
		want     []string
		statuses []int
		skipped  float64
	}{
		{name: "requests per minute", limits: "{requests_per_minute: 1}",
			want: []string{"expensive"}, statuses: []int{200, 503, 503, 503, 503, 503}, skipped: 5},
		{name: "next fallback when over", limits: "{requests_per_minute: 2}", next: true,
			want:     []string{"expensive", "expensive", "cheap-b", "cheap-b", "cheap-b", "cheap-b"},
			statuses: []int{200, 200, 200, 200, 200, 200}, skipped: 4},
		{name: "tokens per minute charged what it served", limits: "{tokens_per_minute: 10}", // 7 tokens an answer
			want: []string{"expensive", "expensive"}, statuses: []int{200, 200, 503, 503, 503, 503}, skipped: 4},
		{name: "concurrency slot released at the end", limits: "{concurrent: 1}",
			want:     []string{"expensive", "expensive", "expensive", "expensive", "expensive", "expensive"},
			statuses: []int{200, 200, 200, 200, 200, 200}},
	}
	for _, mode := range stateModes {
		for _, tt := range tests {
			t.Run(mode.name+"/"+tt.name, func(t *testing.T) {
				var j journal
				p := newUpstream(t, failWith(503, "overloaded"))
				s := newUpstream(t, j.note("expensive", okUpstream("expensive answer")))
				b := newUpstream(t, j.note("cheap-b", okUpstream("cheap answer")))
				fallbacks := "[expensive]"
				if tt.next {
					fallbacks = "[expensive, cheap-b]"
				}
				rs := startReplicas(t, mode, `
backends:
  primary: {type: openai, base_url: "{{P}}", retries: {max: 0}}
  second: {type: openai, base_url: "{{S}}", retries: {max: 0}}
  third: {type: openai, base_url: "{{B}}", retries: {max: 0}}
models:
  cheap: {backend: primary, fallbacks: {{FB}}}
  expensive: {backend: second, limits: {{L}}}
  cheap-b: {backend: third}
keys:
  alice: {key: alice-key, models: ["*"]}
{{STATE}}
`, map[string]string{"P": p.v1(), "S": s.v1(), "B": b.v1(), "FB": fallbacks, "L": tt.limits})
				var statuses []int
				for i := range 6 {
					statuses = append(statuses, rs.replicas[i%2].chat("alice-key", chatBody("cheap", "hi", i%3 == 1)).status)
				}
				if diff := cmp.Diff(tt.statuses, statuses); diff != "" {
					t.Errorf("statuses (-want +got):\n%s", diff)
				}
				if diff := cmp.Diff(tt.want, j.get()); diff != "" {
					t.Errorf("fallbacks called (-want +got):\n%s", diff)
				}
				var skipped float64
				for _, g := range uniqueGateways(rs) {
					skipped += g.metricValue("gateway_fallbacks_skipped_total", map[string]string{"model": "cheap", "fallback": "expensive", "reason": "limited"})
				}
				if skipped != tt.skipped {
					t.Errorf("gateway_fallbacks_skipped_total{reason=limited} = %v, want %v", skipped, tt.skipped)
				}
			})
		}
	}
}

// TestLimits_ConcurrentRequestsBudgetOvershoot: 20 requests of 700 tokens (200 prompt, at
// most 500 completion: max_tokens) sent at once against a 1,000-token budget are charged
// at most the budget plus one request: each reserves its estimate when admitted, so the
// others see it. On main every one of them was admitted (14,000 tokens charged).
func TestLimits_ConcurrentRequestsBudgetOvershoot(t *testing.T) {
	t.Parallel() // nothing shared, no clock or environment of the process (#54)
	const n, each, budget = 20, 700, 1000
	prompt := strings.Repeat("word ", 160) // some 200 tokens by the estimate
	for _, mode := range stateModes {
		t.Run(mode.name, func(t *testing.T) {
			var held atomic.Int64
			release := make(chan struct{})
			up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
				held.Add(1)
				<-release
				replayJSON(200, []byte(`{"id":"chatcmpl-up","object":"chat.completion","created":1766084435,"model":"up",`+
					`"choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],`+
					`"usage":{"prompt_tokens":200,"completion_tokens":500,"total_tokens":700}}`))(w, r)
			})
			rs := startReplicas(t, mode, `
backends: {up: {type: openai, base_url: "{{URL}}", retries: {max: 0}}}
models: {gpt: {backend: up}}
keys:
  alice: {key: alice-key, models: ["*"], budget: {tokens: 1000}}
{{STATE}}
`, map[string]string{"URL": up.v1()})
			body := fmt.Sprintf(`{"model":"gpt","max_tokens":500,"messages":[{"role":"user","content":%q}]}`, prompt)
			var wg sync.WaitGroup
			var refused atomic.Int64
			statuses := make([]int, n)
			for i := range n {
				wg.Add(1)
				go func() {
					defer wg.Done()
					statuses[i] = rs.replicas[i%2].chat("alice-key", body).status
					if statuses[i] == 429 {
						refused.Add(1)
					}
				}()
			}
			// Every request is admitted (and waits upstream) or refused before any ends.
			eventually(t, "every request admitted or refused", func() bool { return held.Load()+refused.Load() == n })
			close(release)
			wg.Wait()
			ok := 0
			for _, s := range statuses {
				if s == 200 {
					ok++
				}
			}
			var counted float64
			for _, g := range uniqueGateways(rs) {
				counted += g.metricValue("gateway_tokens_total", map[string]string{"key": "alice", "type": "prompt"}) +
					g.metricValue("gateway_tokens_total", map[string]string{"key": "alice", "type": "completion"})
			}
			t.Logf("%d requests of %d tokens at once against a %d-token budget: %d admitted, %v tokens charged", n, each, budget, ok, counted)
			if counted != float64(ok*each) {
				t.Errorf("tokens counted %v, want %d for %d answered requests", counted, ok*each, ok)
			}
			if counted > budget+each {
				t.Errorf("%v tokens charged against a %d-token budget, want at most the budget plus one request (%d)", counted, budget, budget+each)
			}
			if ok == 0 {
				t.Error("no request was admitted")
			}
		})
	}
}

// TestLimits_FallbackHoldsItsSlot: a request served by a fallback holds that model's
// concurrency slot while it runs, so another request is not sent there meanwhile.
func TestLimits_FallbackHoldsItsSlot(t *testing.T) {
	t.Parallel() // nothing shared, no clock or environment of the process (#54)
	for _, mode := range stateModes {
		t.Run(mode.name, func(t *testing.T) {
			p := newUpstream(t, failWith(503, "overloaded"))
			held, release := make(chan struct{}, 1), make(chan struct{})
			var calls atomic.Int64
			s := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
				calls.Add(1)
				if strings.Contains(string(r.Context().Value(bodyKey{}).([]byte)), "hold") {
					held <- struct{}{}
					<-release
				}
				okUpstream("expensive answer")(w, r)
			})
			rs := startReplicas(t, mode, `
backends:
  primary: {type: openai, base_url: "{{P}}", retries: {max: 0}}
  second: {type: openai, base_url: "{{S}}", retries: {max: 0}}
models:
  cheap: {backend: primary, fallbacks: [expensive]}
  expensive: {backend: second, limits: {concurrent: 1}}
keys:
  alice: {key: alice-key, models: ["*"]}
{{STATE}}
`, map[string]string{"P": p.v1(), "S": s.v1()})
			done := make(chan httpResult)
			go func() { done <- rs.replicas[0].chat("alice-key", chatBody("cheap", "hold on", false)) }()
			<-held
			if r := rs.replicas[1].chat("alice-key", chatBody("cheap", "quick", false)); r.status != 503 {
				t.Errorf("while the fallback's one slot is held: %d %s, want 503 (fallback skipped)", r.status, r.body)
			}
			close(release)
			if r := <-done; r.status != 200 {
				t.Fatalf("the held request: %d %s", r.status, r.body)
			}
			if r := rs.replicas[1].chat("alice-key", chatBody("cheap", "quick", false)); r.status != 200 {
				t.Errorf("once the slot is released: %d %s", r.status, r.body)
			}
			if got := calls.Load(); got != 2 {
				t.Errorf("calls to the fallback = %d, want 2", got)
			}
		})
	}
}
