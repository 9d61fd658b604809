package proxy_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/openai/openai-go/v3"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/tidwall/gjson"

	"github.com/agate-gateway/agate/internal/gatewaytest"
	"github.com/agate-gateway/agate/internal/logjson"
	"github.com/agate-gateway/agate/limits/redistest"
	"github.com/agate-gateway/agate/proxy"
)

// cachingAnthropic is a fake Anthropic deployment with a prompt cache of its own, as each
// API key or region of the real service has: it answers the Messages API (its streamed
// events shaped as the recorded stream of
// testdata/fixtures/anthropic/stream/web-search-cache-read-create.mirascope.sse, whose
// message_start usage carries cache_creation_input_tokens, cache_read_input_tokens and
// cache_creation; a request without stream gets the recorded body shape of
// testdata/fixtures/anthropic/json/text.mirascope.json) and reports as cache_read_input_tokens the longest prefix of the prompt
// (system, tools, then whole messages) that an earlier request to this same deployment
// sent, the rest as written to the cache. A token is four bytes of the request's JSON.
type cachingAnthropic struct {
	name string
	srv  *httptest.Server
	mu   sync.Mutex
	seen map[[32]byte]bool
	// requests counts the requests it answered.
	requests atomic.Int64
}

func newCachingAnthropic(t *testing.T, name string) *cachingAnthropic {
	f := &cachingAnthropic{name: name, seen: map[[32]byte]bool{}}
	f.srv = httptest.NewServer(f)
	t.Cleanup(f.srv.Close)
	return f
}

func (f *cachingAnthropic) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	f.requests.Add(1)
	doc := gjson.ParseBytes(body)
	// The prompt's prefixes: system and tools, then each message added.
	h := sha256.New()
	h.Write([]byte(doc.Get("system").Raw))
	h.Write([]byte(doc.Get("tools").Raw))
	size := len(doc.Get("system").Raw) + len(doc.Get("tools").Raw)
	var prefixes [][32]byte
	var sizes []int
	add := func() {
		var k [32]byte
		copy(k[:], h.Sum(nil))
		prefixes, sizes = append(prefixes, k), append(sizes, size)
	}
	add()
	for _, m := range doc.Get("messages").Array() {
		h.Write([]byte(m.Raw))
		size += len(m.Raw)
		add()
	}
	f.mu.Lock()
	cached := 0
	for i := len(prefixes) - 1; i >= 0; i-- {
		if f.seen[prefixes[i]] {
			cached = sizes[i] / 4
			break
		}
	}
	for _, p := range prefixes {
		f.seen[p] = true
	}
	f.mu.Unlock()
	total := size / 4
	usage := fmt.Sprintf(`{"input_tokens":3,"cache_creation_input_tokens":%d,"cache_read_input_tokens":%d,"cache_creation":{"ephemeral_5m_input_tokens":%d,"ephemeral_1h_input_tokens":0},"output_tokens":1,"service_tier":"standard"}`,
		total-cached, cached, total-cached)
	if !doc.Get("stream").Bool() { // the body of testdata/fixtures/anthropic/json/text.mirascope.json
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"model":"claude-sonnet-4-20250514","id":"msg_01%s","type":"message","role":"assistant","content":[{"type":"text","text":"answer from %s"}],"stop_reason":"end_turn","stop_sequence":null,"usage":%s}`,
			f.name, f.name, strings.Replace(usage, `"output_tokens":1`, `"output_tokens":5`, 1))
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	ev := func(typ, data string) { fmt.Fprintf(w, "event: %s\ndata: %s\n\n", typ, data) }
	ev("message_start", `{"type":"message_start","message":{"model":"claude-sonnet-4-20250514","id":"msg_01`+f.name+`","type":"message","role":"assistant","content":[],"stop_reason":null,"stop_sequence":null,"usage":`+usage+`}}`)
	ev("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`)
	ev("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"answer from `+f.name+`"}}`)
	ev("content_block_stop", `{"type":"content_block_stop","index":0}`)
	ev("message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":5}}`)
	ev("message_stop", `{"type":"message_stop"}`)
}

// poolYAML is a gateway over deployments named d0, d1... (backends of type anthropic at
// urls), as model "pool" with the given balance and affinity; backends and models are
// more lines of those sections (the pool's own lines may follow in models).
func poolYAML(urls []string, balance, affinity, backends, models string) string {
	var y strings.Builder
	y.WriteString("backends:\n")
	for i, u := range urls {
		fmt.Fprintf(&y, "  d%d: {type: anthropic, base_url: %q, api_key: upstream-secret, retries: {max: 0}}\n", i, u)
	}
	y.WriteString(backends)
	y.WriteString("models:\n  pool:\n    deployments:\n")
	for i := range urls {
		fmt.Fprintf(&y, "      - {backend: d%d, upstream_model: claude-sonnet-4-5}\n", i)
	}
	fmt.Fprintf(&y, "    balance: %s\n    affinity: %s\n", balance, affinity)
	y.WriteString(models)
	return y.String()
}

// conversationParams is the next turn of conversation n: a system prompt and a tool
// shared by all, the conversation's own first question with its ticket's log (some 5 KB),
// then the answers and follow-ups so far.
func conversationParams(n int, answers []string) anthropic.MessageNewParams {
	system := strings.Repeat("You are a careful assistant for the operations team. ", 8)
	document := strings.Repeat(fmt.Sprintf("Line of ticket %d's log: the service restarted after a timeout. ", 1000+n), 80)
	tool := anthropic.ToolUnionParam{OfTool: &anthropic.ToolParam{Name: "lookup", Description: anthropic.String("Look a ticket up."),
		InputSchema: anthropic.ToolInputSchemaParam{Properties: map[string]any{"id": map[string]any{"type": "string"}}}}}
	msgs := []anthropic.MessageParam{userText(fmt.Sprintf("Conversation %d: summarise ticket %d in detail, please.\n%s", n, 1000+n, document))}
	for i, a := range answers {
		msgs = append(msgs, anthropic.NewAssistantMessage(anthropic.NewTextBlock(a)), userText(fmt.Sprintf("Follow-up %d of conversation %d.", i+1, n)))
	}
	return anthropic.MessageNewParams{Model: "pool", MaxTokens: 256, System: []anthropic.TextBlockParam{{Text: system}},
		Tools: []anthropic.ToolUnionParam{tool}, Messages: msgs}
}

// TestDeployments_PromptCacheHitRate sends five four-turn conversations, interleaved,
// through three deployments of a caching fake Anthropic (each its own cache), with
// anthropic-sdk-go, and measures the prompt cache hit rate of the turns after the first:
// cache_read_input_tokens over all the prompt tokens. With affinity prefix every later
// turn goes to the deployment that holds its conversation's prefix; without, round robin
// scatters them.
func TestDeployments_PromptCacheHitRate(t *testing.T) {
	rate := func(affinity string) float64 {
		var urls []string
		var fakes []*cachingAnthropic
		for i := range 3 {
			f := newCachingAnthropic(t, fmt.Sprintf("d%d", i))
			fakes, urls = append(fakes, f), append(urls, f.srv.URL)
		}
		g := gatewaytest.StartYAML(t, poolYAML(urls, "weighted", affinity, "", ""), gatewaytest.Options{Runtime: proxy.TestRuntime})
		c := gatewaytest.Anthropic(g.URL, "client-key")
		const conversations, turns = 5, 4
		answers := make([][]string, conversations)
		var read, prompt int64
		for turn := range turns {
			for n := range conversations {
				msg := streamMessage(t, c, conversationParams(n, answers[n]))
				answers[n] = append(answers[n], msg.Content[0].Text)
				if turn > 0 {
					u := msg.Usage
					read += u.CacheReadInputTokens
					prompt += u.InputTokens + u.CacheReadInputTokens + u.CacheCreationInputTokens
				}
			}
		}
		for _, f := range fakes {
			if f.requests.Load() == 0 {
				t.Errorf("affinity %s: deployment %s got no request", affinity, f.name)
			}
		}
		return float64(read) / float64(prompt)
	}
	on, off := rate("prefix"), rate("off")
	t.Logf("prompt cache hit rate of turns 2-4: affinity prefix %.1f%%, affinity off %.1f%%", on*100, off*100)
	if on < 0.9 {
		t.Errorf("hit rate with affinity = %.1f%%, want at least 90%%", on*100)
	}
	if off > on-0.3 {
		t.Errorf("hit rate without affinity = %.1f%%, want well below the %.1f%% with it", off*100, on*100)
	}
}

// failing answers every request with status and body (an Anthropic error), with
// Retry-After when retryAfter is set, and counts them.
type failing struct {
	status     int
	retryAfter string
	n          atomic.Int64
}

func (f *failing) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.n.Add(1)
	if f.retryAfter != "" {
		w.Header().Set("Retry-After", f.retryAfter)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(f.status)
	typ := "overloaded_error"
	if f.status == http.StatusTooManyRequests {
		typ = "rate_limit_error"
	}
	fmt.Fprintf(w, `{"type":"error","error":{"type":%q,"message":"fake failure"}}`, typ)
}

// TestDeployments_RetryMovesOn: a deployment that fails (529 overloaded) or answers 429
// is left for another deployment of the model within the same request; the 429 one rests
// until its Retry-After; when every deployment fails the model's fallback answers. The
// client (openai-go) sees only answers; the access line and the metrics name the
// deployment.
func TestDeployments_RetryMovesOn(t *testing.T) {
	overloaded := &failing{status: 529}
	limited := &failing{status: http.StatusTooManyRequests, retryAfter: "30"}
	ok := newCachingAnthropic(t, "ok")
	down, rl := httptest.NewServer(overloaded), httptest.NewServer(limited)
	t.Cleanup(down.Close)
	t.Cleanup(rl.Close)
	spare := gatewaytest.NewFakeFunc(t, "openai", func(string) gatewaytest.Turn { return gatewaytest.Turn{Text: "from the fallback"} })
	yaml := poolYAML([]string{down.URL, rl.URL, ok.srv.URL}, "weighted", "off",
		fmt.Sprintf("  spare: {type: openai, base_url: %q, api_key: upstream-secret, retries: {max: 0}}\n", spare.BaseURL()), `    fallbacks: [spare]
  spare: {backend: spare}
  lonely:
    deployments:
      - {backend: d0, upstream_model: claude-sonnet-4-5}
      - {backend: d1, upstream_model: claude-sonnet-4-5}
    fallbacks: [spare]
`)
	var logs gatewaytest.Buffer
	g := gatewaytest.StartYAML(t, yaml, gatewaytest.Options{Runtime: proxy.TestRuntime, Logger: slog.New(logjson.New(&logs, nil))})
	c := gatewaytest.OpenAI(g.V1(), "client-key")
	for n := range 6 {
		got, err := c.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{Model: "pool",
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(fmt.Sprintf("question %d", n))}})
		if err != nil {
			t.Fatalf("request %d: %v\n%s", n, err, logs.String())
		}
		if got.Choices[0].Message.Content != "answer from ok" {
			t.Fatalf("request %d answered %q", n, got.Choices[0].Message.Content)
		}
	}
	if n := limited.n.Load(); n != 1 {
		t.Errorf("the 429 deployment got %d requests, want 1 (it rests 30s after its 429)", n)
	}
	if n := ok.requests.Load(); n != 6 {
		t.Errorf("the healthy deployment answered %d requests, want 6", n)
	}
	if !strings.Contains(logs.String(), `"deployment":"d2/claude-sonnet-4-5"`) {
		t.Errorf("no access line names the deployment: %s", logs.String())
	}
	if !strings.Contains(logs.String(), `"msg":"trying another deployment"`) {
		t.Errorf("no log line of the move: %s", logs.String())
	}
	m := g.Metrics
	if v := testutil.ToFloat64(m.DeploymentAttempts.WithLabelValues("pool", "d1/claude-sonnet-4-5", "rate_limited")); v != 1 {
		t.Errorf("rate_limited attempts of d1 = %v, want 1", v)
	}
	if v := testutil.ToFloat64(m.DeploymentHealthy.WithLabelValues("pool", "d2/claude-sonnet-4-5")); v != 1 {
		t.Errorf("d2 healthy = %v, want 1", v)
	}
	if v := testutil.ToFloat64(m.DeploymentHealthy.WithLabelValues("pool", "d0/claude-sonnet-4-5")); v != 0 {
		t.Errorf("d0 healthy = %v, want 0", v)
	}
	// Every deployment failing: the fallback answers, once both were tried.
	before := overloaded.n.Load()
	st := c.Chat.Completions.NewStreaming(context.Background(), openai.ChatCompletionNewParams{Model: "lonely",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}})
	var acc openai.ChatCompletionAccumulator
	for st.Next() {
		acc.AddChunk(st.Current())
	}
	if err := st.Err(); err != nil {
		t.Fatalf("%v\n%s", err, logs.String())
	}
	if acc.Choices[0].Message.Content != "from the fallback" || acc.Model != "spare" {
		t.Errorf("lonely answered %q by %q, want the fallback spare's", acc.Choices[0].Message.Content, acc.Model)
	}
	if overloaded.n.Load() != before+1 {
		t.Errorf("d0 tried %d times, want once", overloaded.n.Load()-before)
	}
}

// TestDeployments_AffinityAcrossReplicas: two gateways share one redis-server (state type
// redis); a conversation started on the first continues, through the second, on the
// deployment the first chose, whatever the second's own round robin would say.
func TestDeployments_AffinityAcrossReplicas(t *testing.T) {
	srv := redistest.Start(t)
	var urls []string
	for i := range 3 {
		urls = append(urls, newCachingAnthropic(t, fmt.Sprintf("d%d", i)).srv.URL)
	}
	yaml := poolYAML(urls, "weighted", "prefix", "", "") + fmt.Sprintf("state: {type: redis, url: %q}\n", srv.URL())
	g1 := gatewaytest.StartYAML(t, yaml, gatewaytest.Options{Runtime: proxy.TestRuntime})
	g2 := gatewaytest.StartYAML(t, yaml, gatewaytest.Options{Runtime: proxy.TestRuntime})
	c1, c2 := gatewaytest.Anthropic(g1.URL, "client-key"), gatewaytest.Anthropic(g2.URL, "client-key")
	const conversations = 6
	first := make([]string, conversations)
	for n := range conversations {
		first[n] = streamMessage(t, c1, conversationParams(n, nil)).Content[0].Text
	}
	streamMessage(t, c2, conversationParams(99, nil)) // the second replica's round robin moves on
	for n := range conversations {
		msg := streamMessage(t, c2, conversationParams(n, []string{first[n]}))
		if got := msg.Content[0].Text; got != first[n] {
			t.Errorf("conversation %d: turn 2 on the second replica answered %q, want %q (turn 1's deployment)", n, got, first[n])
		}
		if msg.Usage.CacheReadInputTokens == 0 {
			t.Errorf("conversation %d: turn 2 read nothing from the prompt cache", n)
		}
	}
	if v := testutil.ToFloat64(g2.Metrics.DeploymentAffinity.WithLabelValues("pool", "hit")); v != conversations {
		t.Errorf("affinity hits on the second replica = %v, want %d", v, conversations)
	}
}

// TestDeployments_ReloadMidTraffic: while four clients send requests, the configuration is
// replaced twice (a deployment removed, another added, then the strategy changed): no
// request fails, and once a reload returned, requests go only to the deployments it names.
func TestDeployments_ReloadMidTraffic(t *testing.T) {
	var fakes []*cachingAnthropic
	var urls []string
	for i := range 4 {
		f := newCachingAnthropic(t, fmt.Sprintf("d%d", i))
		fakes, urls = append(fakes, f), append(urls, f.srv.URL)
	}
	yamlOf := func(balance string, deployments ...int) string {
		y := poolYAML(urls, balance, "prefix", "", "")
		var keep strings.Builder
		for _, line := range strings.SplitAfter(y, "\n") {
			if strings.HasPrefix(line, "      - {backend: d") && !slices.Contains(deployments, int(line[len("      - {backend: d")]-'0')) {
				continue
			}
			keep.WriteString(line)
		}
		return keep.String()
	}
	g := gatewaytest.StartYAML(t, yamlOf("weighted", 0, 1, 2), gatewaytest.Options{Runtime: proxy.TestRuntime})
	c := gatewaytest.Anthropic(g.URL, "client-key")
	// The waits below count requests, not milliseconds, so a loaded machine only makes
	// them longer: gen counts the reloads that returned; afterReload[w] is how many of
	// worker w's requests begun after the last one have ended.
	var (
		wg          sync.WaitGroup
		failed      atomic.Int64
		ended       atomic.Int64
		gen         atomic.Int64
		afterReload [4]atomic.Int64
	)
	const reloads = 2
	stop := make(chan struct{})
	for w := range 4 {
		wg.Go(func() {
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				begun := gen.Load()
				_, err := c.Messages.New(context.Background(), conversationParams(w*1000+n%7, nil))
				if err != nil {
					failed.Add(1)
					t.Errorf("request: %v", err)
					return
				}
				ended.Add(1)
				if begun == reloads {
					afterReload[w].Add(1)
				}
			}
		})
	}
	// waitFor waits at least d and until cond holds (or a request failed, or 10 s).
	waitFor := func(d time.Duration, what string, cond func() bool) {
		t.Helper()
		time.Sleep(d)
		for limit := time.Now().Add(10 * time.Second); !cond() && failed.Load() == 0; time.Sleep(time.Millisecond) {
			if time.Now().After(limit) {
				close(stop)
				wg.Wait()
				t.Fatalf("waited 10 s for %s", what)
			}
		}
	}
	for _, step := range []struct {
		balance     string
		deployments []int
	}{{"weighted", []int{1, 2, 3}}, {"least_busy", []int{2, 3}}} {
		from := ended.Load()
		waitFor(50*time.Millisecond, "8 requests under a configuration", func() bool { return ended.Load() >= from+8 })
		if err := g.Server.Apply(gatewaytest.Parse(t, yamlOf(step.balance, step.deployments...))); err != nil {
			t.Fatal(err)
		}
		gen.Add(1)
	}
	// Requests begun before the last reload end on theirs: once every worker has ended
	// one begun after it, none is left.
	everyWorker := func(n int64) func() bool {
		return func() bool {
			for w := range afterReload {
				if afterReload[w].Load() < n {
					return false
				}
			}
			return true
		}
	}
	waitFor(0, "a request begun after the reload, on every worker", everyWorker(1))
	before := []int64{fakes[0].requests.Load(), fakes[1].requests.Load()}
	waitFor(50*time.Millisecond, "more requests on every worker", everyWorker(3))
	close(stop)
	wg.Wait()
	if failed.Load() > 0 {
		t.Fatalf("%d requests failed across the reloads", failed.Load())
	}
	if fakes[0].requests.Load() != before[0] || fakes[1].requests.Load() != before[1] {
		t.Errorf("removed deployments still called after the reload: d0 %d→%d, d1 %d→%d",
			before[0], fakes[0].requests.Load(), before[1], fakes[1].requests.Load())
	}
	if fakes[3].requests.Load() == 0 {
		t.Error("the added deployment d3 got no request")
	}
}

// TestDeployments_ContinuationGoesToItsDeployment: a Responses passthrough response is
// stored by the upstream of the deployment that made it; its previous_response_id
// continuation goes to that deployment, whatever the model's round robin says next.
func TestDeployments_ContinuationGoesToItsDeployment(t *testing.T) {
	a, aBodies := echoingResponses(t)
	b, bBodies := echoingResponses(t)
	url := gatewaytest.StartYAML(t, fmt.Sprintf(`backends:
  a: {type: responses, base_url: %q, api_key: k, retries: {max: 0}}
  b: {type: responses, base_url: %q, api_key: k, retries: {max: 0}}
models:
  pool:
    deployments: [{backend: a, upstream_model: up}, {backend: b, upstream_model: up}]
responses: {store: memory}
`, a, b), gatewaytest.Options{Runtime: proxy.TestRuntime}).V1() + "/responses"
	if r := postJSON(t, url, "k", `{"model":"pool","input":"hi"}`); r.status != 200 || respID(t, r.body) != "resp_chosen" {
		t.Fatalf("first turn: %d %s", r.status, r.body)
	}
	if len(aBodies()) != 1 {
		t.Fatalf("the first turn did not go to a")
	}
	// Round robin's next is b: a continuation still goes to a, which holds the response.
	for range 2 {
		if r := postJSON(t, url, "k", `{"model":"pool","input":"go on","previous_response_id":"resp_chosen","store":false}`); r.status != 200 {
			t.Fatalf("continuation: %d %s", r.status, r.body)
		}
	}
	if na, nb := len(aBodies()), len(bBodies()); na != 3 || nb != 0 {
		t.Errorf("requests: a %d, b %d; want 3 and 0 (both continuations on a)", na, nb)
	}
	if r := postJSON(t, url, "k", `{"model":"pool","input":"new","store":false}`); r.status != 200 || len(bBodies()) != 1 {
		t.Errorf("a new conversation: %d, b got %d requests; want the round robin's b", r.status, len(bBodies()))
	}
}

// slowed delays each answer of h by delay.
func slowed(h http.Handler, delay time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(delay)
		h.ServeHTTP(w, r)
	})
}

// TestDeployments_LeastBusyUnderUnevenLatency: with balance least_busy, four clients
// sending at once through two deployments, one answering in 40ms and one at once, the
// fast deployment takes most requests: the slow one holds its requests in flight longer.
func TestDeployments_LeastBusyUnderUnevenLatency(t *testing.T) {
	slow, fast := newCachingAnthropic(t, "slow"), newCachingAnthropic(t, "fast")
	slowSrv := httptest.NewServer(slowed(slow, 40*time.Millisecond))
	t.Cleanup(slowSrv.Close)
	g := gatewaytest.StartYAML(t, poolYAML([]string{slowSrv.URL, fast.srv.URL}, "least_busy", "off", "", ""), gatewaytest.Options{Runtime: proxy.TestRuntime})
	c := gatewaytest.Anthropic(g.URL, "client-key")
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for n := range 10 {
				if _, err := c.Messages.New(context.Background(), conversationParams(w*100+n, nil)); err != nil {
					t.Errorf("request: %v", err)
					return
				}
			}
		})
	}
	wg.Wait()
	s, f := slow.requests.Load(), fast.requests.Load()
	t.Logf("least_busy: slow deployment %d requests, fast %d", s, f)
	if s+f != 40 || f < 2*s {
		t.Errorf("slow %d, fast %d: want the fast deployment to take at least twice the slow one's", s, f)
	}
}
