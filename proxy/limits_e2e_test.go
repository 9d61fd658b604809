package proxy

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/openai/openai-go/v3"

	"github.com/agate-gateway/agate/limits"
	"github.com/agate-gateway/agate/limits/redistest"
	"github.com/agate-gateway/agate/tools"
)

// The tests of this file run twice: "memory" on one gateway, and "redis" on two gateway
// replicas (two full Servers, each with its own Redis client) sharing one real
// redis-server. Requests alternate between replicas[0] and replicas[1]; in memory mode
// both are the same gateway.

type stateMode struct {
	name  string
	redis bool
}

var stateModes = []stateMode{{name: "memory"}, {name: "redis", redis: true}}

// replicaSet is the gateways of one test and, in redis mode, their Redis.
type replicaSet struct {
	replicas [2]*gateway
	redis    *redistest.Server
}

// startReplicas serves yaml ("{{STATE}}" is replaced by the state section) on one gateway
// (memory) or two sharing a new redis-server (redis).
func startReplicas(t *testing.T, mode stateMode, yaml string, vars map[string]string) *replicaSet {
	t.Helper()
	rs := &replicaSet{}
	state := "state: {type: memory}"
	if mode.redis {
		rs.redis = redistest.Start(t)
		// A generous timeout: under -race on a loaded machine a round trip can pass 200ms,
		// and on_error allow would then admit unlimited and break the exact counts.
		state = fmt.Sprintf("state: {type: redis, url: %q, timeout: 2s}", rs.redis.URL())
	}
	if vars == nil {
		vars = map[string]string{}
	}
	vars["STATE"] = state
	rs.replicas[0] = startGateway(t, yaml, vars)
	rs.replicas[1] = rs.replicas[0]
	if mode.redis {
		rs.replicas[1] = startGateway(t, yaml, vars)
	}
	return rs
}

func chatBody(model, text string, stream bool) string {
	return fmt.Sprintf(`{"model":%q,"stream":%v,"messages":[{"role":"user","content":%q}]}`, model, stream, text)
}

// TestLimits_RequestsPerMinute: N requests are admitted in total across the replicas,
// with OpenAI's headers counting down; the next is refused on either replica with 429
// rate_limit_exceeded, Retry-After and the headers, and counted.
func TestLimits_RequestsPerMinute(t *testing.T) {
	for _, mode := range stateModes {
		t.Run(mode.name, func(t *testing.T) {
			rs := startReplicas(t, mode, `
backends: {offline: {type: mock}}
models: {demo: {backend: offline}}
keys:
  alice: {key: alice-key, models: ["*"], limits: {requests_per_minute: 4}}
{{STATE}}
`, nil)
			var remaining []string
			for i := range 4 {
				r := rs.replicas[i%2].chat("alice-key", chatBody("demo", "hi", false))
				if r.status != 200 {
					t.Fatalf("request %d: status %d: %s", i+1, r.status, r.body)
				}
				remaining = append(remaining, r.header.Get("x-ratelimit-remaining-requests"))
				if got := r.header.Get("x-ratelimit-limit-requests"); got != "4" {
					t.Errorf("x-ratelimit-limit-requests = %q, want 4", got)
				}
				if d, err := time.ParseDuration(r.header.Get("x-ratelimit-reset-requests")); err != nil || d <= 0 || d > time.Minute {
					t.Errorf("x-ratelimit-reset-requests = %q, want a duration within (0, 1m]", r.header.Get("x-ratelimit-reset-requests"))
				}
				if r.header.Get("x-ratelimit-limit-tokens") != "" {
					t.Error("token headers without a token limit")
				}
			}
			if diff := cmp.Diff([]string{"3", "2", "1", "0"}, remaining); diff != "" {
				t.Errorf("x-ratelimit-remaining-requests (-want +got):\n%s", diff)
			}
			for i, g := range rs.replicas {
				r := g.chat("alice-key", chatBody("demo", "hi", false))
				got := decodeError(t, r)
				want := errorView{Status: 429, Type: "requests", Code: "rate_limit_exceeded"}
				if diff := cmp.Diff(want, got, cmpIgnoreMessage); diff != "" {
					t.Errorf("replica %d: refusal (-want +got):\n%s", i, diff)
				}
				if !strings.Contains(got.Message, "requests per minute (limit 4)") {
					t.Errorf("message %q does not name the limit", got.Message)
				}
				if ra, err := strconv.Atoi(r.header.Get("Retry-After")); err != nil || ra < 1 || ra > 60 {
					t.Errorf("Retry-After = %q, want 1..60 seconds", r.header.Get("Retry-After"))
				}
				if r.header.Get("x-ratelimit-remaining-requests") != "0" {
					t.Errorf("429 x-ratelimit-remaining-requests = %q, want 0", r.header.Get("x-ratelimit-remaining-requests"))
				}
			}
			// The SDK sees OpenAI's error.
			client := rs.replicas[1].client("alice-key")
			_, err := client.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
				Model: "demo", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}})
			if e := sdkError(t, err); e.StatusCode != 429 || e.Code != "rate_limit_exceeded" {
				t.Errorf("SDK error = %d %q", e.StatusCode, e.Code)
			}
			rejected := 0.0
			for _, g := range uniqueGateways(rs) {
				rejected += g.metricValue("gateway_ratelimit_rejections_total", map[string]string{"key": "alice", "model": "demo", "limit": "requests"})
			}
			if rejected != 3 {
				t.Errorf("gateway_ratelimit_rejections_total = %v, want 3", rejected)
			}
		})
	}
}

var cmpIgnoreMessage = cmp.FilterPath(func(p cmp.Path) bool { return p.Last().String() == ".Message" }, cmp.Ignore())

func uniqueGateways(rs *replicaSet) []*gateway {
	if rs.replicas[0] == rs.replicas[1] {
		return rs.replicas[:1]
	}
	return rs.replicas[:]
}

// TestLimits_RequestsPerMinuteExactUnderLoad: a burst from many clients on both replicas
// at once admits exactly the limit.
func TestLimits_RequestsPerMinuteExactUnderLoad(t *testing.T) {
	for _, mode := range stateModes {
		t.Run(mode.name, func(t *testing.T) {
			rs := startReplicas(t, mode, `
backends: {offline: {type: mock}}
models: {demo: {backend: offline}}
keys:
  alice: {key: alice-key, models: ["*"], limits: {requests_per_minute: 13}}
{{STATE}}
`, nil)
			var ok, refused atomic.Int64
			var wg sync.WaitGroup
			for i := range 40 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					r := rs.replicas[i%2].chat("alice-key", chatBody("demo", "hi", i%3 == 0))
					switch r.status {
					case 200:
						ok.Add(1)
					case 429:
						refused.Add(1)
					default:
						t.Errorf("status %d: %s", r.status, r.body)
					}
				}()
			}
			wg.Wait()
			// A burst makes the client dial connections it then keeps idle without ever
			// sending a request on them; fasthttp's Shutdown waits for those.
			http.DefaultClient.CloseIdleConnections()
			if ok.Load() != 13 || refused.Load() != 27 {
				t.Errorf("admitted %d, refused %d of 40; want exactly 13 and 27", ok.Load(), refused.Load())
			}
		})
	}
}

// TestLimits_TokenBudgetAcrossReplicas: a token budget charged with the real usage by one
// replica refuses on the other with 429 insufficient_quota; every tool loop turn counts.
func TestLimits_TokenBudgetAcrossReplicas(t *testing.T) {
	for _, mode := range stateModes {
		t.Run(mode.name, func(t *testing.T) {
			rs := startReplicas(t, mode, `
backends: {offline: {type: mock}}
models: {demo: {backend: offline}}
keys:
  alice: {key: alice-key, models: ["*"], budget: {tokens: 10, period: 24h}}
{{STATE}}
`, nil)
			// The mock counts words: 5 prompt + 5 completion tokens.
			if r := rs.replicas[0].chat("alice-key", chatBody("demo", "one two three four five", false)); r.status != 200 {
				t.Fatalf("first request: %d %s", r.status, r.body)
			}
			if got := rs.replicas[0].metricValue("gateway_budget_remaining", map[string]string{"key": "alice", "unit": "tokens"}); got != 0 {
				t.Errorf("gateway_budget_remaining{unit=tokens} = %v, want 0", got)
			}
			r := rs.replicas[1].chat("alice-key", chatBody("demo", "hi", true))
			got := decodeError(t, r)
			want := errorView{Status: 429, Type: "insufficient_quota", Code: "insufficient_quota"}
			if diff := cmp.Diff(want, got, cmpIgnoreMessage); diff != "" {
				t.Errorf("refusal on the other replica (-want +got):\n%s", diff)
			}
			if !strings.Contains(got.Message, "tokens budget (10 tokens per 24h0m0s)") {
				t.Errorf("message %q does not name the budget", got.Message)
			}
			if ra, err := strconv.Atoi(r.header.Get("Retry-After")); err != nil || ra < 23*3600 || ra > 24*3600 {
				t.Errorf("Retry-After = %q, want the rest of the 24h period", r.header.Get("Retry-After"))
			}
		})
	}
}

// TestLimits_ToolLoopTurnsCharged: a request running the tool loop is charged every
// model turn's usage: the budget drops by exactly the tokens gateway_tokens_total counted.
func TestLimits_ToolLoopTurnsCharged(t *testing.T) {
	for _, mode := range stateModes {
		t.Run(mode.name, func(t *testing.T) {
			hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "sunny") }))
			defer hook.Close()
			yaml := `
backends: {offline: {type: mock}}
models: {demo: {backend: offline}}
keys:
  alice: {key: alice-key, models: ["*"], tools: [weather], budget: {tokens: 1000}}
tools:
  weather: {type: http, url: "{{URL}}", read_only: true}
{{STATE}}
`
			state := "state: {type: memory}"
			if mode.redis {
				state = fmt.Sprintf("state: {type: redis, url: %q}", redistest.Start(t).URL())
			}
			cfg := parseConfig(t, yaml, map[string]string{"URL": hook.URL, "STATE": state})
			reg, err := tools.New(context.Background(), ToolSources(cfg.Tools), ToolCache(cfg.Cache), nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer reg.Close()
			g := startGatewayConfig(t, cfg, gatewayOptions{tools: reg})
			if r := g.chat("alice-key", chatBody("demo", "ask weather please", false)); r.status != 200 {
				t.Fatalf("%d %s", r.status, r.body)
			}
			counted := g.metricValue("gateway_tokens_total", map[string]string{"key": "alice", "type": "prompt"}) +
				g.metricValue("gateway_tokens_total", map[string]string{"key": "alice", "type": "completion"})
			if g.metricValue("gateway_loop_iterations", nil) != 1 || counted < 8 {
				t.Fatalf("the tool loop did not run two turns (tokens %v)", counted)
			}
			left := g.metricValue("gateway_budget_remaining", map[string]string{"key": "alice", "unit": "tokens"})
			if left != 1000-counted {
				t.Errorf("budget left %v, want 1000 - %v tokens of both turns", left, counted)
			}
		})
	}
}

// TestLimits_USDBudget: the cost is priced by the model; once spent, 429 insufficient_quota.
// A usd budget key cannot use "<backend>/<model>" names, which have no price.
func TestLimits_USDBudget(t *testing.T) {
	for _, mode := range stateModes {
		t.Run(mode.name, func(t *testing.T) {
			rs := startReplicas(t, mode, `
backends: {offline: {type: mock}}
models:
  demo: {backend: offline, price: {input: 100000, output: 200000}}
keys:
  alice: {key: alice-key, models: ["*"], budget: {usd: 1}}
{{STATE}}
`, nil)
			// 2 prompt tokens at $0.10 and 2 completion tokens at $0.20: $0.60.
			if r := rs.replicas[0].chat("alice-key", chatBody("demo", "hello there", false)); r.status != 200 {
				t.Fatalf("%d %s", r.status, r.body)
			}
			if got := rs.replicas[0].metricValue("gateway_budget_remaining", map[string]string{"key": "alice", "unit": "usd"}); got < 0.3999 || got > 0.4001 {
				t.Errorf("gateway_budget_remaining{unit=usd} = %v, want 0.40", got)
			}
			if r := rs.replicas[1].chat("alice-key", chatBody("demo", "hello there", false)); r.status != 200 {
				t.Fatalf("second request (budget not yet spent): %d %s", r.status, r.body)
			}
			got := decodeError(t, rs.replicas[0].chat("alice-key", chatBody("demo", "hi", false)))
			if got.Status != 429 || got.Code != "insufficient_quota" || !strings.Contains(got.Message, "usd budget (1 USD per 720h0m0s)") {
				t.Errorf("after $1.20 of a $1 budget: %+v", got)
			}
			got = decodeError(t, rs.replicas[1].chat("alice-key", chatBody("offline/x", "hi", false)))
			if got.Status != 403 || !strings.Contains(got.Message, "has no price") {
				t.Errorf("direct route with a usd budget: %+v", got)
			}
		})
	}
}

// holdingUpstream is an OpenAI upstream whose streams for prompts containing "hold" send
// a chunk every few milliseconds (so the gateway notices a client that left when it
// forwards the next) until released or the gateway hangs up; other requests get an
// answer at once.
type holdingUpstream struct {
	*fakeUpstream
	held    atomic.Int64
	release chan struct{}
}

func newHoldingUpstream(t *testing.T) *holdingUpstream {
	h := &holdingUpstream{release: make(chan struct{})}
	h.fakeUpstream = newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		body, _ := r.Context().Value(bodyKey{}).([]byte)
		if !strings.Contains(string(body), "hold") {
			okUpstream("ok")(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(200)
		io.WriteString(w, "data: "+chunkJSON(`{"role":"assistant","content":"wait"}`, "null")+"\n\n")
		w.(http.Flusher).Flush()
		h.held.Add(1)
		defer h.held.Add(-1)
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-h.release:
				io.WriteString(w, "data: "+chunkJSON(`{}`, `"stop"`)+"\n\ndata: "+usageChunk+"\n\ndata: [DONE]\n\n")
				return
			case <-r.Context().Done():
				return
			case <-tick.C:
				io.WriteString(w, "data: "+chunkJSON(`{"content":"."}`, "null")+"\n\n")
				w.(http.Flusher).Flush()
			}
		}
	})
	return h
}

// TestLimits_ConcurrentStreams: streams hold their key's and model's slots across
// replicas until they end or the client leaves.
func TestLimits_ConcurrentStreams(t *testing.T) {
	for _, mode := range stateModes {
		t.Run(mode.name, func(t *testing.T) {
			up := newHoldingUpstream(t)
			rs := startReplicas(t, mode, `
backends: {up: {type: openai, base_url: "{{URL}}"}}
models: {gpt: {backend: up, limits: {concurrent: 3}}}
keys:
  alice: {key: alice-key, models: ["*"], limits: {concurrent: 2}}
  bob: {key: bob-key, models: ["*"]}
{{STATE}}
`, map[string]string{"URL": up.v1()})
			ctx1, leave1 := context.WithCancel(context.Background())
			defer leave1()
			type streamResult struct{ err error }
			done := make(chan streamResult, 3)
			open := func(ctx context.Context, g *gateway, key string) {
				client := g.client(key)
				s := client.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{
					Model: "gpt", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hold on")}})
				for s.Next() {
				}
				done <- streamResult{s.Err()}
			}
			go open(ctx1, rs.replicas[0], "alice-key")
			go open(context.Background(), rs.replicas[1], "alice-key")
			eventually(t, "two held streams", func() bool { return up.held.Load() == 2 })

			// alice is at her cap on both replicas; bob takes the model's last slot.
			for i, g := range rs.replicas {
				got := decodeError(t, g.chat("alice-key", chatBody("gpt", "quick", false)))
				if got.Status != 429 || got.Code != "rate_limit_exceeded" || !strings.Contains(got.Message, "concurrent requests (limit 2)") {
					t.Errorf("replica %d: third alice request: %+v", i, got)
				}
			}
			go open(context.Background(), rs.replicas[1], "bob-key")
			eventually(t, "three held streams", func() bool { return up.held.Load() == 3 })
			got := decodeError(t, rs.replicas[0].chat("bob-key", chatBody("gpt", "quick", false)))
			if got.Status != 429 || !strings.Contains(got.Message, "model gpt on concurrent requests for all keys (limit 3)") {
				t.Errorf("fourth stream on the model: %+v", got)
			}

			// The client of one alice stream leaves: its slot is released.
			leave1()
			eventually(t, "the slot of the stream the client left", func() bool {
				return rs.replicas[1].chat("alice-key", chatBody("gpt", "quick", false)).status == 200
			})
			close(up.release)
			for range 3 {
				<-done
			}
			for i := range 2 {
				if r := rs.replicas[i].chat("alice-key", chatBody("gpt", "quick", false)); r.status != 200 {
					t.Errorf("after every stream ended: %d %s", r.status, r.body)
				}
			}
		})
	}
}

// TestLimits_ModelLimitAllKeys: a model's requests_per_minute counts every key.
func TestLimits_ModelLimitAllKeys(t *testing.T) {
	for _, mode := range stateModes {
		t.Run(mode.name, func(t *testing.T) {
			rs := startReplicas(t, mode, `
backends: {offline: {type: mock}}
models: {demo: {backend: offline, limits: {requests_per_minute: 3}}, other: {backend: offline}}
keys:
  alice: {key: alice-key, models: ["*"]}
  bob: {key: bob-key, models: ["*"]}
{{STATE}}
`, nil)
			var codes []int
			for i, key := range []string{"alice-key", "bob-key", "alice-key", "bob-key", "alice-key"} {
				codes = append(codes, rs.replicas[i%2].chat(key, chatBody("demo", "hi", false)).status)
			}
			codes = append(codes, rs.replicas[0].chat("bob-key", chatBody("other", "hi", false)).status)
			if diff := cmp.Diff([]int{200, 200, 200, 429, 429, 200}, codes); diff != "" {
				t.Errorf("statuses (-want +got):\n%s", diff)
			}
			var n float64
			for _, g := range uniqueGateways(rs) {
				n += g.metricValue("gateway_ratelimit_rejections_total", map[string]string{"model": "demo", "limit": "model_requests"})
			}
			if n != 2 {
				t.Errorf("model_requests rejections = %v, want 2", n)
			}
		})
	}
}

// TestLimits_ReloadKeepsUsage: a reload changes limits at once and keeps what was counted.
func TestLimits_ReloadKeepsUsage(t *testing.T) {
	for _, mode := range stateModes {
		t.Run(mode.name, func(t *testing.T) {
			yaml := `
backends: {offline: {type: mock}}
models: {demo: {backend: offline}}
keys:
  alice: {key: alice-key, models: ["*"], limits: {requests_per_minute: {{RPM}}}}
{{STATE}}
`
			rs := startReplicas(t, mode, yaml, map[string]string{"RPM": "3"})
			apply := func(rpm string) {
				vars := map[string]string{"RPM": rpm, "STATE": "state: {type: memory}"}
				if mode.redis {
					vars["STATE"] = fmt.Sprintf("state: {type: redis, url: %q, timeout: 2s}", rs.redis.URL())
				}
				for _, g := range uniqueGateways(rs) {
					if err := g.srv.Apply(parseConfig(t, yaml, vars)); err != nil {
						t.Fatal(err)
					}
				}
			}
			var codes []int
			send := func() {
				codes = append(codes, rs.replicas[len(codes)%2].chat("alice-key", chatBody("demo", "hi", false)).status)
			}
			send()
			send()
			apply("4")
			send()
			send()
			send()
			apply("1")
			send()
			if diff := cmp.Diff([]int{200, 200, 200, 200, 429, 429}, codes); diff != "" {
				t.Errorf("statuses across reloads 3 -> 4 -> 1 (-want +got):\n%s", diff)
			}
		})
	}
}

// TestLimits_ToolCacheSharedAcrossReplicas: a tool result cached by one replica is a
// hit on the other (Redis second level), and the tool ran once.
func TestLimits_ToolCacheSharedAcrossReplicas(t *testing.T) {
	srv := redistest.Start(t)
	var runs atomic.Int64
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		runs.Add(1)
		io.WriteString(w, "sunny")
	}))
	defer hook.Close()
	yaml := `
backends: {offline: {type: mock}}
models: {demo: {backend: offline}}
keys:
  alice: {key: alice-key, models: ["*"], tools: [weather]}
tools:
  weather: {type: http, url: "{{URL}}", read_only: true}
state: {type: redis, url: "{{REDIS}}"}
`
	var gws []*gateway
	var hits float64
	var regs []*prometheusRegistryCounter
	for range 2 {
		cfg := parseConfig(t, yaml, map[string]string{"URL": hook.URL, "REDIS": srv.URL()})
		lim, err := limits.Open(LimiterOptions(cfg.State), nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { lim.Close() })
		obs := &prometheusRegistryCounter{}
		regs = append(regs, obs)
		cache := limits.SharedToolCache(lim, ToolCache(cfg.Cache), nil, nil)
		reg, err := tools.New(context.Background(), ToolSources(cfg.Tools), ToolCache(cfg.Cache), obs, nil, tools.WithCache(cache))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { reg.Close() })
		gws = append(gws, startGatewayConfig(t, cfg, gatewayOptions{tools: reg, limiter: lim}))
	}
	for _, g := range gws {
		client := g.client("alice-key")
		resp, err := client.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
			Model: "demo", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("ask weather")}})
		if err != nil {
			t.Fatal(err)
		}
		if got := resp.Choices[0].Message.Content; got != "Tool results: sunny" {
			t.Errorf("content = %q", got)
		}
	}
	for _, r := range regs {
		hits += float64(r.hits.Load())
	}
	if runs.Load() != 1 || hits != 1 {
		t.Errorf("the tool ran %d times and the caches hit %v times over two replicas; want 1 and 1", runs.Load(), hits)
	}
}

// prometheusRegistryCounter is a tools.Observer counting cache hits.
type prometheusRegistryCounter struct{ hits atomic.Int64 }

func (p *prometheusRegistryCounter) ToolCall(string, string, time.Duration) {}
func (p *prometheusRegistryCounter) CacheLookup(hit bool) {
	if hit {
		p.hits.Add(1)
	}
}
func (p *prometheusRegistryCounter) CacheEviction() {}

// TestLimits_RedisDown: with Redis killed or frozen, no request waits longer than
// state.timeout for its limits; on_error allow serves them (counted, logged, /readyz
// degraded) and deny refuses them with 503 (/readyz 503); after a restart limits hold
// again by themselves.
func TestLimits_RedisDown(t *testing.T) {
	tests := []struct {
		name       string
		onError    string
		wantStatus int
		wantReady  int
		wantState  string
	}{
		{name: "allow", onError: "allow", wantStatus: 200, wantReady: 200, wantState: "degraded"},
		{name: "deny", onError: "deny", wantStatus: 503, wantReady: 503, wantState: "not ready"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := redistest.Start(t)
			g := startGateway(t, `
backends: {offline: {type: mock}}
models: {demo: {backend: offline}}
keys:
  alice: {key: alice-key, models: ["*"], limits: {requests_per_minute: 2, concurrent: 5}}
state: {type: redis, url: "{{REDIS}}", timeout: 100ms, on_error: {{ON_ERROR}}}
`, map[string]string{"REDIS": srv.URL(), "ON_ERROR": tt.onError})
			if r := g.chat("alice-key", chatBody("demo", "hi", false)); r.status != 200 {
				t.Fatalf("%d %s", r.status, r.body)
			}
			for _, outage := range []string{"frozen", "killed"} {
				if outage == "frozen" {
					srv.Stop()
				} else {
					srv.Continue()
					srv.Kill()
				}
				for _, stream := range []bool{false, true} {
					start := time.Now()
					r := g.chat("alice-key", chatBody("demo", "hi", stream))
					if took := time.Since(start); took > 2*time.Second {
						t.Errorf("%s, stream %v: the request took %v with state.timeout 100ms", outage, stream, took)
					}
					if r.status != tt.wantStatus {
						t.Errorf("%s, stream %v: status %d, want %d: %s", outage, stream, r.status, tt.wantStatus, r.body)
					}
				}
				ready := g.do("GET", "/readyz", "", nil)
				if ready.status != tt.wantReady || !strings.Contains(string(ready.body), `"status":"`+tt.wantState+`"`) {
					t.Errorf("%s: /readyz = %d %s", outage, ready.status, ready.body)
				}
				if strings.Contains(string(ready.body), "redis://") {
					t.Errorf("/readyz quotes the state URL: %s", ready.body)
				}
			}
			if n := g.metricValue("gateway_state_errors_total", map[string]string{"op": "admit"}); n < 4 {
				t.Errorf("gateway_state_errors_total{op=admit} = %v, want at least 4", n)
			}
			if !strings.Contains(g.logText(), "state store error") {
				t.Error("no state store error logged")
			}
			srv.Restart()
			eventually(t, "readiness after the restart", func() bool {
				return g.do("GET", "/readyz", "", nil).status == 200 &&
					strings.Contains(string(g.do("GET", "/readyz", "", nil).body), `"ready"`)
			})
			var codes []int
			for range 3 {
				codes = append(codes, g.chat("alice-key", chatBody("demo", "hi", false)).status)
			}
			// Redis restarted empty: two requests per minute again, then 429.
			if diff := cmp.Diff([]int{200, 200, 429}, codes); diff != "" {
				t.Errorf("after the restart (-want +got):\n%s", diff)
			}
		})
	}
}
