package limits

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"

	"github.com/agate-gateway/agate/limits/redistest"
)

// step is one call in a scenario: an Admit (want is the expected refusal, NoLimit for
// admitted) or, with finish set, the Finish of the finish-th Admit (counting from 1).
type step struct {
	req    *Request
	want   Limit
	finish int
	usage  Usage
}

var (
	rpm3     = &Request{Key: "k", KeyRate: Rate{RequestsPerMinute: 3}}
	tpm100   = &Request{Key: "k", KeyRate: Rate{TokensPerMinute: 100}}
	conc2    = &Request{Key: "k", KeyRate: Rate{Concurrent: 2}}
	budTok   = &Request{Key: "k", Budget: Budget{Tokens: 100, Period: time.Hour}}
	budUSD   = &Request{Key: "k", Budget: Budget{MicroUSD: 1000, Period: time.Hour}}
	modelA   = &Request{Key: "a", Model: "m", ModelRate: Rate{RequestsPerMinute: 2}}
	modelB   = &Request{Key: "b", Model: "m", ModelRate: Rate{RequestsPerMinute: 2}}
	mconcA   = &Request{Key: "a", Model: "m", ModelRate: Rate{Concurrent: 1}}
	mconcB   = &Request{Key: "b", Model: "m", ModelRate: Rate{Concurrent: 1}}
	mtokA    = &Request{Key: "a", Model: "m", ModelRate: Rate{TokensPerMinute: 10}}
	mtokB    = &Request{Key: "b", Model: "m", ModelRate: Rate{TokensPerMinute: 10}}
	keyBoth  = &Request{Key: "k", KeyRate: Rate{RequestsPerMinute: 1}, Model: "m", ModelRate: Rate{RequestsPerMinute: 5}}
	keyBoth2 = &Request{Key: "k2", KeyRate: Rate{RequestsPerMinute: 1}, Model: "m", ModelRate: Rate{RequestsPerMinute: 5}}
	free     = &Request{Key: "k"}
	resBud   = &Request{Key: "k", Budget: Budget{Tokens: 1000, Period: time.Hour}, Reserve: Usage{Tokens: 700}}
	resTPM   = &Request{Key: "k", KeyRate: Rate{TokensPerMinute: 1000}, Reserve: Usage{Tokens: 700}}
	resUSD   = &Request{Key: "k", Budget: Budget{MicroUSD: 1000, Period: time.Hour}, Reserve: Usage{MicroUSD: 700}}
	resModel = &Request{Key: "k", Model: "m", ModelRate: Rate{TokensPerMinute: 1000}, Reserve: Usage{Tokens: 700}}
	teamRPMA = &Request{Key: "a", Team: "t", TeamRate: Rate{RequestsPerMinute: 2}}
	teamRPMB = &Request{Key: "b", Team: "t", TeamRate: Rate{RequestsPerMinute: 2}}
	otherRPM = &Request{Key: "c", Team: "u", TeamRate: Rate{RequestsPerMinute: 2}}
	teamTPMA = &Request{Key: "a", Team: "t", TeamRate: Rate{TokensPerMinute: 10}}
	teamTPMB = &Request{Key: "b", Team: "t", TeamRate: Rate{TokensPerMinute: 10}}
	tconcA   = &Request{Key: "a", Team: "t", TeamRate: Rate{Concurrent: 1}}
	tconcB   = &Request{Key: "b", Team: "t", TeamRate: Rate{Concurrent: 1}}
	tbudA    = &Request{Key: "a", Team: "t", TeamBudget: Budget{Tokens: 100, Period: time.Hour}}
	tbudB    = &Request{Key: "b", Team: "t", TeamBudget: Budget{Tokens: 100, Period: time.Hour}}
	tusdA    = &Request{Key: "a", Team: "t", TeamBudget: Budget{MicroUSD: 1000, Period: time.Hour}}
	tusdB    = &Request{Key: "b", Team: "t", TeamBudget: Budget{MicroUSD: 1000, Period: time.Hour}}
	tresA    = &Request{Key: "a", Team: "t", TeamBudget: Budget{Tokens: 1000, Period: time.Hour}, Reserve: Usage{Tokens: 700}}
	tresB    = &Request{Key: "b", Team: "t", TeamBudget: Budget{Tokens: 1000, Period: time.Hour}, Reserve: Usage{Tokens: 700}}
	keyInTm  = &Request{Key: "a", KeyRate: Rate{RequestsPerMinute: 1}, Team: "t", TeamRate: Rate{RequestsPerMinute: 5}}
)

var scenarios = []struct {
	name  string
	steps []step
}{
	{"requests per minute", []step{{req: rpm3}, {req: rpm3}, {req: rpm3}, {req: rpm3, want: KeyRequests}}},
	{"tokens per minute admit while below", []step{{req: tpm100}, {finish: 1, req: tpm100, usage: Usage{Tokens: 99}},
		{req: tpm100}, {finish: 2, req: tpm100, usage: Usage{Tokens: 1}}, {req: tpm100, want: KeyTokens}}},
	{"concurrent slots", []step{{req: conc2}, {req: conc2}, {req: conc2, want: KeyConcurrent},
		{finish: 1, req: conc2}, {req: conc2}, {req: conc2, want: KeyConcurrent}}},
	{"token budget", []step{{req: budTok}, {finish: 1, req: budTok, usage: Usage{Tokens: 150}}, {req: budTok, want: BudgetTokens}}},
	{"usd budget", []step{{req: budUSD}, {finish: 1, req: budUSD, usage: Usage{Tokens: 1, MicroUSD: 999}}, {req: budUSD},
		{finish: 2, req: budUSD, usage: Usage{MicroUSD: 1}}, {req: budUSD, want: BudgetUSD}}},
	{"model requests shared by keys", []step{{req: modelA}, {req: modelB}, {req: modelA, want: ModelRequests}, {req: modelB, want: ModelRequests}}},
	{"model concurrency shared by keys", []step{{req: mconcA}, {req: mconcB, want: ModelConcurrent}, {finish: 1, req: mconcA}, {req: mconcB}}},
	{"model tokens shared by keys", []step{{req: mtokA}, {finish: 1, req: mtokA, usage: Usage{Tokens: 10}}, {req: mtokB, want: ModelTokens}}},
	{"key and model both apply", []step{{req: keyBoth}, {req: keyBoth, want: KeyRequests}, {req: keyBoth2}}},
	{"refused requests are not counted", []step{{req: rpm3}, {req: rpm3}, {req: rpm3}, {req: rpm3, want: KeyRequests}, {req: rpm3, want: KeyRequests}}},
	// A reservation counts at once; the real usage replaces it at Finish.
	{"token budget reservations", []step{{req: resBud}, {req: resBud}, {req: resBud, want: BudgetTokens},
		{finish: 1, req: resBud, usage: Usage{Tokens: 100}}, {req: resBud}, {req: resBud, want: BudgetTokens}}},
	{"key tokens per minute reservations", []step{{req: resTPM}, {req: resTPM}, {req: resTPM, want: KeyTokens},
		{finish: 1, req: resTPM, usage: Usage{Tokens: 100}}, {req: resTPM}, {req: resTPM, want: KeyTokens}}},
	{"usd budget reservations", []step{{req: resUSD}, {req: resUSD}, {req: resUSD, want: BudgetUSD},
		{finish: 1, req: resUSD, usage: Usage{MicroUSD: 100}}, {req: resUSD}, {req: resUSD, want: BudgetUSD}}},
	{"model tokens per minute reservations", []step{{req: resModel}, {req: resModel}, {req: resModel, want: ModelTokens},
		{finish: 2, req: resModel, usage: Usage{Tokens: 10}}, {req: resModel}, {req: resModel, want: ModelTokens}}},
	{"a reservation over the whole budget is admitted while some is left", []step{
		{req: &Request{Key: "k", Budget: Budget{Tokens: 1000, Period: time.Hour}, Reserve: Usage{Tokens: 5000}}},
		{req: resBud, want: BudgetTokens}}},
	// A team's limits and budget are shared by its keys, on top of each key's own.
	{"team requests shared by its keys", []step{{req: teamRPMA}, {req: teamRPMB}, {req: teamRPMA, want: TeamRequests},
		{req: teamRPMB, want: TeamRequests}, {req: otherRPM}}},
	{"team tokens shared by its keys", []step{{req: teamTPMA}, {finish: 1, req: teamTPMA, usage: Usage{Tokens: 10}}, {req: teamTPMB, want: TeamTokens}}},
	{"team concurrency shared by its keys", []step{{req: tconcA}, {req: tconcB, want: TeamConcurrent}, {finish: 1, req: tconcA}, {req: tconcB}}},
	{"team token budget shared by its keys", []step{{req: tbudA}, {finish: 1, req: tbudA, usage: Usage{Tokens: 150}}, {req: tbudB, want: TeamBudgetTokens}}},
	{"team usd budget shared by its keys", []step{{req: tusdA}, {finish: 1, req: tusdA, usage: Usage{MicroUSD: 999}}, {req: tusdB},
		{finish: 2, req: tusdB, usage: Usage{MicroUSD: 1}}, {req: tusdA, want: TeamBudgetUSD}}},
	{"team budget reservations", []step{{req: tresA}, {req: tresB}, {req: tresA, want: TeamBudgetTokens},
		{finish: 1, req: tresA, usage: Usage{Tokens: 100}}, {req: tresB}, {req: tresB, want: TeamBudgetTokens}}},
	{"a key's own limit applies inside its team", []step{{req: keyInTm}, {req: keyInTm, want: KeyRequests}, {req: teamRPMB}}},
	{"no limits", []step{{req: free}, {req: free}, {finish: 1, req: free, usage: Usage{Tokens: 1 << 40}}, {req: free}}},
}

// runScenarios runs every scenario on a fresh limiter from newLimiter.
func runScenarios(t *testing.T, newLimiter func(t *testing.T) Limiter) {
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			l := newLimiter(t)
			ctx := context.Background()
			var adm []*Admission
			var got, want []Limit
			for _, s := range sc.steps {
				if s.finish > 0 {
					if err := l.Finish(ctx, s.req, adm[s.finish-1], s.usage); err != nil {
						t.Fatalf("Finish: %v", err)
					}
					continue
				}
				a := &Admission{}
				if err := l.Admit(ctx, s.req, a); err != nil {
					t.Fatalf("Admit: %v", err)
				}
				adm = append(adm, a)
				got, want = append(got, a.Denied), append(want, s.want)
				if a.Denied != NoLimit && (a.RetryAfter <= 0 || a.RetryAfter > time.Hour) {
					t.Errorf("RetryAfter = %v for %v, want within (0, 1h]", a.RetryAfter, a.Denied)
				}
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("outcomes mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestMemory_Scenarios(t *testing.T) {
	runScenarios(t, func(*testing.T) Limiter { return NewMemory(nil) })
}

func TestRedis_Scenarios(t *testing.T) {
	srv := redistest.Start(t)
	n := 0
	runScenarios(t, func(t *testing.T) Limiter {
		n++
		return newRedis(t, srv, RedisOptions{KeyPrefix: "s" + string(rune('a'+n)) + ":"})
	})
}

func newRedis(t testing.TB, srv *redistest.Server, o RedisOptions) *Redis {
	t.Helper()
	o.URL = srv.URL()
	if o.Timeout == 0 {
		o.Timeout = time.Second // generous: these tests do not test timeouts
	}
	r, err := NewRedis(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

func TestAdmission_Headers(t *testing.T) {
	req := &Request{Key: "k", KeyRate: Rate{RequestsPerMinute: 5, TokensPerMinute: 1000}, Budget: Budget{Tokens: 500, MicroUSD: 7, Period: time.Hour}}
	check := func(t *testing.T, l Limiter) {
		ctx := context.Background()
		var a Admission
		if err := l.Admit(ctx, req, &a); err != nil {
			t.Fatal(err)
		}
		if err := l.Finish(ctx, req, &a, Usage{Tokens: 120, MicroUSD: 3}); err != nil {
			t.Fatal(err)
		}
		if err := l.Admit(ctx, req, &a); err != nil {
			t.Fatal(err)
		}
		got := []int64{a.Requests.Limit, a.Requests.Remaining, a.Tokens.Limit, a.Tokens.Remaining, a.BudgetTokensLeft, a.BudgetMicroUSDLeft}
		want := []int64{5, 3, 1000, 880, 380, 4}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("requests limit, remaining, tokens limit, remaining, budget tokens, usd left (-want +got):\n%s", diff)
		}
		if a.Requests.Reset <= 0 || a.Requests.Reset > Window {
			t.Errorf("Requests.Reset = %v, want within (0, 1m]", a.Requests.Reset)
		}
	}
	t.Run("memory", func(t *testing.T) { check(t, NewMemory(nil)) })
	t.Run("redis", func(t *testing.T) { check(t, newRedis(t, redistest.Start(t), RedisOptions{KeyPrefix: "h:"})) })
}

func TestMemory_WindowsEnd(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	l := NewMemory(func() time.Time { return now })
	ctx := context.Background()
	req := &Request{Key: "k", KeyRate: Rate{RequestsPerMinute: 1}, Budget: Budget{Tokens: 10, Period: time.Hour}}
	var a Admission
	steps := []struct {
		name    string
		advance time.Duration
		charge  int64
		want    Limit
	}{
		{name: "first", charge: 10},
		{name: "same minute", want: KeyRequests},
		{name: "next minute, budget spent", advance: Window, want: BudgetTokens},
		{name: "budget period over", advance: time.Hour},
	}
	for _, s := range steps {
		now = now.Add(s.advance)
		if err := l.Admit(ctx, req, &a); err != nil {
			t.Fatal(err)
		}
		if a.Denied != s.want {
			t.Errorf("%s: Denied = %v, want %v", s.name, a.Denied, s.want)
		}
		if a.Denied == NoLimit {
			l.Finish(ctx, req, &a, Usage{Tokens: s.charge})
		}
	}
}

// TestRedis_TwoLimitersExact admits from two limiters (two replicas) on one Redis at
// once: exactly the limit is admitted in total.
func TestRedis_TwoLimitersExact(t *testing.T) {
	srv := redistest.Start(t)
	replicas := []Limiter{newRedis(t, srv, RedisOptions{KeyPrefix: "x:"}), newRedis(t, srv, RedisOptions{KeyPrefix: "x:"})}
	req := &Request{Key: "k", KeyRate: Rate{RequestsPerMinute: 37}, Model: "m", ModelRate: Rate{Concurrent: 1000}}
	var admitted atomic.Int64
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l := replicas[i%2]
			for range 10 {
				var a Admission
				if err := l.Admit(context.Background(), req, &a); err != nil {
					t.Error(err)
					return
				}
				if a.Denied == NoLimit {
					admitted.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	if got := admitted.Load(); got != 37 {
		t.Errorf("admitted %d of 80 requests on two replicas, want exactly 37", got)
	}
}

// TestRedis_LeaseFreesCrashedSlots: a replica that stops without finishing (a crash)
// leaves its slot, which frees itself when the lease ends; a live replica renews its own.
// Nothing here waits for a clock: the leases are an hour long, a lease's end is moved into
// the past in Redis as time passing would move it, and renewal is driven through
// renewTicks, so the test holds on a machine however busy.
func TestRedis_LeaseFreesCrashedSlots(t *testing.T) {
	srv := redistest.Start(t)
	const lease = time.Hour
	ticks := make(chan time.Time) // unbuffered: a second send returns once the first renewal ran
	crashed := newRedis(t, srv, RedisOptions{KeyPrefix: "l:", Lease: lease, renewTicks: make(chan time.Time)})
	live := newRedis(t, srv, RedisOptions{KeyPrefix: "l:", Lease: lease, renewTicks: ticks})
	const slots = "l:cc:k:k"
	rc := live.Client()
	ctx := context.Background()
	redisNow := func() int64 {
		t.Helper()
		now, err := rc.Time(ctx).Result()
		if err != nil {
			t.Fatal(err)
		}
		return now.UnixMilli()
	}
	// leaseEnd checks that slot ends a lease after a time within [from, now]. Now is read
	// after the score: a renewal the last tick started may still run when the caller
	// returns (the unbuffered send returns once the loop took the tick, not once that
	// tick's renewal is over), and it may have moved the score since.
	leaseEnd := func(what, slot string, from int64) {
		t.Helper()
		end, err := rc.ZScore(ctx, slots, slot).Result()
		if err != nil {
			t.Fatalf("%s: ZSCORE: %v", what, err)
		}
		to := redisNow()
		if lo, hi := from+lease.Milliseconds(), to+lease.Milliseconds(); int64(end) < lo || int64(end) > hi {
			t.Errorf("%s: the slot's lease ends at %d, want within [%d, %d] (a lease after it was taken)", what, int64(end), lo, hi)
		}
	}
	req := &Request{Key: "k", KeyRate: Rate{Concurrent: 1}}

	var a Admission
	before := redisNow()
	if err := crashed.Admit(ctx, req, &a); err != nil || a.Denied != NoLimit {
		t.Fatalf("Admit = %v, %v", a.Denied, err)
	}
	leaseEnd("admitted", a.slot, before)
	crashed.Close() // no Finish, no more renewals
	var b Admission
	if err := live.Admit(ctx, req, &b); err != nil || b.Denied != KeyConcurrent {
		t.Fatalf("Admit while the slot is held = %v, %v; want concurrent", b.Denied, err)
	}
	// The crashed replica's lease ends.
	if err := rc.ZAdd(ctx, slots, redis.Z{Score: float64(redisNow() - 1), Member: a.slot}).Err(); err != nil {
		t.Fatal(err)
	}
	if err := live.Admit(ctx, req, &b); err != nil || b.Denied != NoLimit {
		t.Fatalf("Admit once the crashed replica's lease ended = %v, %v; want admitted", b.Denied, err)
	}
	if err := crashed.Admit(ctx, req, &Admission{}); err == nil {
		t.Fatal("a closed limiter still answers")
	}

	// The live replica's lease is about to end; a renewal makes it a lease from now again.
	if err := rc.ZAdd(ctx, slots, redis.Z{Score: float64(redisNow() + 1000), Member: b.slot}).Err(); err != nil {
		t.Fatal(err)
	}
	before = redisNow()
	ticks <- time.Time{}
	ticks <- time.Time{} // returns once the first renewal is over (the second may be running)
	leaseEnd("renewed", b.slot, before)
	var c Admission
	if err := newRedis(t, srv, RedisOptions{KeyPrefix: "l:", Lease: lease}).Admit(ctx, req, &c); err != nil || c.Denied != KeyConcurrent {
		t.Fatalf("Admit while a live replica holds the slot = %v, %v; want concurrent", c.Denied, err)
	}
	if err := live.Finish(ctx, req, &b, Usage{}); err != nil {
		t.Fatal(err)
	}
	if err := rc.ZScore(ctx, slots, b.slot).Err(); !errors.Is(err, redis.Nil) {
		t.Errorf("the slot after Finish: ZSCORE error %v, want redis.Nil (released)", err)
	}
}

// TestRedis_DownAndBack: with Redis stopped (SIGSTOP: nothing answers) a round trip
// ends with an error after the timeout; killed, the error is immediate; restarted, the
// limiter works again by itself.
func TestRedis_DownAndBack(t *testing.T) {
	srv := redistest.Start(t)
	const timeout = 100 * time.Millisecond
	var errs countingObserver
	l := newRedis(t, srv, RedisOptions{KeyPrefix: "d:", Timeout: timeout, Errors: &errs})
	req := &Request{Key: "k", KeyRate: Rate{RequestsPerMinute: 100, Concurrent: 5}}
	ctx := context.Background()
	var a Admission
	if err := l.Admit(ctx, req, &a); err != nil {
		t.Fatal(err)
	}
	srv.Stop()
	start := time.Now()
	err := l.Admit(ctx, req, &a)
	if took := time.Since(start); err == nil || took > timeout+time.Second {
		t.Errorf("Admit on a stopped Redis = %v after %v, want an error within about %v", err, took, timeout)
	}
	if a.held {
		t.Error("a failed admission holds slots")
	}
	srv.Continue()
	srv.Kill()
	if err := l.Admit(ctx, req, &a); err == nil {
		t.Error("Admit on a killed Redis succeeded")
	}
	if err := l.Ready(ctx); err == nil {
		t.Error("Ready on a killed Redis succeeded")
	}
	srv.Restart()
	var err2 error
	for range 20 { // broken pooled connections fail once each at most
		if err2 = l.Admit(ctx, req, &a); err2 == nil {
			break
		}
	}
	if err2 != nil || a.Denied != NoLimit {
		t.Fatalf("Admit after restart = %v, %v", a.Denied, err2)
	}
	if errs.n.Load() < 3 {
		t.Errorf("observer saw %d errors, want at least 3", errs.n.Load())
	}
}

type countingObserver struct{ n atomic.Int64 }

func (c *countingObserver) StateError(string, error) { c.n.Add(1) }

// TestReservation_BoundsOvershoot: 20 requests of 700 tokens (and 700 micro-USD) run at
// once against a 1,000 budget (a 1,000 tokens per minute limit): what they are charged in
// all exceeds the limit by at most one request. Without reservations every one of them
// was admitted (14,000 charged).
func TestReservation_BoundsOvershoot(t *testing.T) {
	const n, each, limit = 20, 700, 1000
	reqs := map[string]*Request{
		"token budget":      {Key: "k", Budget: Budget{Tokens: limit, Period: time.Hour}},
		"usd budget":        {Key: "k", Budget: Budget{MicroUSD: limit, Period: time.Hour}},
		"key tokens/minute": {Key: "k", KeyRate: Rate{TokensPerMinute: limit}},
		"model tokens/min":  {Key: "k", Model: "m", ModelRate: Rate{TokensPerMinute: limit}},
	}
	check := func(t *testing.T, l Limiter, req *Request) {
		req.Reserve = Usage{Tokens: each, MicroUSD: each}
		ctx := context.Background()
		adm := make([]Admission, n)
		var wg sync.WaitGroup
		for i := range adm { // every request is admitted or refused before any ends
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := l.Admit(ctx, req, &adm[i]); err != nil {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		charged := 0
		for i := range adm {
			if adm[i].Denied == NoLimit {
				charged += each
				if err := l.Finish(ctx, req, &adm[i], Usage{Tokens: each, MicroUSD: each}); err != nil {
					t.Fatal(err)
				}
			}
		}
		t.Logf("%d requests of %d at once against %d: %d charged", n, each, limit, charged)
		if charged > limit+each {
			t.Errorf("charged %d, want at most the limit plus one request (%d)", charged, limit+each)
		}
		var a Admission
		if err := l.Admit(ctx, req, &a); err != nil || a.Denied == NoLimit {
			t.Errorf("a request after the limit was reached = %v, %v; want refused", a.Denied, err)
		}
	}
	srv := redistest.Start(t)
	for name, req := range reqs {
		t.Run(name+"/memory", func(t *testing.T) { r := *req; check(t, NewMemory(nil), &r) })
		t.Run(name+"/redis", func(t *testing.T) {
			r := *req
			check(t, newRedis(t, srv, RedisOptions{KeyPrefix: name + ":"}), &r)
		})
	}
}

// TestReservation_Settles: Finish replaces the reservation by the real usage in the window
// that holds it; a window begun since the admission is charged the real usage whole.
func TestReservation_Settles(t *testing.T) {
	req := &Request{Key: "k", KeyRate: Rate{TokensPerMinute: 1000}, Budget: Budget{Tokens: 1000, MicroUSD: 1000, Period: time.Hour},
		Reserve: Usage{Tokens: 700, MicroUSD: 500}}
	// left is the key's tokens remaining in the window, and the budget's tokens and usd.
	left := func(a *Admission) []int64 {
		return []int64{a.Tokens.Remaining, a.BudgetTokensLeft, a.BudgetMicroUSDLeft}
	}
	// check runs admit, finish with 100 tokens and 50 micro-USD, (newWindow) admit again.
	check := func(t *testing.T, l Limiter, newWindow func()) {
		ctx := context.Background()
		var a, b Admission
		if err := l.Admit(ctx, req, &a); err != nil || a.Denied != NoLimit {
			t.Fatalf("Admit = %v, %v", a.Denied, err)
		}
		if diff := cmp.Diff([]int64{300, 300, 500}, left(&a)); diff != "" {
			t.Errorf("after the reservation, tokens/budget tokens/usd left (-want +got):\n%s", diff)
		}
		newWindow()
		if err := l.Finish(ctx, req, &a, Usage{Tokens: 100, MicroUSD: 50}); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]int64{900, 950}, left(&a)[1:]); diff != "" {
			t.Errorf("after Finish, budget tokens/usd left (-want +got):\n%s", diff)
		}
		if err := l.Admit(ctx, req, &b); err != nil || b.Denied != NoLimit {
			t.Fatalf("Admit = %v, %v", b.Denied, err)
		}
		if diff := cmp.Diff([]int64{200, 200, 450}, left(&b)); diff != "" {
			t.Errorf("after a second reservation, tokens/budget tokens/usd left (-want +got):\n%s", diff)
		}
	}
	t.Run("memory", func(t *testing.T) { check(t, NewMemory(nil), func() {}) })
	t.Run("memory/next minute", func(t *testing.T) {
		now := time.Unix(1_700_000_000, 0)
		check(t, NewMemory(func() time.Time { return now }), func() { now = now.Add(Window) })
	})
	srv := redistest.Start(t)
	t.Run("redis", func(t *testing.T) { check(t, newRedis(t, srv, RedisOptions{KeyPrefix: "a:"}), func() {}) })
	t.Run("redis/next minute", func(t *testing.T) {
		l := newRedis(t, srv, RedisOptions{KeyPrefix: "b:"})
		check(t, l, func() { // the minute window expires with the reservation in it
			if err := l.Client().Del(context.Background(), "b:rl:k:k").Err(); err != nil {
				t.Fatal(err)
			}
		})
	})
}

// FuzzReservation_Bound drives a Memory limiter with admissions and finishes in any
// order, each request reserving an estimate and using at most that much: whatever the
// order, the tokens charged stay below the budget plus the largest single usage, the
// bound the reservation rule promises (Request.Reserve).
func FuzzReservation_Bound(f *testing.F) {
	f.Add([]byte{200, 0, 200, 0, 200, 0, 1, 50, 1, 200})
	f.Add([]byte{255, 255, 255, 255, 1, 0, 1, 0, 10, 3, 10, 3})
	f.Add([]byte{7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7})
	f.Fuzz(func(t *testing.T, ops []byte) {
		const budget = 1000
		l := NewMemory(nil)
		ctx := context.Background()
		type running struct {
			req *Request
			adm *Admission
		}
		var open []running
		var charged, largest int64
		for i := 0; i+1 < len(ops); i += 2 {
			op, x := ops[i], int64(ops[i+1])
			if op%2 == 0 || len(open) == 0 { // admit a request reserving 8*x tokens
				req := &Request{Key: "k", Budget: Budget{Tokens: budget, Period: time.Hour}, Reserve: Usage{Tokens: 8 * x}}
				a := &Admission{}
				if err := l.Admit(ctx, req, a); err != nil {
					t.Fatal(err)
				}
				if a.Denied == NoLimit {
					open = append(open, running{req, a})
				}
				continue
			}
			// finish one of the running requests, using at most its reservation
			j := int(op/2) % len(open)
			r := open[j]
			open = append(open[:j], open[j+1:]...)
			used := min(r.req.Reserve.Tokens, int64(op)*x%(r.req.Reserve.Tokens+1))
			if err := l.Finish(ctx, r.req, r.adm, Usage{Tokens: used}); err != nil {
				t.Fatal(err)
			}
			charged += used
			largest = max(largest, used)
			if charged >= budget+largest {
				t.Fatalf("charged %d against a %d budget, largest usage %d: over the bound", charged, budget, largest)
			}
		}
	})
}
