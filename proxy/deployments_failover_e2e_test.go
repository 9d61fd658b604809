package proxy_test

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/agate-gateway/agate/internal/gatewaytest"
	"github.com/agate-gateway/agate/limits/redistest"
	"github.com/agate-gateway/agate/proxy"
)

// deployedBreakerYAML is model pool served by two deployments (backends main and spare, each
// an OpenAI-compatible upstream), whose circuits open after two failures for 30 s, and model
// direct: main's deployment alone, the same circuit (one per backend and upstream model).
const deployedBreakerYAML = `
backends:
  main:
    type: openai
    base_url: %s/v1
    retries: {max: 0, circuit_breaker: {failures: 2, cooldown: 30s}}
  spare:
    type: openai
    base_url: %s/v1
    retries: {max: 0, circuit_breaker: {failures: 2, cooldown: 30s}}
models:
  pool:
    deployments:
      - {backend: main, upstream_model: gpt-main}
      - {backend: spare, upstream_model: gpt-spare}
  direct: {backend: main, upstream_model: gpt-main}
`

// TestDeployments_CircuitBreaker: a model with two deployments whose first is down. Each
// failure on it moves the request to the second (every request is answered, by spare);
// the second failure opens main's circuit, after which no request calls main: the balance
// leaves it out (its Health is the circuit breaker) and model direct, main's deployment
// alone, is refused with upstream_circuit_open without a call, since it is the same
// circuit. After the cooldown (the gateway's injected clock) one request probes main, which
// is up again: the circuit closes and main serves again. Each attempt asks the circuit once
// (a second ask would spend the half-open probe, and main would never be called again).
func TestDeployments_CircuitBreaker(t *testing.T) {
	main, spare := newFlaky(t, "from main"), newFlaky(t, "from spare")
	clock := newFakeClock()
	g := gatewaytest.StartYAML(t, fmt.Sprintf(deployedBreakerYAML, main.srv.URL, spare.srv.URL), gatewaytest.Options{Runtime: proxy.TestRuntime, Clock: clock.Now})
	state := func() float64 {
		return testutil.ToFloat64(g.Metrics.Circuits.State.WithLabelValues("main", "gpt-main"))
	}
	main.down.Store(true)
	for i := 0; i < 8; i++ {
		text, _, err := chatOnce(t, g, "pool", i%2 == 1)
		if err != nil || text != "from spare" {
			t.Fatalf("request %d while main is down: %q, %v", i, text, err)
		}
		waitRequests(t, g, float64(i+1))
		clock.Advance(time.Second)
	}
	if n := main.hits.Load(); n != 2 {
		t.Errorf("main got %d requests while down, want 2 (its circuit opens at the second failure)", n)
	}
	if s := state(); s != 1 {
		t.Errorf("main's circuit state %v, want 1 (open)", s)
	}
	if got := testutil.ToFloat64(g.Metrics.DeploymentAttempts.WithLabelValues("pool", "main/gpt-main", "error")); got != 2 {
		t.Errorf("gateway_deployment_attempts_total{deployment=main/gpt-main,outcome=error} = %v, want 2", got)
	}

	// The same circuit guards the model of main alone.
	_, _, err := chatOnce(t, g, "direct", false)
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 503 || apiErr.Code != "upstream_circuit_open" {
		t.Fatalf("model direct while main's circuit is open: %v, want a 503 upstream_circuit_open", err)
	}
	if n := main.hits.Load(); n != 2 {
		t.Errorf("main got %d requests, want still 2", n)
	}

	// After the cooldown main is up again: a probe closes its circuit and it serves again.
	main.down.Store(false)
	clock.Advance(30 * time.Second)
	answered := map[string]int{}
	for i := 0; i < 4; i++ {
		text, _, err := chatOnce(t, g, "pool", i%2 == 1)
		if err != nil {
			t.Fatalf("request %d after the cooldown: %v", i, err)
		}
		answered[strings.TrimPrefix(text, "from ")]++
		waitRequests(t, g, float64(10+i))
	}
	if s := state(); s != 0 {
		t.Errorf("main's circuit state %v after its probe succeeded, want 0 (closed)", s)
	}
	if answered["main"] == 0 || answered["spare"] == 0 {
		t.Errorf("answers after the cooldown %v, want both deployments serving", answered)
	}
	for to, want := range map[string]float64{"open": 1, "half_open": 1, "closed": 1} {
		if got := testutil.ToFloat64(g.Metrics.Circuits.Transitions.WithLabelValues("main", "gpt-main", to)); got != want {
			t.Errorf("gateway_circuit_transitions_total{to=%q} = %v, want %v", to, got, want)
		}
	}
	if text, _, err := chatOnce(t, g, "direct", false); err != nil || text != "from main" {
		t.Errorf("model direct after the circuit closed: %q, %v", text, err)
	}
}

// TestDeployments_AllCircuitsOpen: once every deployment's circuit is open, a request to
// the model calls none of them and gets a 503 upstream_circuit_open naming the model, with
// Retry-After the rest of the cooldown, as a model of one backend does.
func TestDeployments_AllCircuitsOpen(t *testing.T) {
	main, spare := newFlaky(t, "from main"), newFlaky(t, "from spare")
	clock := newFakeClock()
	g := gatewaytest.StartYAML(t, fmt.Sprintf(deployedBreakerYAML, main.srv.URL, spare.srv.URL), gatewaytest.Options{Runtime: proxy.TestRuntime, Clock: clock.Now})
	main.down.Store(true)
	spare.down.Store(true)
	for i := 0; i < 2; i++ { // each request fails on both: two failures each
		if _, _, err := chatOnce(t, g, "pool", false); err == nil {
			t.Fatalf("request %d succeeded with both deployments down", i)
		}
	}
	hits := main.hits.Load() + spare.hits.Load()
	clock.Advance(10 * time.Second)
	_, _, err := chatOnce(t, g, "pool", true)
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 503 || apiErr.Code != "upstream_circuit_open" ||
		apiErr.Response.Header.Get("Retry-After") != "20" || !strings.Contains(apiErr.Message, "model pool") {
		t.Fatalf("request with every circuit open: %v, want a 503 upstream_circuit_open with Retry-After 20", err)
	}
	if n := main.hits.Load() + spare.hits.Load(); n != hits || hits != 4 {
		t.Errorf("the deployments got %d requests, then %d more; want 4, then none", hits, n-hits)
	}
}

// TestDeployments_ContextFallbacks: a model with two deployments, each of which says the
// request is over its context window (OpenAI's observed body, testdata/fixtures, as in
// TestContextFallbacks), goes to its context_fallbacks, with one attempt a request: the
// error does not move the request to the other deployment, nor to the ordinary fallbacks.
func TestDeployments_ContextFallbacks(t *testing.T) {
	var urls []string
	var asked atomic.Int64
	for _, f := range []string{"openai-chat/errors/400-context-length-exceeded.observed.json", "openai-chat/errors/400-context-length-exceeded.observed.json"} {
		body, err := os.ReadFile(filepath.Join("..", "testdata", "fixtures", f))
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.Copy(io.Discard, r.Body)
			asked.Add(1)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(400)
			w.Write(body)
		}))
		t.Cleanup(srv.Close)
		urls = append(urls, srv.URL)
	}
	big, other := newFlaky(t, "from big"), newFlaky(t, "from other")
	g := gatewaytest.StartYAML(t, fmt.Sprintf(`
backends:
  first: {type: openai, base_url: %s/v1, api_key: k}
  second: {type: openai, base_url: %s/v1, api_key: k}
  big: {type: openai, base_url: %s/v1}
  other: {type: openai, base_url: %s/v1}
models:
  short:
    deployments:
      - {backend: first, upstream_model: m-short}
      - {backend: second, upstream_model: m-short, weight: 3}
    fallbacks: [other]
    context_fallbacks: [long]
  long: {backend: big, upstream_model: m-long}
  other: {backend: other, upstream_model: m-other}
`, urls[0], urls[1], big.srv.URL, other.srv.URL), gatewaytest.Options{Runtime: proxy.TestRuntime})
	for i := 0; i < 4; i++ { // weighted 1:3: second, second, first, second
		text, h, err := chatOnce(t, g, "short", i%2 == 1)
		if err != nil || text != "from big" || h.Get("x-agate-model") != "long" {
			t.Fatalf("request %d: %q %v (x-agate-model %q), want the context fallback's answer", i, text, err, h.Get("x-agate-model"))
		}
		if n := asked.Load(); n != int64(i+1) {
			t.Fatalf("request %d: the deployments were asked %d times in all, want %d (once a request)", i, n, i+1)
		}
	}
	for _, d := range []string{"first/m-short", "second/m-short"} {
		if got := testutil.ToFloat64(g.Metrics.DeploymentAttempts.WithLabelValues("short", d, "client_error")); got == 0 {
			t.Errorf("deployment %s was not asked", d)
		}
	}
	if other.hits.Load() != 0 {
		t.Errorf("the ordinary fallback was asked %d times", other.hits.Load())
	}
}

// TestDeployments_Continuation: a stream cut midway on one deployment of a model is
// continued on its other deployment (through the balance, before any fallback), by
// prefill, and the client (openai-go) gets the whole answer once; both attempts are the
// deployments' (and their circuits') outcomes: an error on the first, ok on the second.
func TestDeployments_Continuation(t *testing.T) {
	first := newChoppy(t, "anthropic", fault{3, "cut"})
	second := newChoppy(t, "anthropic")
	spare := newChoppy(t, "anthropic")
	g := gatewaytest.StartYAML(t, fmt.Sprintf(`server: {listen: "127.0.0.1:0"}
backends:
  a: {type: anthropic, base_url: %q, api_key: upstream-secret, retries: {max: 0}}
  b: {type: anthropic, base_url: %q, api_key: upstream-secret, retries: {max: 0}}
  spare: {type: anthropic, base_url: %q, api_key: upstream-secret}
models:
  m:
    deployments:
      - {backend: a, upstream_model: fake-model}
      - {backend: b, upstream_model: fake-model}
    fallbacks: [backup]
  backup: {backend: spare, upstream_model: fake-model}
`, first.baseURL(), second.baseURL(), spare.baseURL()), gatewaytest.Options{Runtime: proxy.TestRuntime})
	a := askChat(t, g)
	if a.errorText != "" || a.text != contAnswer || a.finishes != 1 || a.starts != 1 {
		t.Fatalf("answer %q (%d starts, %d finishes), error %q; want the whole answer once", a.text, a.starts, a.finishes, a.errorText)
	}
	if f, s := len(first.requests()), second.requests(); f != 1 || len(s) != 1 || second.prefill([]byte(s[0])) != "The quick brown" {
		t.Fatalf("first deployment asked %d times, second %d (%v); want once each, the second with the prefill", f, len(s), s)
	}
	if n := len(spare.requests()); n != 0 {
		t.Errorf("the fallback was asked %d times, want 0", n)
	}
	if n := continuations(g, "continued"); n != 1 {
		t.Errorf("gateway_stream_continuations_total{outcome=continued} = %d; want 1", n)
	}
	for d, outcome := range map[string]string{"a/fake-model": "error", "b/fake-model": "ok"} {
		if got := testutil.ToFloat64(g.Metrics.DeploymentAttempts.WithLabelValues("m", d, outcome)); got != 1 {
			t.Errorf("gateway_deployment_attempts_total{deployment=%s,outcome=%s} = %v, want 1", d, outcome, got)
		}
	}
}

// TestDeployments_ReloadKeepsCircuit: a reload that keeps a deployment keeps its open
// circuit (the Server's breakers outlive the configuration); one that removes the
// deployment drops it from the gauge.
func TestDeployments_ReloadKeepsCircuit(t *testing.T) {
	main, spare := newFlaky(t, "from main"), newFlaky(t, "from spare")
	clock := newFakeClock()
	yaml := fmt.Sprintf(deployedBreakerYAML, main.srv.URL, spare.srv.URL)
	g := gatewaytest.StartYAML(t, yaml, gatewaytest.Options{Runtime: proxy.TestRuntime, Clock: clock.Now})
	main.down.Store(true)
	for i := 0; i < 4; i++ {
		if text, _, err := chatOnce(t, g, "pool", false); err != nil || text != "from spare" {
			t.Fatalf("request %d: %q %v", i, text, err)
		}
	}
	main.down.Store(false)
	if err := g.Server.Apply(gatewaytest.Parse(t, yaml+"\nlog: {level: debug}\n")); err != nil {
		t.Fatal(err)
	}
	hits := main.hits.Load()
	for i := 0; i < 4; i++ {
		if text, _, err := chatOnce(t, g, "pool", false); err != nil || text != "from spare" {
			t.Fatalf("after the reload, request %d: %q %v, want spare's answer (main's circuit stays open)", i, text, err)
		}
	}
	if n := main.hits.Load() - hits; n != 0 || hits != 2 {
		t.Errorf("main got %d requests before the reload and %d after, want 2 and 0", hits, n)
	}
	// Without main's deployment nor model direct, its circuit leaves the gauge.
	without := strings.Replace(strings.Replace(yaml, "      - {backend: main, upstream_model: gpt-main}\n", "", 1), "  direct: {backend: main, upstream_model: gpt-main}\n", "", 1)
	if err := g.Server.Apply(gatewaytest.Parse(t, without)); err != nil {
		t.Fatal(err)
	}
	if n := testutil.CollectAndCount(g.Metrics.Circuits.State); n != 1 {
		t.Errorf("gateway_circuit_state has %d series after main's deployment was removed, want 1 (spare's)", n)
	}
}

// TestDeployments_CircuitSharedThroughRedis: two gateways on one redis-server (state type
// redis): the failures that open main's circuit on replica a take main's deployment out of
// the balance on replica b too, whose requests all go to spare; after the cooldown b's
// probe finds main up and both replicas close it.
func TestDeployments_CircuitSharedThroughRedis(t *testing.T) {
	rs := redistest.Start(t)
	main, spare := newFlaky(t, "from main"), newFlaky(t, "from spare")
	clock := newFakeClock()
	yaml := fmt.Sprintf(deployedBreakerYAML, main.srv.URL, spare.srv.URL) + fmt.Sprintf("state: {type: redis, url: %q, timeout: 2s}\n", rs.URL())
	a := gatewaytest.StartYAML(t, yaml, gatewaytest.Options{Runtime: proxy.TestRuntime, Clock: clock.Now})
	b := gatewaytest.StartYAML(t, yaml, gatewaytest.Options{Runtime: proxy.TestRuntime, Clock: clock.Now})
	waitState := func(g *gatewaytest.Gateway, want float64) {
		t.Helper()
		deadline := time.Now().Add(2 * time.Second)
		for testutil.ToFloat64(g.Metrics.Circuits.State.WithLabelValues("main", "gpt-main")) != want {
			if time.Now().After(deadline) {
				t.Fatalf("main's circuit state %v, want %v", testutil.ToFloat64(g.Metrics.Circuits.State.WithLabelValues("main", "gpt-main")), want)
			}
			time.Sleep(2 * time.Millisecond)
		}
	}
	main.down.Store(true)
	for i := 0; i < 4; i++ {
		if text, _, err := chatOnce(t, a, "pool", false); err != nil || text != "from spare" {
			t.Fatalf("replica a, request %d: %q %v", i, text, err)
		}
	}
	waitState(a, 1)
	waitState(b, 1)
	hits := main.hits.Load()
	for i := 0; i < 4; i++ {
		if text, _, err := chatOnce(t, b, "pool", i%2 == 1); err != nil || text != "from spare" {
			t.Fatalf("replica b, request %d: %q %v", i, text, err)
		}
	}
	if n := main.hits.Load() - hits; n != 0 {
		t.Fatalf("replica b sent main %d requests while a had opened its circuit", n)
	}
	main.down.Store(false)
	clock.Advance(31 * time.Second)
	answered := map[string]int{}
	for i := 0; i < 4; i++ {
		text, _, err := chatOnce(t, b, "pool", false)
		if err != nil {
			t.Fatalf("replica b after the cooldown: %v", err)
		}
		answered[text]++
	}
	if answered["from main"] == 0 {
		t.Fatalf("after the cooldown b's answers were %v, want main serving again", answered)
	}
	waitState(b, 0)
	waitState(a, 0)
}
