package balance

import (
	"context"
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"
)

// Strategy is how a Set chooses among the usable deployments of its best tier.
type Strategy uint8

const (
	// Weighted is smooth weighted round robin (nginx's): over any run of picks among the
	// same deployments, each is chosen in proportion to its weight, interleaved.
	Weighted Strategy = iota
	// LeastBusy is the power of two choices: two distinct deployments drawn at random,
	// the one with fewer requests in flight taken (the first drawn on a tie).
	LeastBusy
	// Latency takes the deployment with the lowest EWMA of its time to first token
	// (Done's ttft; alpha EWMAAlpha); one not measured yet counts as 0, so each is tried.
	// Ties go to fewer in flight, then to the first configured.
	Latency
	// Cost takes the cheapest priced deployment (Spec.Price); unpriced ones come after
	// every priced one. Ties go to fewer in flight, then to the first configured.
	Cost
)

// EWMAAlpha is the weight of a new time-to-first-token sample in the Latency EWMA.
const EWMAAlpha = 0.3

// DefaultRest is how long a deployment that answered 429 without a Retry-After is left
// out; MaxRest caps a Retry-After.
const (
	DefaultRest = 5 * time.Second
	MaxRest     = 10 * time.Minute
)

// MaxDeployments is the most deployments a Set holds (Tried's size).
const MaxDeployments = 128

// ParseStrategy returns the strategy named s: weighted ("" too), least_busy, latency,
// cost.
func ParseStrategy(s string) (Strategy, bool) {
	switch s {
	case "", "weighted":
		return Weighted, true
	case "least_busy":
		return LeastBusy, true
	case "latency":
		return Latency, true
	case "cost":
		return Cost, true
	}
	return 0, false
}

// Health tells whether a deployment may be called now: a circuit breaker keyed by
// deployment name. Allow is asked only for the deployment about to be called (it may
// let one probe through after a cooldown); Record reports the outcome of each call
// Allow let through.
type Health interface {
	Allow(key string, now time.Time) bool
	Record(key string, ok bool, now time.Time)
}

// alwaysHealthy is the Health of a Set given none.
type alwaysHealthy struct{}

func (alwaysHealthy) Allow(string, time.Time) bool   { return true }
func (alwaysHealthy) Record(string, bool, time.Time) {}

// Spec is one configured deployment.
type Spec struct {
	// Name identifies the deployment within its model: "<backend>/<upstream_model>". It
	// is the Health key, the affinity value and the metric label.
	Name string
	// Weight is its share under Weighted; below 1 counts as 1.
	Weight int
	// Priority is its tier: 0 first; a higher tier is used only when no deployment of a
	// lower one is usable.
	Priority int
	// MaxConns bounds its requests in flight; 0: no bound.
	MaxConns int
	// RequestsPerMinute and TokensPerMinute are its provider's quota, counted in clock
	// minute windows by this process, and by every replica with Options.Quotas; 0: none.
	RequestsPerMinute, TokensPerMinute int64
	// Price is what it costs (any unit, the same for every deployment of the set: the
	// gateway uses USD per million input plus output tokens); Priced says it has one.
	Price  float64
	Priced bool
}

// State is the live state of one deployment: shared, by name, between the Set of a
// config and the Set that replaces it on reload. Every field is atomic.
type State struct {
	inflight atomic.Int64
	// ewma is the float64 bits of the time-to-first-token EWMA in seconds; 0: none yet.
	ewma atomic.Uint64
	// restUntil is the unix nanosecond until which the deployment is left out (429).
	restUntil atomic.Int64
	// window is the start (unix nanoseconds) of the clock minute window; reqs and tokens
	// its counts (every replica's as of the last quota exchange, and this one's since);
	// pendReqs and pendTokens this replica's counts not yet exchanged (quota.go).
	window               atomic.Int64
	reqs, tokens         atomic.Int64
	pendReqs, pendTokens atomic.Int64
}

// InFlight returns the deployment's requests in flight.
func (st *State) InFlight() int64 { return st.inflight.Load() }

// EWMA returns the deployment's time-to-first-token EWMA; 0 before any sample.
func (st *State) EWMA() time.Duration {
	return time.Duration(math.Float64frombits(st.ewma.Load()) * float64(time.Second))
}

// roll starts a new minute window when the clock minute of the current one is over.
func (st *State) roll(now int64) {
	w := st.window.Load()
	if cur := window(now); cur != w && st.window.CompareAndSwap(w, cur) {
		st.reqs.Store(0)
		st.tokens.Store(0)
		st.pendReqs.Store(0)
		st.pendTokens.Store(0)
	}
}

// deployment is one deployment of a Set.
type deployment struct {
	Spec
	st *State
	// current is the smooth weighted round robin's running weight (guarded by Set.mu).
	current int64
}

// Options configure a Set.
type Options struct {
	// Model names the set (its affinity keys in a shared store).
	Model    string
	Strategy Strategy
	// Health is the breaker; nil: every deployment is healthy.
	Health Health
	// Rand returns uniformly random numbers (LeastBusy); nil: math/rand/v2.
	Rand func() uint64
	// Affinity keeps conversations on their deployment; nil: none.
	Affinity Affinity
	// Previous is the Set this one replaces: the states of deployments of the same name
	// are taken over.
	Previous *Set
	// Quotas shares the deployments' quota counts and rests with the other replicas
	// (quota.go); nil: this process's own. QuotaSync is how often; 0: DefaultQuotaSync;
	// negative: only when SyncQuotas is called.
	Quotas    QuotaStore
	QuotaSync time.Duration
}

// Set is one model's deployments.
type Set struct {
	model    string
	strategy Strategy
	health   Health
	rand     func() uint64
	aff      Affinity

	mu   sync.Mutex
	deps []deployment

	quotas    QuotaStore
	syncEvery time.Duration
	// nextSync is when (unix nanoseconds) the next quota exchange is due.
	nextSync atomic.Int64
}

// New returns the Set of specs (at most MaxDeployments, names distinct: the caller
// validates them).
func New(specs []Spec, o Options) *Set {
	s := &Set{model: o.Model, strategy: o.Strategy, health: o.Health, rand: o.Rand, aff: o.Affinity,
		deps: make([]deployment, len(specs)), quotas: o.Quotas, syncEvery: o.QuotaSync}
	if s.syncEvery == 0 {
		s.syncEvery = DefaultQuotaSync
	}
	if s.health == nil {
		s.health = alwaysHealthy{}
	}
	if s.rand == nil {
		s.rand = rand.Uint64
	}
	for i, sp := range specs {
		if sp.Weight < 1 {
			sp.Weight = 1
		}
		s.deps[i] = deployment{Spec: sp}
		if o.Previous != nil {
			if j := o.Previous.Index(sp.Name); j >= 0 {
				s.deps[i].st = o.Previous.deps[j].st
			}
		}
		if s.deps[i].st == nil {
			s.deps[i].st = &State{}
		}
	}
	return s
}

// Len returns the number of deployments.
func (s *Set) Len() int { return len(s.deps) }

// Name returns the name of deployment i.
func (s *Set) Name(i int) string { return s.deps[i].Name }

// State returns the live state of deployment i.
func (s *Set) State(i int) *State { return s.deps[i].st }

// Index returns the index of the deployment named name, or -1.
func (s *Set) Index(name string) int {
	for i := range s.deps {
		if s.deps[i].Name == name {
			return i
		}
	}
	return -1
}

// Tried is the set of deployments a request tried already (by index).
type Tried [MaxDeployments / 64]uint64

// Add adds deployment i.
func (t *Tried) Add(i int) { t[i>>6] |= 1 << (i & 63) }

// Has reports whether deployment i is in t.
func (t *Tried) Has(i int) bool { return t[i>>6]&(1<<(i&63)) != 0 }

// Choice is the deployment chosen for one attempt.
type Choice struct {
	// Index is the deployment's index; -1 when none is usable.
	Index int
	// Affine is set when the request had an affinity key; Hit when it went to the
	// deployment the key was stored with.
	Affine, Hit bool
	// Unhealthy is how many deployments Health refused while choosing; Refused holds
	// them.
	Unhealthy int
	Refused   Tried
}

// OK reports whether a deployment was chosen.
func (c Choice) OK() bool { return c.Index >= 0 }

// Pick chooses the deployment of one attempt at now and counts it in flight (Done ends
// it): the deployment stored for key (an affinity key, 0 for none) while it is usable
// and in the best usable tier, else the strategy's choice, which key is then stored
// with. Deployments in tried, resting after a 429, at max_conns, over a minute quota or
// refused by Health are left out; none left is Index -1. Only the Redis affinity store
// does I/O, one round trip, under ctx.
func (s *Set) Pick(ctx context.Context, now time.Time, key uint64, tried *Tried) Choice {
	if key == 0 || s.aff == nil {
		s.mu.Lock()
		c := s.choose(now, tried, -1, true)
		s.mu.Unlock()
		return c
	}
	if m, ok := s.aff.(*Memory); ok {
		s.mu.Lock()
		prefer := s.Index(m.get(s.model, key, now))
		c := s.choose(now, tried, prefer, true)
		c.Affine = true
		if c.Index >= 0 && !c.Hit {
			m.put(s.model, key, s.deps[c.Index].Name, now)
		}
		s.mu.Unlock()
		return c
	}
	// A shared store: the candidate goes with the one round trip, which stores it unless
	// the key has a deployment already.
	s.mu.Lock()
	cand := s.choose(now, tried, -1, false)
	s.mu.Unlock()
	if cand.Index < 0 {
		return cand
	}
	candName := s.deps[cand.Index].Name
	stored, found, err := s.aff.Lookup(ctx, s.model, key, candName)
	prefer := cand.Index
	if err == nil {
		prefer = s.Index(stored)
	}
	s.mu.Lock()
	c := s.choose(now, tried, prefer, true)
	s.mu.Unlock()
	c.Affine = true
	c.Hit = c.Hit && err == nil && found
	if c.Index >= 0 && c.Index != prefer && err == nil {
		// The stored deployment is not usable now: the conversation moves (rare: a
		// second round trip).
		_ = s.aff.Store(ctx, s.model, key, s.deps[c.Index].Name)
	}
	return c
}

// usable reports whether deployment d may be chosen at now (Health aside).
func (d *deployment) usable(now int64) bool {
	st := d.st
	if st.restUntil.Load() > now {
		return false
	}
	if d.MaxConns > 0 && st.inflight.Load() >= int64(d.MaxConns) {
		return false
	}
	if d.RequestsPerMinute > 0 || d.TokensPerMinute > 0 {
		st.roll(now)
		if d.RequestsPerMinute > 0 && st.reqs.Load() >= d.RequestsPerMinute {
			return false
		}
		if d.TokensPerMinute > 0 && st.tokens.Load() >= d.TokensPerMinute {
			return false
		}
	}
	return true
}

// choose picks under s.mu: prefer (an index, -1 for none) when it is usable, healthy and
// in the best usable tier, else the strategy's choice in that tier. commit counts the
// choice (in flight, window, round robin) and asks Health; without it nothing changes.
func (s *Set) choose(now time.Time, tried *Tried, prefer int, commit bool) Choice {
	ns := now.UnixNano()
	var out Tried // refused by Health in this call
	if tried != nil {
		out = *tried
	}
	c := Choice{Index: -1}
	for {
		tier := math.MaxInt
		for i := range s.deps {
			d := &s.deps[i]
			if d.Priority < tier && !out.Has(i) && d.usable(ns) {
				tier = d.Priority
			}
		}
		if tier == math.MaxInt {
			return c
		}
		i := -1
		if prefer >= 0 && !out.Has(prefer) && s.deps[prefer].Priority == tier && s.deps[prefer].usable(ns) {
			i = prefer
		} else {
			i = s.strategyPick(tier, &out, ns, commit)
		}
		d := &s.deps[i]
		if commit && !s.health.Allow(d.Name, now) {
			out.Add(i)
			c.Refused.Add(i)
			c.Unhealthy++
			continue
		}
		c.Index, c.Hit = i, i == prefer
		if commit {
			if s.strategy == Weighted && i != prefer {
				s.commitRoundRobin(i, tier, &out, ns)
			}
			d.st.inflight.Add(1)
			if d.RequestsPerMinute > 0 || d.TokensPerMinute > 0 {
				d.st.reqs.Add(1)
				d.st.pendReqs.Add(1)
			}
			s.maybeSync(ns)
		}
		return c
	}
}

// strategyPick returns the strategy's choice among the usable deployments of tier not in
// out (there is one at least).
func (s *Set) strategyPick(tier int, out *Tried, ns int64, commit bool) int {
	switch s.strategy {
	case LeastBusy:
		return s.twoChoices(tier, out, ns)
	case Latency:
		return s.best(tier, out, ns, func(d *deployment) float64 { return math.Float64frombits(d.st.ewma.Load()) })
	case Cost:
		return s.best(tier, out, ns, func(d *deployment) float64 {
			if !d.Priced {
				return math.Inf(1)
			}
			return d.Price
		})
	}
	// Weighted: the largest current+weight wins (the commit adds the weights).
	best, bestW := -1, int64(math.MinInt64)
	for i := range s.deps {
		d := &s.deps[i]
		if d.Priority != tier || out.Has(i) || !d.usable(ns) {
			continue
		}
		if w := d.current + int64(d.Weight); w > bestW {
			best, bestW = i, w
		}
	}
	return best
}

// commitRoundRobin advances the smooth weighted round robin for choice i among the
// usable deployments of tier: each gains its weight, i loses the total.
func (s *Set) commitRoundRobin(i, tier int, out *Tried, ns int64) {
	var total int64
	for j := range s.deps {
		d := &s.deps[j]
		if d.Priority != tier || out.Has(j) || !d.usable(ns) {
			continue
		}
		d.current += int64(d.Weight)
		total += int64(d.Weight)
	}
	s.deps[i].current -= total
}

// best returns the usable deployment of tier with the lowest score; ties go to fewer in
// flight, then to the lower index.
func (s *Set) best(tier int, out *Tried, ns int64, score func(*deployment) float64) int {
	best, bestScore, bestBusy := -1, math.Inf(1), int64(math.MaxInt64)
	for i := range s.deps {
		d := &s.deps[i]
		if d.Priority != tier || out.Has(i) || !d.usable(ns) {
			continue
		}
		sc, busy := score(d), d.st.inflight.Load()
		if best < 0 || sc < bestScore || (sc == bestScore && busy < bestBusy) {
			best, bestScore, bestBusy = i, sc, busy
		}
	}
	return best
}

// twoChoices draws two distinct usable deployments of tier at random and returns the
// one with fewer in flight (the first on a tie).
func (s *Set) twoChoices(tier int, out *Tried, ns int64) int {
	n := 0
	for i := range s.deps {
		d := &s.deps[i]
		if d.Priority == tier && !out.Has(i) && d.usable(ns) {
			n++
		}
	}
	a := int(s.rand() % uint64(n))
	b := a
	if n > 1 {
		b = int(s.rand() % uint64(n-1))
		if b >= a {
			b++
		}
	}
	ia, ib := s.nth(tier, out, ns, a), s.nth(tier, out, ns, b)
	if s.deps[ib].st.inflight.Load() < s.deps[ia].st.inflight.Load() {
		return ib
	}
	return ia
}

// nth returns the index of the k-th (from 0) usable deployment of tier not in out.
func (s *Set) nth(tier int, out *Tried, ns int64, k int) int {
	for i := range s.deps {
		d := &s.deps[i]
		if d.Priority == tier && !out.Has(i) && d.usable(ns) {
			if k == 0 {
				return i
			}
			k--
		}
	}
	return -1
}

// Outcome is how an attempt on a deployment ended.
type Outcome struct {
	// OK: the deployment answered (a client error such as 400 included); false for a
	// failure of the deployment (5xx, timeout, connection, 429, rejected credential),
	// recorded with Health.
	OK bool
	// Unknown: the attempt says nothing of the deployment's health (a 429, the client
	// leaving before it answered, the gateway's own connection pool full): Health is not
	// told, whatever OK says.
	Unknown bool
	// RateLimited: it answered 429; RetryAfter is its Retry-After (0: none, DefaultRest).
	RateLimited bool
	RetryAfter  time.Duration
	// TTFT is the time to the first token (or the whole answer); 0: not measured (the
	// EWMA is left as it is).
	TTFT time.Duration
	// Tokens are the tokens it served, for its tokens-per-minute window.
	Tokens int64
}

// Done ends an attempt Pick chose (deployment i) at now.
func (s *Set) Done(i int, o Outcome, now time.Time) {
	d := &s.deps[i]
	st := d.st
	st.inflight.Add(-1)
	if !o.Unknown {
		s.health.Record(d.Name, o.OK, now)
	}
	if o.RateLimited {
		rest := o.RetryAfter
		if rest <= 0 {
			rest = DefaultRest
		}
		st.restUntil.Store(now.Add(min(rest, MaxRest)).UnixNano())
	}
	if o.Tokens > 0 && d.TokensPerMinute > 0 {
		st.tokens.Add(o.Tokens)
		st.pendTokens.Add(o.Tokens)
	}
	if o.OK && o.TTFT > 0 {
		sample := o.TTFT.Seconds()
		for {
			old := st.ewma.Load()
			prev := math.Float64frombits(old)
			next := sample
			if prev > 0 {
				next = prev + EWMAAlpha*(sample-prev)
			}
			if st.ewma.CompareAndSwap(old, math.Float64bits(next)) {
				break
			}
		}
	}
}

// Resting reports whether deployment i is left out at now after a 429.
func (s *Set) Resting(i int, now time.Time) bool {
	return s.deps[i].st.restUntil.Load() > now.UnixNano()
}
