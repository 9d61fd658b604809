package config

import (
	"fmt"
	"math"
	"strings"
	"time"
)

// Deployment is one upstream serving a model (Model.Deployments): a backend and the model
// name sent to it, with its share of the traffic and its own limits.
type Deployment struct {
	// Backend names an entry of Config.Backends. Required. The deployments of a model
	// may be of different types (Claude on anthropic and on bedrock or vertex): a request
	// is then translated for each attempt's backend, never passed through.
	Backend string `koanf:"backend"`
	// UpstreamModel is the model name sent to this deployment. Default: the model's
	// upstream_model, else its client-facing name.
	UpstreamModel string `koanf:"upstream_model"`
	// Weight is its share under balance weighted. Default 1; at least 1.
	Weight int `koanf:"weight"`
	// Priority is its tier: 0 (default) first; deployments of a higher tier are used only
	// when no deployment of a lower one is usable (unhealthy, resting after a 429, at
	// max_conns or over its limits, or already tried by the request).
	Priority int `koanf:"priority"`
	// Limits are its provider's quota: requests_per_minute and tokens_per_minute, counted
	// in clock minutes by each replica, and by all of them together with state type redis
	// (Balancing.QuotaSync); a deployment over one is skipped until its minute passes.
	// concurrent is not used here: see MaxConns.
	Limits Limits `koanf:"limits"`
	// MaxConns bounds its requests in flight (each replica's); 0 (default): no bound.
	MaxConns int `koanf:"max_conns"`
	// Price is what its tokens cost, for balance cost. Default: the model's price.
	Price *Price `koanf:"price"`
}

// Name is the deployment's name, "<backend>/<upstream_model>": its metric label and
// the name logs, spans and the breaker use.
func (d Deployment) Name() string { return d.Backend + "/" + d.UpstreamModel }

// Balancing settings shared by every model (the affinity map).
type Balancing struct {
	// AffinityEntries bounds the in-memory affinity map (conversations remembered, all
	// models together; state type memory). 0 (default): DefaultAffinityEntries, 100000.
	AffinityEntries int `koanf:"affinity_entries"`
	// AffinityTTL is how long a conversation stays on its deployment after its last
	// request, in memory and in Redis. 0 (default): DefaultAffinityTTL, 1h.
	AffinityTTL time.Duration `koanf:"affinity_ttl"`
	// QuotaSync is how often, with state type redis, each replica exchanges its
	// deployments' per-minute counts (deployments[].limits) and 429 rests with the others
	// through Redis: the replicas together may overshoot a deployment's quota by what
	// they admit in one interval. 0 (default): 1s.
	QuotaSync time.Duration `koanf:"quota_sync"`
}

// Balance strategies (Model.Balance).
var balanceStrategies = []string{"", "weighted", "least_busy", "latency", "cost"}

// MaxDeployments is the most deployments a model may have.
const MaxDeployments = 128

// The balancing section's defaults, applied where it is used (a zero value means them).
const (
	DefaultAffinityEntries = 100000
	DefaultAffinityTTL     = time.Hour
)

// defaultDeployments fills in a model's deployments' defaults, and the model's backend
// and upstream_model from its first deployment when it has deployments and names none,
// so that what reads a model's backend sees the first deployment's.
func defaultDeployments(m *Model, name string) {
	for i := range m.Deployments {
		d := &m.Deployments[i]
		setDefault(&d.UpstreamModel, m.UpstreamModel)
		setDefault(&d.UpstreamModel, name)
		setDefault(&d.Weight, 1)
		if d.Price == nil {
			d.Price = m.Price
		}
	}
	if len(m.Deployments) > 0 {
		setDefault(&m.Backend, m.Deployments[0].Backend)
		setDefault(&m.UpstreamModel, m.Deployments[0].UpstreamModel)
	}
}

// validateDeployments checks model name's deployments, balance and affinity.
func (c *Config) validateDeployments(v *validator, name string, m Model) {
	p := "models." + name
	v.oneOf(p+".balance", m.Balance, balanceStrategies)
	if a := m.Affinity; a != "" && a != "off" && a != "prefix" && a != "user" {
		if h, ok := strings.CutPrefix(a, "header:"); !ok || !isToken(h) {
			v.addf(p+".affinity", "%q is not one of off, prefix, user, header:<name>", a)
		}
	}
	if len(m.Deployments) == 0 {
		return
	}
	if len(m.Deployments) > MaxDeployments {
		v.addf(p+".deployments", "at most %d deployments", MaxDeployments)
	}
	first := m.Deployments[0]
	if m.Backend != "" && m.Backend != first.Backend {
		v.addf(p+".backend", "a model with deployments names its backends in deployments: remove backend")
	}
	if m.Backend != "" && m.UpstreamModel != "" && m.Backend == first.Backend && first.UpstreamModel != "" && m.UpstreamModel != first.UpstreamModel {
		v.addf(p+".upstream_model", "a model with deployments names its upstream models in deployments: remove upstream_model")
	}
	seen := map[string]int{}
	for i, d := range m.Deployments {
		dp := fmt.Sprintf("%s.deployments[%d]", p, i)
		switch _, ok := c.Backends[d.Backend]; {
		case d.Backend == "":
			v.addf(dp+".backend", "required")
		case !ok:
			v.addf(dp+".backend", "unknown backend %q", d.Backend)
		}
		if j, dup := seen[d.Name()]; dup {
			v.addf(dp, "the same backend and upstream_model as deployments[%d]", j)
		}
		seen[d.Name()] = i
		if d.Weight < 0 {
			v.addf(dp+".weight", "must not be negative")
		}
		v.nonNegative(dp+".priority", d.Priority)
		v.nonNegative(dp+".max_conns", d.MaxConns)
		validateLimitFields(v, dp+".limits", d.Limits)
		if d.Limits.Concurrent != 0 {
			v.addf(dp+".limits.concurrent", "a deployment's concurrency is max_conns")
		}
		if d.Price != nil {
			for field, x := range map[string]float64{"input": d.Price.Input, "output": d.Price.Output} {
				if x < 0 || math.IsNaN(x) || math.IsInf(x, 0) {
					v.addf(dp+".price."+field, "must be a non-negative number")
				}
			}
		}
	}
}

// validateBalancing checks the balancing section.
func (c *Config) validateBalancing(v *validator) {
	v.nonNegative("balancing.affinity_entries", c.Balancing.AffinityEntries)
	v.nonNegativeDuration("balancing.affinity_ttl", c.Balancing.AffinityTTL)
	v.nonNegativeDuration("balancing.quota_sync", c.Balancing.QuotaSync)
}
