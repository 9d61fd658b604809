package breaker

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// State is a circuit's state; its values are those of the gauge gateway_circuit_state.
type State uint32

// The states of a circuit.
const (
	Closed   State = 0 // calls go through; failures are counted
	Open     State = 1 // calls are refused until the cooldown passed
	HalfOpen State = 2 // one call (the probe) is let through; the others are refused
)

// String is the state's name: closed, open or half_open.
func (s State) String() string {
	switch s {
	case Open:
		return "open"
	case HalfOpen:
		return "half_open"
	}
	return "closed"
}

// Policy is when a circuit opens and for how long.
type Policy struct {
	// Failures is how many consecutive failures open the circuit; 0 or less: 1.
	Failures int
	// Cooldown is how long an open circuit refuses calls before its probe; it is also how
	// long a probe holds its turn. 0 or less: one second.
	Cooldown time.Duration
}

func (p Policy) failures() int32 {
	return int32(max(p.Failures, 1))
}

func (p Policy) cooldown() time.Duration {
	if p.Cooldown <= 0 {
		return time.Second
	}
	return p.Cooldown
}

// Circuit names one circuit for [Set.Configure]: its key (by convention
// "<backend>/<upstream model>"), the backend and model it is about (for observers), and
// its policy.
type Circuit struct {
	Key, Backend, Model string
	Policy              Policy
}

// Transition is a circuit's change of state, told to the Observer.
type Transition struct {
	Key, Backend, Model string
	From, To            State
	// Until is, for To open, when its cooldown ends; for To half-open, when the probe's
	// turn ends.
	Until time.Time
	// Remote is set when another replica's opening or probe caused it (Options.Redis).
	Remote bool
}

// Observer is told of every transition (after the circuit's lock is released).
type Observer interface {
	Transition(Transition)
}

// Options configure a Set. The zero value is a Set of this process alone that tells no one.
type Options struct {
	// Observer, when not nil, is told of every transition.
	Observer Observer
	// Redis, when not nil, shares openings and probes with the other replicas using the
	// same server and Prefix (see the package doc). The Set does not close it.
	Redis redis.UniversalClient
	// Prefix starts every Redis key and the channel name.
	Prefix string
	// Timeout bounds one Redis round trip; 0 or less: one second.
	Timeout time.Duration
	// Errors, when not nil, is told of every failed Redis operation (op names it).
	Errors func(op string, err error)
}

// Set is the circuits of a gateway, by key. Safe for concurrent use.
type Set struct {
	obs    Observer
	table  atomic.Pointer[map[string]*circuit]
	mu     sync.Mutex // serialises Configure
	shared *shared    // nil without Options.Redis
}

type circuit struct {
	Circuit // Policy is guarded by mu
	// state and failures are written under mu, and read without it on the fast paths.
	state    atomic.Uint32
	failures atomic.Int32
	// held is the end of a hold (Hold), Unix nanoseconds; 0: none.
	held atomic.Int64
	mu   sync.Mutex
	// until is, open, the end of the cooldown; half-open, the end of the probe's turn.
	until time.Time
}

// New returns an empty Set; with o.Redis it subscribes to the other replicas' transitions
// until Close.
func New(o Options) *Set {
	s := &Set{obs: o.Observer}
	empty := map[string]*circuit{}
	s.table.Store(&empty)
	if o.Redis != nil {
		s.shared = newShared(s, o)
	}
	return s
}

// Close stops the subscription to the other replicas, if any.
func (s *Set) Close() {
	if s.shared != nil {
		s.shared.close()
	}
}

// Configure sets the circuits: keys not in cs are dropped, new ones start closed, and the
// ones that remain keep their state (a reload does not close an open circuit) with their
// new policy. The first entry of a key given twice wins.
func (s *Set) Configure(cs []Circuit) {
	s.mu.Lock()
	defer s.mu.Unlock()
	old := *s.table.Load()
	next := make(map[string]*circuit, len(cs))
	for _, c := range cs {
		if _, dup := next[c.Key]; dup {
			continue
		}
		if prev, ok := old[c.Key]; ok {
			prev.mu.Lock()
			prev.Policy = c.Policy
			prev.mu.Unlock()
			next[c.Key] = prev
			continue
		}
		next[c.Key] = &circuit{Circuit: c}
	}
	s.table.Store(&next)
	if s.shared != nil {
		s.shared.resync()
	}
}

func (s *Set) lookup(key string) *circuit {
	return (*s.table.Load())[key]
}

// Verdict is Check's answer.
type Verdict struct {
	// Allow reports whether the call may be made.
	Allow bool
	// State is the circuit's state (Closed for a key without one).
	State State
	// Held is set when a closed circuit refuses the call because of a Hold.
	Held bool
	// RetryIn is, for a refused call, how long until the circuit may let one through.
	RetryIn time.Duration
}

// Allow reports whether key's upstream may be called now: true when closed, false while
// open, true for exactly one probe once the cooldown passed (half-open). A closed circuit
// under a Hold refuses too.
func (s *Set) Allow(key string, now time.Time) bool {
	return s.Check(key, now).Allow
}

// Check is Allow with the reason of a refusal.
func (s *Set) Check(key string, now time.Time) Verdict {
	c := s.lookup(key)
	if c == nil {
		return Verdict{Allow: true}
	}
	if State(c.state.Load()) == Closed {
		if h := c.held.Load(); h != 0 && now.UnixNano() < h {
			return Verdict{State: Closed, Held: true, RetryIn: time.Duration(h - now.UnixNano())}
		}
		return Verdict{Allow: true}
	}
	c.mu.Lock()
	st := State(c.state.Load())
	if st == Closed || now.Before(c.until) {
		c.mu.Unlock()
		if st == Closed {
			return Verdict{Allow: true}
		}
		return Verdict{State: st, RetryIn: c.until.Sub(now)}
	}
	// The cooldown, or a probe's turn, is over: this call is the probe, unless another
	// replica claimed it.
	cool := c.Policy.cooldown()
	if s.shared != nil && !s.shared.claim(c.Key, cool) {
		c.until = now.Add(cool)
		c.mu.Unlock()
		return Verdict{State: st, RetryIn: cool}
	}
	c.until = now.Add(cool)
	c.state.Store(uint32(HalfOpen))
	t := Transition{Key: c.Key, Backend: c.Backend, Model: c.Model, From: st, To: HalfOpen, Until: c.until}
	c.mu.Unlock()
	if st != HalfOpen {
		s.notify(t)
	}
	return Verdict{Allow: true, State: HalfOpen}
}

// CheckAt is Check with the time read from clock only when the verdict depends on it: not
// for a closed circuit without a hold (the common case, so a request passes its circuit
// without a clock reading), else once.
func (s *Set) CheckAt(key string, clock func() time.Time) Verdict {
	if c := s.lookup(key); c == nil || State(c.state.Load()) == Closed && c.held.Load() == 0 {
		return Verdict{Allow: true}
	}
	return s.Check(key, clock())
}

// RecordAt is Record with the time read from clock only when the outcome changes
// something: not for a success on a closed circuit with no failures counted and no hold
// (the common case), else once.
func (s *Set) RecordAt(key string, ok bool, clock func() time.Time) {
	c := s.lookup(key)
	if c == nil || ok && State(c.state.Load()) == Closed && c.failures.Load() == 0 && c.held.Load() == 0 {
		return
	}
	s.Record(key, ok, clock())
}

// Record reports the outcome of a call Allow let through: ok for a success (or any answer
// that shows the upstream is up), false for a failure. It ignores keys without a circuit
// and outcomes of calls that end while the circuit is open.
func (s *Set) Record(key string, ok bool, now time.Time) {
	c := s.lookup(key)
	if c == nil || ok && State(c.state.Load()) == Closed && c.failures.Load() == 0 && c.held.Load() == 0 {
		return
	}
	if ok {
		c.held.Store(0) // it answered: a hold is over
	}
	c.mu.Lock()
	from := State(c.state.Load())
	to := from
	switch {
	case from == Closed && ok:
		c.failures.Store(0)
	case from == Closed:
		n := c.failures.Load() + 1
		c.failures.Store(n)
		if n >= c.Policy.failures() {
			to = Open
		}
	case from == HalfOpen && ok:
		to = Closed
	case from == HalfOpen:
		to = Open
	}
	if to == from {
		c.mu.Unlock()
		return
	}
	c.failures.Store(0)
	c.state.Store(uint32(to))
	if to == Open {
		c.until = now.Add(c.Policy.cooldown())
	} else {
		c.until = time.Time{}
	}
	t := Transition{Key: c.Key, Backend: c.Backend, Model: c.Model, From: from, To: to, Until: c.until}
	c.mu.Unlock()
	if s.shared != nil {
		s.shared.publish(t, now)
	}
	s.notify(t)
}

// Hold refuses key's calls until until while its circuit is closed (Check says Held),
// without counting a failure: for an upstream that asked to be left alone (429 with
// Retry-After). A later hold extends an earlier one, never shortens it; a success
// recorded ends it.
func (s *Set) Hold(key string, until time.Time) {
	c := s.lookup(key)
	if c == nil {
		return
	}
	u := until.UnixNano()
	for {
		h := c.held.Load()
		if h >= u || c.held.CompareAndSwap(h, u) {
			return
		}
	}
}

// State returns key's state and, when not closed, how long until its cooldown or its
// probe's turn ends (as of now).
func (s *Set) State(key string, now time.Time) (State, time.Duration) {
	c := s.lookup(key)
	if c == nil {
		return Closed, 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	st := State(c.state.Load())
	if st == Closed {
		return st, 0
	}
	return st, max(c.until.Sub(now), 0)
}

// apply takes another replica's transition of key: open until until, or closed.
func (s *Set) apply(key string, open bool, until time.Time) {
	c := s.lookup(key)
	if c == nil {
		return
	}
	c.mu.Lock()
	from := State(c.state.Load())
	var t Transition
	switch {
	case open && (from != Open || until.After(c.until)):
		c.until = until
		c.failures.Store(0)
		c.state.Store(uint32(Open))
		t = Transition{Key: c.Key, Backend: c.Backend, Model: c.Model, From: from, To: Open, Until: until, Remote: true}
	case !open && from != Closed:
		c.until = time.Time{}
		c.failures.Store(0)
		c.state.Store(uint32(Closed))
		t = Transition{Key: c.Key, Backend: c.Backend, Model: c.Model, From: from, To: Closed, Remote: true}
	}
	c.mu.Unlock()
	if t.From != t.To {
		s.notify(t)
	}
}

func (s *Set) notify(t Transition) {
	if s.obs != nil {
		s.obs.Transition(t)
	}
}

// keys returns the configured keys.
func (s *Set) keys() []string {
	t := *s.table.Load()
	ks := make([]string, 0, len(t))
	for k := range t {
		ks = append(ks, k)
	}
	return ks
}

// ctx is a context bounded by d.
func ctxFor(d time.Duration) (context.Context, context.CancelFunc) {
	if d <= 0 {
		d = time.Second
	}
	return context.WithTimeout(context.Background(), d)
}
