package proxy

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/agate-gateway/agate/balance"
)

const deploymentsBefore = `
backends:
  a: {type: mock}
  b: {type: mock}
  c: {type: mock}
models:
  pool:
    deployments: [{backend: a}, {backend: b}]
    balance: latency
    affinity: prefix
  solo: {backend: a}
`

// deploymentsAfter drops deployment a, adds c and changes the strategy.
var deploymentsAfter = strings.NewReplacer("[{backend: a}, {backend: b}]", "[{backend: b}, {backend: c}]",
	"balance: latency", "balance: least_busy").Replace(deploymentsBefore)

// TestRouteLogMembers: every route and key of a runtime, a model's deployments' routes
// included (their backends are set after the model's route is made), carries the access
// line's members of its own label, backend and name.
func TestRouteLogMembers(t *testing.T) {
	rt, err := newRuntime(parseConfig(t, deploymentsBefore+"keys:\n  k1: {key: sk-1, models: [\"*\"]}\n  \"k\\\"2\": {key: sk-2, models: [\"*\"]}\n", nil),
		nil, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	check := func(r *route) {
		n++
		if want := routeLogMembers(r.label(), r.backend.name); r.logMembers != want {
			t.Errorf("route %s (deployment %q): logMembers %s, want %s", r.name, r.deployment, r.logMembers, want)
		}
	}
	for _, r := range rt.routes {
		check(r)
		if r.deploy != nil {
			for _, dr := range r.deploy.routes {
				check(dr)
			}
		}
	}
	if n != 4 { // solo, pool and pool's two deployments
		t.Errorf("%d routes checked, want 4", n)
	}
	if len(rt.keys) != 2 {
		t.Fatalf("%d keys", len(rt.keys))
	}
	for _, k := range append(rt.keys, anonymousKey) {
		if want := keyLogMembers(k.name); k.logMembers != want {
			t.Errorf("key %q: logMembers %s, want %s", k.name, k.logMembers, want)
		}
	}
}

// A reload keeps the in-flight count, the latency EWMA and the rest of every deployment
// that still exists, and the affinity map; a model with one backend has no deployments.
func TestReloadKeepsDeploymentState(t *testing.T) {
	t.Parallel() // nothing shared, no clock or environment of the process (#54)
	logger := slog.New(slog.DiscardHandler)
	old, err := newRuntime(parseConfig(t, deploymentsBefore, nil), nil, logger)
	if err != nil {
		t.Fatal(err)
	}
	if old.routes["solo"].deploy != nil {
		t.Fatal("a one-backend model has deployments")
	}
	set := old.routes["pool"].deploy.set
	now := time.Now()
	var notA balance.Tried
	notA.Add(set.Index("a/pool"))
	set.Pick(context.Background(), now, 0, &notA) // b: in flight across the reload
	ch := set.Pick(context.Background(), now, 0, &notA)
	set.Done(ch.Index, balance.Outcome{RateLimited: true, RetryAfter: time.Minute}, now) // b rests
	next, err := newRuntime(parseConfig(t, deploymentsAfter, nil), old, logger)
	if err != nil {
		t.Fatal(err)
	}
	ns := next.routes["pool"].deploy.set
	if ns.State(ns.Index("b/pool")) != set.State(set.Index("b/pool")) {
		t.Fatal("b's state was not kept")
	}
	if ns.State(ns.Index("b/pool")).InFlight() != 1 {
		t.Fatal("b's in-flight count was lost")
	}
	if !ns.Resting(ns.Index("b/pool"), now) {
		t.Fatal("b's rest after its 429 was lost")
	}
	if ns.State(ns.Index("c/pool")).InFlight() != 0 {
		t.Fatal("the new deployment c has state")
	}
	if next.balancing.memory == nil || next.balancing.memory != old.balancing.memory {
		t.Fatal("the affinity map was not kept")
	}
	if r := next.routes["pool"].deploy.routes[0]; r.backend.name != "b" || r.deployment != "b/pool" || r.of() != next.routes["pool"] {
		t.Fatalf("deployment route = %+v", r)
	}
}

// A deployment whose backend has no credential is left out; the model stays usable
// through the others, and is refused only when none has one.
func TestDeploymentsWithoutCredential(t *testing.T) {
	t.Parallel() // nothing shared, no clock or environment of the process (#54)
	rt, err := newRuntime(parseConfig(t, `
backends:
  nokey: {type: anthropic, base_url: "http://127.0.0.1:1"}
  a: {type: anthropic, base_url: "http://127.0.0.1:1", api_key: k}
  b: {type: anthropic, base_url: "http://127.0.0.1:1", api_key: k}
models:
  two: {deployments: [{backend: nokey}, {backend: a}, {backend: b}]}
  one: {deployments: [{backend: nokey}, {backend: a}]}
  none: {deployments: [{backend: nokey}, {backend: nokey, upstream_model: other}]}
  solo: {backend: a, fallbacks: [one, none]}
`, nil), nil, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	two, err := rt.resolve("two")
	if err != nil || two.backend.name != "a" || two.deploy == nil || two.deploy.set.Len() != 2 {
		t.Fatalf("two: %+v %v, want deployments a and b", two, err)
	}
	one, err := rt.resolve("one")
	if err != nil || one.backend.name != "a" || one.deploy != nil {
		t.Fatalf("one: %+v %v, want backend a alone", one, err)
	}
	if _, err := rt.resolve("none"); err == nil {
		t.Fatal("a model whose every deployment lacks a credential resolved")
	}
	if fb := rt.routes["solo"].fallbacks; len(fb) != 1 || fb[0] != "one" {
		t.Fatalf("fallbacks = %v, want [one]: its first deployment lacks a credential, its second has one", fb)
	}
}

// toyBreaker is a Health for tests: a deployment opens after two failures in a row, lets
// one probe through once open is cleared by the test (standing for the cooldown), and
// closes on the probe's success.
type toyBreaker struct {
	mu       sync.Mutex
	failures map[string]int
	open     map[string]bool
	cooled   map[string]bool
	probes   int
}

func (b *toyBreaker) Allow(key string, _ time.Time) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.open[key] {
		return true
	}
	if b.cooled[key] { // half-open: one probe
		b.cooled[key] = false
		b.probes++
		return true
	}
	return false
}

func (b *toyBreaker) Record(key string, ok bool, _ time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if ok {
		b.failures[key], b.open[key] = 0, false
		return
	}
	if b.failures[key]++; b.failures[key] >= 2 {
		b.open[key] = true
	}
}

// The breaker (proxy.Options.Health) takes a failing deployment out: open, it is not
// called and reads unhealthy; after the cooldown one probe goes through, and its success
// closes it.
func TestDeploymentsBreakerOpenProbeClose(t *testing.T) {
	t.Parallel() // nothing shared, no clock or environment of the process (#54)
	var failing atomic.Bool
	failing.Store(true)
	var badCalls atomic.Int32
	bad := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		badCalls.Add(1)
		if failing.Load() {
			w.WriteHeader(http.StatusInternalServerError)
			io.WriteString(w, `{"error":{"message":"boom","type":"server_error","param":null,"code":null}}`)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(completionJSON("m", "from bad"))
	}))
	t.Cleanup(bad.Close)
	good := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write(completionJSON("m", "from good"))
	}))
	t.Cleanup(good.Close)
	br := &toyBreaker{failures: map[string]int{}, open: map[string]bool{}, cooled: map[string]bool{}}
	g := startGatewayWith(t, `
backends:
  bad: {type: openai, base_url: "{{BAD}}/v1", retries: {max: 0}}
  good: {type: openai, base_url: "{{GOOD}}/v1", retries: {max: 0}}
models:
  pool: {deployments: [{backend: bad, upstream_model: m}, {backend: good, upstream_model: m}]}
`, map[string]string{"BAD": bad.URL, "GOOD": good.URL}, gatewayOptions{health: br})
	ask := func() string {
		r := g.chat("", `{"model":"pool","messages":[{"role":"user","content":"hi"}]}`)
		if r.status != 200 {
			t.Fatalf("status %d: %s", r.status, r.body)
		}
		return gjson.GetBytes(r.body, "choices.0.message.content").String()
	}
	for range 4 { // round robin: bad fails twice (each request then moves to good), opening
		if got := ask(); got != "from good" {
			t.Fatalf("answer %q", got)
		}
	}
	if !br.open["bad/m"] || badCalls.Load() != 2 {
		t.Fatalf("after two failures: open %v, bad called %d times; want open after 2", br.open["bad/m"], badCalls.Load())
	}
	for range 4 {
		ask()
	}
	if n := badCalls.Load(); n != 2 {
		t.Errorf("open, bad was called %d more times", n-2)
	}
	if v := g.metricValue("gateway_deployment_healthy", map[string]string{"model": "pool", "deployment": "bad/m"}); v != 0 {
		t.Errorf("gateway_deployment_healthy of bad = %v, want 0", v)
	}
	// The cooldown passes and bad has recovered: one probe, which closes the breaker.
	failing.Store(false)
	br.mu.Lock()
	br.cooled["bad/m"] = true
	br.mu.Unlock()
	answers := map[string]int{}
	for range 6 {
		answers[ask()]++
	}
	if br.probes != 1 || br.open["bad/m"] || answers["from bad"] != 3 {
		t.Errorf("probes %d, open %v, answers %v; want one probe, closed, and bad back in the round robin", br.probes, br.open["bad/m"], answers)
	}
}
