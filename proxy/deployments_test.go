package proxy

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

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

// A reload keeps the in-flight count, the latency EWMA and the rest of every deployment
// that still exists, and the affinity map; a model with one backend has no deployments.
func TestReloadKeepsDeploymentState(t *testing.T) {
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
	rt, err := newRuntime(parseConfig(t, `
backends:
  nokey: {type: anthropic, base_url: "http://127.0.0.1:1"}
  a: {type: anthropic, base_url: "http://127.0.0.1:1", api_key: k}
  b: {type: anthropic, base_url: "http://127.0.0.1:1", api_key: k}
models:
  two: {deployments: [{backend: nokey}, {backend: a}, {backend: b}]}
  one: {deployments: [{backend: nokey}, {backend: a}]}
  none: {deployments: [{backend: nokey}, {backend: nokey, upstream_model: other}]}
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
}
