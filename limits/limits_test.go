package limits

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agate-gateway/agate/limits/redistest"
	"github.com/google/go-cmp/cmp"
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
func TestRedis_LeaseFreesCrashedSlots(t *testing.T) {
	srv := redistest.Start(t)
	const lease = 300 * time.Millisecond
	crashed := newRedis(t, srv, RedisOptions{KeyPrefix: "l:", Lease: lease})
	live := newRedis(t, srv, RedisOptions{KeyPrefix: "l:", Lease: lease})
	req := &Request{Key: "k", KeyRate: Rate{Concurrent: 1}}
	ctx := context.Background()
	var a Admission
	if err := crashed.Admit(ctx, req, &a); err != nil || a.Denied != NoLimit {
		t.Fatalf("Admit = %v, %v", a.Denied, err)
	}
	crashed.Close() // no Finish, no more renewals
	var b Admission
	if err := live.Admit(ctx, req, &b); err != nil || b.Denied != KeyConcurrent {
		t.Fatalf("Admit while the slot is held = %v, %v; want concurrent", b.Denied, err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for b.Denied != NoLimit && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond) // polling for the lease to end
		if err := live.Admit(ctx, req, &b); err != nil {
			t.Fatal(err)
		}
	}
	if b.Denied != NoLimit {
		t.Fatal("the crashed replica's slot never expired")
	}
	// The live replica holds its slot past several leases: renewals keep it.
	start := time.Now()
	for time.Since(start) < 3*lease {
		var c Admission
		if err := crashed.Admit(ctx, req, &c); err == nil {
			t.Fatal("a closed limiter still answers")
		}
		other := newRedis(t, srv, RedisOptions{KeyPrefix: "l:", Lease: lease})
		if err := other.Admit(ctx, req, &c); err != nil || c.Denied != KeyConcurrent {
			t.Fatalf("Admit while a live replica holds the slot = %v, %v; want concurrent", c.Denied, err)
		}
		other.Close()
		time.Sleep(lease / 3)
	}
	if err := live.Finish(ctx, req, &b, Usage{}); err != nil {
		t.Fatal(err)
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
