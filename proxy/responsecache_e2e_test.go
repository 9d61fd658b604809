package proxy_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go"
	aoption "github.com/anthropics/anthropic-sdk-go/option"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/agate-gateway/agate/internal/gatewaytest"
	"github.com/agate-gateway/agate/internal/logjson"
	"github.com/agate-gateway/agate/limits/redistest"
	"github.com/agate-gateway/agate/proxy"
)

// The response cache end to end: a fake OpenAI-compatible upstream (gatewaytest's
// rendering of the chat completions wire, streamed or whole as asked) that answers turn i
// of its script to its i-th request, so that a request answered by the upstream and one
// answered from the cache are told apart by their text, and the upstream's request count
// is what the cache saved.

// cacheYAML is a gateway with model m on the fake at %s, its response cache configured by
// the second %s, and two keys.
const cacheYAML = `
backends:
  up: {type: openai, base_url: %q, api_key: upstream-secret, retries: {max: 0}}
models:
  m: {backend: up, upstream_model: gpt-fake, cache: {responses: %s}}
keys:
  alice: {key: alice-key, models: ["*"]}
  bob: {key: bob-key, models: ["*"]}
`

// turns returns n script turns saying "answer 1" ... "answer n".
func cacheTurns(n int) []gatewaytest.Turn {
	ts := make([]gatewaytest.Turn, n)
	for i := range ts {
		ts[i] = gatewaytest.Turn{Text: fmt.Sprintf("answer %d", i+1)}
	}
	return ts
}

func startCached(t *testing.T, cache string, o gatewaytest.Options) (*gatewaytest.Gateway, *gatewaytest.Fake) {
	t.Helper()
	up := gatewaytest.NewFakeJSON(t, "openai")
	up.SetScript(cacheTurns(20)...)
	return gatewaytest.StartYAML(t, fmt.Sprintf(cacheYAML, up.BaseURL(), cache), o), up
}

// cachedChat is what one chat completion through openai-go gave: its text, id and
// x-agate-cache header.
type cachedChat struct{ text, id, cache string }

func askCached(t *testing.T, g *gatewaytest.Gateway, key string, params openai.ChatCompletionNewParams, opts ...option.RequestOption) cachedChat {
	t.Helper()
	var resp *http.Response
	c := gatewaytest.OpenAI(g.V1(), key)
	out, err := c.Chat.Completions.New(context.Background(), params, append(opts, option.WithResponseInto(&resp))...)
	if err != nil {
		t.Fatalf("chat: %v", err)
	}
	return cachedChat{text: out.Choices[0].Message.Content, id: out.ID, cache: resp.Header.Get("x-agate-cache")}
}

// zeroTemp is the deterministic request the tests repeat.
func zeroTemp(prompt string) openai.ChatCompletionNewParams {
	return openai.ChatCompletionNewParams{Model: "m", Temperature: openai.Float(0), MaxTokens: openai.Int(100),
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(prompt)}}
}

// TestResponseCache_Directives: a miss asks the upstream and stores; the same request is
// then a hit (the stored text, a new id, no upstream call); skip and Cache-Control:
// no-store ask the upstream and leave the entry; refresh and Cache-Control: no-cache ask
// it and replace the entry.
func TestResponseCache_Directives(t *testing.T) {
	g, up := startCached(t, "{ttl: 10m}", gatewaytest.Options{Runtime: proxy.TestRuntime})
	steps := []struct {
		name      string
		header    [2]string
		wantText  string
		wantCache string
		wantCalls int
	}{
		{name: "miss", wantText: "answer 1", wantCache: "miss", wantCalls: 1},
		{name: "hit", wantText: "answer 1", wantCache: "hit", wantCalls: 1},
		{name: "skip", header: [2]string{"x-agate-cache", "skip"}, wantText: "answer 2", wantCalls: 2},
		{name: "no-store", header: [2]string{"Cache-Control", "no-store"}, wantText: "answer 3", wantCalls: 3},
		{name: "still the first", wantText: "answer 1", wantCache: "hit", wantCalls: 3},
		{name: "refresh", header: [2]string{"x-agate-cache", "refresh"}, wantText: "answer 4", wantCache: "miss", wantCalls: 4},
		{name: "the refreshed", wantText: "answer 4", wantCache: "hit", wantCalls: 4},
		{name: "no-cache", header: [2]string{"Cache-Control", "no-cache"}, wantText: "answer 5", wantCache: "miss", wantCalls: 5},
		{name: "the refreshed again", wantText: "answer 5", wantCache: "hit", wantCalls: 5},
	}
	ids := map[string]bool{}
	for _, s := range steps {
		var opts []option.RequestOption
		if s.header[0] != "" {
			opts = append(opts, option.WithHeader(s.header[0], s.header[1]))
		}
		got := askCached(t, g, "alice-key", zeroTemp("hello"), opts...)
		if got.text != s.wantText || got.cache != s.wantCache {
			t.Errorf("%s: text %q, x-agate-cache %q; want %q, %q", s.name, got.text, got.cache, s.wantText, s.wantCache)
		}
		if n := len(up.Bodies()); n != s.wantCalls {
			t.Errorf("%s: the upstream was called %d times, want %d", s.name, n, s.wantCalls)
		}
		if ids[got.id] {
			t.Errorf("%s: id %q was given before", s.name, got.id)
		}
		ids[got.id] = true
	}
	rc := g.Metrics.ResponseCache.Results
	for result, want := range map[string]float64{"hit": 4, "miss": 1, "skip": 2, "refresh": 2, "store": 3} {
		if got := testutil.ToFloat64(rc.WithLabelValues(result)); got != want {
			t.Errorf("gateway_response_cache_total{result=%q} = %v, want %v", result, got, want)
		}
	}
}

// TestResponseCache_WhenDeterministic: by default only a request with temperature 0 or a
// seed is cached; with when: always every one is.
func TestResponseCache_WhenDeterministic(t *testing.T) {
	free := openai.ChatCompletionNewParams{Model: "m", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hello")}}
	seeded := free
	seeded.Seed = openai.Int(7)
	tests := []struct {
		name, cache string
		params      openai.ChatCompletionNewParams
		wantCalls   int
		wantHeader  string
	}{
		{name: "no temperature, default", cache: "{}", params: free, wantCalls: 2, wantHeader: ""},
		{name: "no temperature, always", cache: "{when: always}", params: free, wantCalls: 1, wantHeader: "hit"},
		{name: "a seed", cache: "{}", params: seeded, wantCalls: 1, wantHeader: "hit"},
		{name: "temperature 0", cache: "{when: deterministic}", params: zeroTemp("hello"), wantCalls: 1, wantHeader: "hit"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, up := startCached(t, tt.cache, gatewaytest.Options{Runtime: proxy.TestRuntime})
			askCached(t, g, "alice-key", tt.params)
			got := askCached(t, g, "alice-key", tt.params)
			if n := len(up.Bodies()); n != tt.wantCalls || got.cache != tt.wantHeader {
				t.Errorf("upstream calls %d, second x-agate-cache %q; want %d, %q", n, got.cache, tt.wantCalls, tt.wantHeader)
			}
		})
	}
}

// TestResponseCache_TTL: an entry is a hit until its TTL passes (injected clock), then a
// miss that stores the new answer.
func TestResponseCache_TTL(t *testing.T) {
	clock := newFakeClock()
	g, up := startCached(t, "{ttl: 10m}", gatewaytest.Options{Runtime: proxy.TestRuntime, Clock: clock.Now})
	for _, s := range []struct {
		advance time.Duration
		want    string
	}{{0, "answer 1"}, {9 * time.Minute, "answer 1"}, {61 * time.Second, "answer 2"}, {time.Minute, "answer 2"}} {
		clock.Advance(s.advance)
		if got := askCached(t, g, "alice-key", zeroTemp("hello")); got.text != s.want {
			t.Errorf("after %v more: %q, want %q", s.advance, got.text, s.want)
		}
	}
	if n := len(up.Bodies()); n != 2 {
		t.Errorf("upstream calls %d, want 2", n)
	}
}

// TestResponseCache_ScopedToKey: one key's entry is not another's: bob's same request is
// a miss after alice's, and each then hits its own.
func TestResponseCache_ScopedToKey(t *testing.T) {
	g, up := startCached(t, "{}", gatewaytest.Options{Runtime: proxy.TestRuntime})
	for _, s := range []struct{ key, want, cache string }{
		{"alice-key", "answer 1", "miss"}, {"bob-key", "answer 2", "miss"},
		{"alice-key", "answer 1", "hit"}, {"bob-key", "answer 2", "hit"},
	} {
		if got := askCached(t, g, s.key, zeroTemp("hello")); got.text != s.want || got.cache != s.cache {
			t.Errorf("%s: %q %q, want %q %q", s.key, got.text, got.cache, s.want, s.cache)
		}
	}
	if n := len(up.Bodies()); n != 2 {
		t.Errorf("upstream calls %d, want 2", n)
	}
}

// TestResponseCache_PerKeyConfig: a key's own cache block turns the cache on for its
// requests to a model that has none.
func TestResponseCache_PerKeyConfig(t *testing.T) {
	up := gatewaytest.NewFakeJSON(t, "openai")
	up.SetScript(cacheTurns(5)...)
	g := gatewaytest.StartYAML(t, fmt.Sprintf(`
backends:
  up: {type: openai, base_url: %q, api_key: upstream-secret, retries: {max: 0}}
models:
  m: {backend: up, upstream_model: gpt-fake}
keys:
  evals: {key: evals-key, models: ["*"], cache: {responses: {when: always}}}
  app: {key: app-key, models: ["*"]}
`, up.BaseURL()), gatewaytest.Options{Runtime: proxy.TestRuntime})
	free := openai.ChatCompletionNewParams{Model: "m", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hello")}}
	for _, s := range []struct{ key, want, cache string }{
		{"evals-key", "answer 1", "miss"}, {"evals-key", "answer 1", "hit"},
		{"app-key", "answer 2", ""}, {"app-key", "answer 3", ""},
	} {
		if got := askCached(t, g, s.key, free); got.text != s.want || got.cache != s.cache {
			t.Errorf("%s: %q %q, want %q %q", s.key, got.text, got.cache, s.want, s.cache)
		}
	}
}

// TestResponseCache_HitCostsNoTokens: a hit is counted as a request (and its access line
// says cache hit) but charges no tokens: gateway_tokens_total and the key's token budget
// stay as the miss left them, and a budget the miss used up does not refuse the hit. The
// key's requests per minute still apply to hits.
func TestResponseCache_HitCostsNoTokens(t *testing.T) {
	up := gatewaytest.NewFakeJSON(t, "openai")
	up.SetScript(cacheTurns(5)...)
	logs := &gatewaytest.Buffer{}
	g := gatewaytest.StartYAML(t, fmt.Sprintf(`
backends:
  up: {type: openai, base_url: %q, api_key: upstream-secret, retries: {max: 0}}
models:
  m: {backend: up, upstream_model: gpt-fake, cache: {responses: {}}}
keys:
  alice: {key: alice-key, models: ["*"], budget: {tokens: 15}, limits: {requests_per_minute: 3}}
`, up.BaseURL()), gatewaytest.Options{Runtime: proxy.TestRuntime, Logger: slog.New(logjson.New(logs, nil))})
	askCached(t, g, "alice-key", zeroTemp("hello")) // 15 tokens: the budget is spent
	tokens := func() float64 {
		g.Server.Settle()
		return testutil.ToFloat64(g.Metrics.Tokens.WithLabelValues("m", "up", "alice", "prompt")) +
			testutil.ToFloat64(g.Metrics.Tokens.WithLabelValues("m", "up", "alice", "completion"))
	}
	if got := tokens(); got != 15 {
		t.Fatalf("tokens after the miss %v, want 15", got)
	}
	for i := 0; i < 2; i++ {
		if got := askCached(t, g, "alice-key", zeroTemp("hello")); got.cache != "hit" || got.text != "answer 1" {
			t.Fatalf("hit %d: %+v", i, got)
		}
	}
	if got := tokens(); got != 15 {
		t.Errorf("tokens after two hits %v, want 15 (hits are free)", got)
	}
	if got := testutil.ToFloat64(g.Metrics.Requests.WithLabelValues("m", "up", "alice", "200", "false", "chat")); got != 3 {
		t.Errorf("requests counted %v, want 3", got)
	}
	// The fourth request in the minute: over requests_per_minute, hit or not.
	c := gatewaytest.OpenAI(g.V1(), "alice-key")
	_, err := c.Chat.Completions.New(context.Background(), zeroTemp("hello"))
	if err == nil || !strings.Contains(err.Error(), "429") {
		t.Errorf("a 4th request in the minute: %v, want a 429", err)
	}
	g.Server.Settle()
	if n := strings.Count(logs.String(), `"cache":"hit"`); n != 2 {
		t.Errorf("%d access lines say cache hit, want 2:\n%s", n, logs.String())
	}
	if n := strings.Count(logs.String(), `"cache":"miss"`); n != 1 {
		t.Errorf("%d access lines say cache miss, want 1", n)
	}
}

// TestResponseCache_StreamAndWhole: a whole answer stored is replayed as a stream (the
// SDK's stream accumulates the same text), and a streamed one as a whole completion.
func TestResponseCache_StreamAndWhole(t *testing.T) {
	g, up := startCached(t, "{}", gatewaytest.Options{Runtime: proxy.TestRuntime})
	c := gatewaytest.OpenAI(g.V1(), "alice-key")
	streamed := func(prompt string) (string, string) {
		t.Helper()
		var resp *http.Response
		s := c.Chat.Completions.NewStreaming(context.Background(), zeroTemp(prompt), option.WithResponseInto(&resp))
		var acc openai.ChatCompletionAccumulator
		for s.Next() {
			acc.AddChunk(s.Current())
		}
		if err := s.Err(); err != nil {
			t.Fatalf("stream: %v", err)
		}
		return acc.Choices[0].Message.Content, resp.Header.Get("x-agate-cache")
	}
	askCached(t, g, "alice-key", zeroTemp("first whole"))
	if text, cache := streamed("first whole"); text != "answer 1" || cache != "hit" {
		t.Errorf("stored whole, replayed streamed: %q %q", text, cache)
	}
	if text, cache := streamed("first streamed"); text != "answer 2" || cache != "miss" {
		t.Errorf("streamed miss: %q %q", text, cache)
	}
	if got := askCached(t, g, "alice-key", zeroTemp("first streamed")); got.text != "answer 2" || got.cache != "hit" {
		t.Errorf("stored streamed, replayed whole: %+v", got)
	}
	if n := len(up.Bodies()); n != 2 {
		t.Errorf("upstream calls %d, want 2", n)
	}
}

// TestResponseCache_CrossAPI: an answer stored through the chat completions API is
// replayed to the Messages API (anthropic-sdk-go) and to the Responses API (openai-go),
// each in its own shape, from the one entry.
func TestResponseCache_CrossAPI(t *testing.T) {
	g, up := startCached(t, "{}", gatewaytest.Options{Runtime: proxy.TestRuntime})
	askCached(t, g, "alice-key", zeroTemp("hello"))

	var aresp *http.Response
	a := gatewaytest.Anthropic(g.URL, "alice-key")
	msg, err := a.Messages.New(context.Background(), anthropic.MessageNewParams{Model: "m", MaxTokens: 100, Temperature: anthropic.Float(0),
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hello"))}}, aoption.WithResponseInto(&aresp))
	if err != nil {
		t.Fatal(err)
	}
	if len(msg.Content) != 1 || msg.Content[0].Text != "answer 1" || aresp.Header.Get("x-agate-cache") != "hit" {
		t.Errorf("messages: %+v, x-agate-cache %q", msg.Content, aresp.Header.Get("x-agate-cache"))
	}
	if !strings.HasPrefix(msg.ID, "msg_") || msg.StopReason != anthropic.StopReasonEndTurn {
		t.Errorf("messages: id %q, stop %q", msg.ID, msg.StopReason)
	}

	var rresp *http.Response
	c := gatewaytest.OpenAI(g.V1(), "alice-key")
	r, err := c.Responses.New(context.Background(), responses.ResponseNewParams{Model: "m", Temperature: openai.Float(0), MaxOutputTokens: openai.Int(100),
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hello")}}, option.WithResponseInto(&rresp))
	if err != nil {
		t.Fatal(err)
	}
	if r.OutputText() != "answer 1" || rresp.Header.Get("x-agate-cache") != "hit" {
		t.Errorf("responses: %q, x-agate-cache %q", r.OutputText(), rresp.Header.Get("x-agate-cache"))
	}
	// The hit is stored under its new id (store: true, the default), as an answer of the upstream is.
	stored, err := c.Responses.Get(context.Background(), r.ID, responses.ResponseGetParams{})
	if err != nil || stored.OutputText() != "answer 1" {
		t.Errorf("GET /v1/responses/%s: %v", r.ID, err)
	}
	if n := len(up.Bodies()); n != 1 {
		t.Errorf("upstream calls %d, want 1:\n%s", n, strings.Join(up.Bodies(), "\n"))
	}
}

// TestResponseCache_SingleFlight: identical requests that arrive while the first is being
// answered wait for it and are answered from the cache: one upstream call for all.
func TestResponseCache_SingleFlight(t *testing.T) {
	up := gatewaytest.NewFakeJSON(t, "openai")
	up.SetScript(cacheTurns(20)...)
	var calls atomic.Int64
	release := make(chan struct{})
	slow := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		<-release
		up.ServeHTTP(w, r)
	})
	srv := httptest.NewServer(slow)
	defer srv.Close()
	g := gatewaytest.StartYAML(t, fmt.Sprintf(cacheYAML, srv.URL+"/v1", "{}"), gatewaytest.Options{Runtime: proxy.TestRuntime})
	const n = 8
	var wg sync.WaitGroup
	got := make([]cachedChat, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[i] = askCached(t, g, "alice-key", zeroTemp("hello"))
		}()
	}
	// Every request has reached the gateway once the leader is upstream and the others
	// wait: let the upstream answer then.
	deadline := time.Now().Add(2 * time.Second)
	for calls.Load() < 1 || testutil.ToFloat64(g.Metrics.Inflight) < 1 {
		if time.Now().After(deadline) {
			t.Fatal("no request reached the upstream")
		}
		time.Sleep(time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond) // the other requests join the flight
	close(release)
	wg.Wait()
	hits := 0
	for _, o := range got {
		if o.text != "answer 1" {
			t.Errorf("an answer %q, want answer 1", o.text)
		}
		if o.cache == "hit" {
			hits++
		}
	}
	if c := calls.Load(); c != 1 || hits != n-1 {
		t.Errorf("upstream calls %d, hits %d; want 1, %d", c, hits, n-1)
	}
}

// TestResponseCache_Redis: two gateways sharing one redis-server share the cache: an
// answer stored by one is a hit on the other.
func TestResponseCache_Redis(t *testing.T) {
	rs := redistest.Start(t)
	up := gatewaytest.NewFakeJSON(t, "openai")
	up.SetScript(cacheTurns(5)...)
	yaml := fmt.Sprintf(cacheYAML, up.BaseURL(), "{store: redis, ttl: 1m}") + fmt.Sprintf("state: {type: redis, url: %q, timeout: 2s}\n", rs.URL())
	a := gatewaytest.StartYAML(t, yaml, gatewaytest.Options{Runtime: proxy.TestRuntime})
	b := gatewaytest.StartYAML(t, yaml, gatewaytest.Options{Runtime: proxy.TestRuntime})
	if got := askCached(t, a, "alice-key", zeroTemp("hello")); got.cache != "miss" || got.text != "answer 1" {
		t.Fatalf("a: %+v", got)
	}
	if got := askCached(t, b, "alice-key", zeroTemp("hello")); got.cache != "hit" || got.text != "answer 1" {
		t.Errorf("b: %+v", got)
	}
	if got := askCached(t, b, "bob-key", zeroTemp("hello")); got.cache != "miss" || got.text != "answer 2" {
		t.Errorf("b, bob: %+v", got)
	}
	if n := len(up.Bodies()); n != 2 {
		t.Errorf("upstream calls %d, want 2", n)
	}
}

// TestResponseCache_NotStored: an error answer is not cached (the same request asks the
// upstream again), nor is an answer a fallback gave (it is not the routed model's).
func TestResponseCache_NotStored(t *testing.T) {
	t.Run("error", func(t *testing.T) {
		up := gatewaytest.NewFakeJSON(t, "openai") // no script: every request is a 400 in OpenAI's shape
		g := gatewaytest.StartYAML(t, fmt.Sprintf(cacheYAML, up.BaseURL(), "{}"), gatewaytest.Options{Runtime: proxy.TestRuntime})
		c := gatewaytest.OpenAI(g.V1(), "alice-key")
		for i := 0; i < 2; i++ {
			if _, err := c.Chat.Completions.New(context.Background(), zeroTemp("hello")); err == nil || !strings.Contains(err.Error(), "400") {
				t.Fatalf("request %d: %v, want the upstream's 400", i, err)
			}
		}
		if n := len(up.Bodies()); n != 2 {
			t.Errorf("upstream calls %d, want 2", n)
		}
	})
	t.Run("fallback", func(t *testing.T) {
		down := unavailable(t, "openai")
		spare := gatewaytest.NewFakeJSON(t, "openai")
		spare.SetScript(cacheTurns(5)...)
		g := gatewaytest.StartYAML(t, fmt.Sprintf(`
backends:
  down: {type: openai, base_url: %q, api_key: k, retries: {max: 0}}
  spare: {type: openai, base_url: %q, api_key: k, retries: {max: 0}}
models:
  m: {backend: down, upstream_model: gpt, fallbacks: [m2], cache: {responses: {}}}
  m2: {backend: spare, upstream_model: gpt}
keys:
  alice: {key: alice-key, models: ["*"]}
`, down.URL+"/v1", spare.BaseURL()), gatewaytest.Options{Runtime: proxy.TestRuntime})
		for _, want := range []string{"answer 1", "answer 2"} {
			if got := askCached(t, g, "alice-key", zeroTemp("hello")); got.text != want || got.cache != "miss" {
				t.Errorf("%+v, want %q from the fallback, a miss", got, want)
			}
		}
	})
}

// TestResponseCache_NodeSDK: the Node openai SDK streams a miss, then the same answer
// from the cache as a stream and as a whole completion (new ids), and a skip asks the
// upstream again. It needs node and the npm openai package in AGATE_NODE_MODULES, else
// ../.ci/npm/node_modules (.ci/run installs it there); without them it skips, and fails
// under CI=true.
func TestResponseCache_NodeSDK(t *testing.T) {
	t.Parallel() // its own gateway and Node process (#54)
	node := gatewaytest.Require(t, "node", "apt-get install nodejs")
	modules := os.Getenv("AGATE_NODE_MODULES")
	if modules == "" {
		modules, _ = filepath.Abs(filepath.Join("..", ".ci", "npm", "node_modules"))
	}
	if _, err := os.Stat(filepath.Join(modules, "openai", "package.json")); err != nil {
		gatewaytest.Missing(t, "the npm package openai is not installed: "+err.Error(), "set AGATE_NODE_MODULES; .ci/run installs it in .ci/npm")
	}
	g, up := startCached(t, "{}", gatewaytest.Options{Runtime: proxy.TestRuntime})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, filepath.Join("testdata", "node", "responsecache.mjs"))
	cmd.Env = append(os.Environ(), "AGATE_URL="+g.V1(), "OPENAI_MODULE="+filepath.Join(modules, "openai"))
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("node: %v\n%s", err, ee.Stderr)
		}
		t.Fatalf("node: %v", err)
	}
	var got []struct{ Text, Cache, ID string }
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("node output: %v\n%s", err, out)
	}
	want := []struct{ text, cache string }{{"answer 1", "miss"}, {"answer 1", "hit"}, {"answer 1", "hit"}, {"answer 2", ""}}
	if len(got) != len(want) {
		t.Fatalf("node printed %d answers, want %d: %s", len(got), len(want), out)
	}
	ids := map[string]bool{}
	for i, w := range want {
		if got[i].Text != w.text || got[i].Cache != w.cache || ids[got[i].ID] {
			t.Errorf("request %d: %+v, want %q %q and a new id", i, got[i], w.text, w.cache)
		}
		ids[got[i].ID] = true
	}
	if n := len(up.Bodies()); n != 2 {
		t.Errorf("upstream calls %d, want 2", n)
	}
}

// TestResponseCache_Reload: a reload keeps a cache whose block is unchanged, with its
// entries; a changed block starts empty.
func TestResponseCache_Reload(t *testing.T) {
	up := gatewaytest.NewFakeJSON(t, "openai")
	up.SetScript(cacheTurns(5)...)
	g := gatewaytest.StartYAML(t, fmt.Sprintf(cacheYAML, up.BaseURL(), "{ttl: 10m}"), gatewaytest.Options{Runtime: proxy.TestRuntime})
	askCached(t, g, "alice-key", zeroTemp("hello"))
	for _, s := range []struct{ block, want, cache string }{
		{"{ttl: 10m}", "answer 1", "hit"},
		{"{ttl: 20m}", "answer 2", "miss"},
	} {
		if err := g.Server.Apply(gatewaytest.Parse(t, fmt.Sprintf(cacheYAML, up.BaseURL(), s.block))); err != nil {
			t.Fatal(err)
		}
		if got := askCached(t, g, "alice-key", zeroTemp("hello")); got.text != s.want || got.cache != s.cache {
			t.Errorf("after a reload with %s: %+v, want %q %q", s.block, got, s.want, s.cache)
		}
	}
}
