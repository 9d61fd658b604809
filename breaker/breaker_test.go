package breaker_test

import (
	"strings"
	"testing"
	"time"

	"github.com/agate-gateway/agate/breaker"
)

// step is one call of a scenario at the time at from its start: Allow (want is its
// answer), Record of a success or a failure, or Hold until holdTo.
type step struct {
	at     time.Duration
	op     string        // "allow", "ok", "fail", "hold"
	want   bool          // allow's answer
	is     string        // when set, the state after the step (State.String)
	holdTo time.Duration // hold: until
}

func TestStateMachine(t *testing.T) {
	const key = "b/m"
	pol := breaker.Policy{Failures: 3, Cooldown: 30 * time.Second}
	tests := []struct {
		name  string
		steps []step
	}{
		{"closed lets every call through and counts consecutive failures only", []step{
			{op: "allow", want: true}, {op: "fail"}, {op: "fail"}, {op: "ok"},
			{op: "fail"}, {op: "fail", is: "closed"}, {op: "allow", want: true},
		}},
		{"the Nth consecutive failure opens it; open refuses", []step{
			{op: "fail"}, {op: "fail"}, {op: "fail", is: "open"},
			{at: time.Second, op: "allow", want: false}, {at: 29 * time.Second, op: "allow", want: false},
		}},
		{"after the cooldown one probe goes through, the others wait", []step{
			{op: "fail"}, {op: "fail"}, {op: "fail"},
			{at: 30 * time.Second, op: "allow", want: true, is: "half_open"},
			{at: 31 * time.Second, op: "allow", want: false, is: "half_open"},
		}},
		{"the probe's success closes it", []step{
			{op: "fail"}, {op: "fail"}, {op: "fail"},
			{at: 30 * time.Second, op: "allow", want: true}, {at: 31 * time.Second, op: "ok", is: "closed"},
			{at: 31 * time.Second, op: "allow", want: true},
			{at: 32 * time.Second, op: "fail", is: "closed"}, // the count starts again
		}},
		{"the probe's failure opens it for another cooldown", []step{
			{op: "fail"}, {op: "fail"}, {op: "fail"},
			{at: 30 * time.Second, op: "allow", want: true}, {at: 31 * time.Second, op: "fail", is: "open"},
			{at: 60 * time.Second, op: "allow", want: false},
			{at: 61 * time.Second, op: "allow", want: true, is: "half_open"},
		}},
		{"a probe never recorded gives its turn up after a cooldown", []step{
			{op: "fail"}, {op: "fail"}, {op: "fail"},
			{at: 30 * time.Second, op: "allow", want: true},
			{at: 59 * time.Second, op: "allow", want: false},
			{at: 60 * time.Second, op: "allow", want: true, is: "half_open"},
		}},
		{"late outcomes of calls made before it opened change nothing", []step{
			{op: "fail"}, {op: "fail"}, {op: "fail"},
			{at: time.Second, op: "ok", is: "open"}, {at: time.Second, op: "fail", is: "open"},
			{at: 30 * time.Second, op: "allow", want: true},
		}},
		{"a hold refuses a closed circuit's calls until its end, counting nothing", []step{
			{op: "hold", holdTo: 5 * time.Second},
			{at: time.Second, op: "allow", want: false, is: "closed"},
			{at: 5 * time.Second, op: "allow", want: true},
			{at: 5 * time.Second, op: "fail"}, {at: 5 * time.Second, op: "fail", is: "closed"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := breaker.New(breaker.Options{})
			s.Configure([]breaker.Circuit{{Key: key, Backend: "b", Model: "m", Policy: pol}})
			t0 := time.Unix(1_000_000, 0)
			for i, st := range tt.steps {
				now := t0.Add(st.at)
				switch st.op {
				case "allow":
					if got := s.Allow(key, now); got != st.want {
						t.Fatalf("step %d: Allow at %v = %v, want %v", i, st.at, got, st.want)
					}
				case "ok", "fail":
					s.Record(key, st.op == "ok", now)
				case "hold":
					s.Hold(key, t0.Add(st.holdTo))
				}
				if got, _ := s.State(key, now); st.is != "" && got.String() != st.is {
					t.Fatalf("step %d: state %v, want %v", i, got, st.is)
				}
			}
		})
	}
}

func TestKeysWithoutCircuitAndReload(t *testing.T) {
	s := breaker.New(breaker.Options{})
	pol := breaker.Policy{Failures: 1, Cooldown: time.Minute}
	s.Configure([]breaker.Circuit{{Key: "a/x", Policy: pol}, {Key: "b/y", Policy: pol}})
	now := time.Unix(1_000_000, 0)
	s.Record("unknown/z", false, now)
	if !s.Allow("unknown/z", now) {
		t.Fatal("a key without a circuit must be allowed")
	}
	s.Record("a/x", false, now)
	if s.Allow("a/x", now) {
		t.Fatal("a/x should be open")
	}
	// A reload that keeps a/x keeps it open; b/y is dropped, c/z starts closed.
	s.Configure([]breaker.Circuit{{Key: "a/x", Policy: pol}, {Key: "c/z", Policy: pol}})
	if st, left := s.State("a/x", now.Add(time.Second)); st != breaker.Open || left != 59*time.Second {
		t.Fatalf("a/x after reload: %v %v, want open 59s", st, left)
	}
	if !s.Allow("c/z", now) {
		t.Fatal("c/z should start closed")
	}
}

type recorder []breaker.Transition

func (r *recorder) Transition(t breaker.Transition) { *r = append(*r, t) }

func TestObserverSeesEachTransition(t *testing.T) {
	var r recorder
	s := breaker.New(breaker.Options{Observer: &r})
	s.Configure([]breaker.Circuit{{Key: "b/m", Backend: "b", Model: "m", Policy: breaker.Policy{Failures: 2, Cooldown: 10 * time.Second}}})
	t0 := time.Unix(1_000_000, 0)
	s.Record("b/m", false, t0)
	s.Record("b/m", false, t0)                     // opens
	s.Allow("b/m", t0.Add(10*time.Second))         // probe
	s.Record("b/m", false, t0.Add(11*time.Second)) // re-opens
	s.Allow("b/m", t0.Add(21*time.Second))         // probe
	s.Record("b/m", true, t0.Add(22*time.Second))  // closes
	var got []string
	for _, tr := range r {
		got = append(got, tr.From.String()+">"+tr.To.String())
	}
	want := "closed>open open>half_open half_open>open open>half_open half_open>closed"
	if g := strings.Join(got, " "); g != want {
		t.Fatalf("transitions %q, want %q", g, want)
	}
	if r[0].Backend != "b" || r[0].Model != "m" || !r[0].Until.Equal(t0.Add(10*time.Second)) {
		t.Fatalf("first transition %+v", r[0])
	}
}

// BenchmarkAllowRecord is the cost a call pays a closed circuit: Allow, then Record of a
// success.
func BenchmarkAllowRecord(b *testing.B) {
	s := breaker.New(breaker.Options{})
	s.Configure([]breaker.Circuit{{Key: "openai/gpt-4o-mini", Policy: breaker.Policy{Failures: 5, Cooldown: 30 * time.Second}},
		{Key: "anthropic/claude-sonnet-4-5", Policy: breaker.Policy{Failures: 5, Cooldown: 30 * time.Second}}})
	now := time.Now()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if s.Allow("openai/gpt-4o-mini", now) {
				s.Record("openai/gpt-4o-mini", true, now)
			}
		}
	})
}

func TestHoldEndsOnSuccess(t *testing.T) {
	s := breaker.New(breaker.Options{})
	s.Configure([]breaker.Circuit{{Key: "b/m", Policy: breaker.Policy{Failures: 3, Cooldown: time.Minute}}})
	t0 := time.Unix(1_000_000, 0)
	s.Hold("b/m", t0.Add(10*time.Second))
	s.Hold("b/m", t0.Add(5*time.Second)) // never shortens
	if v := s.Check("b/m", t0.Add(6*time.Second)); v.Allow || !v.Held || v.RetryIn != 4*time.Second {
		t.Fatalf("held: %+v", v)
	}
	s.Record("b/m", true, t0.Add(6*time.Second))
	if !s.Allow("b/m", t0.Add(6*time.Second)) {
		t.Fatal("a success must end the hold")
	}
}

// TestCheckAtRecordAt: CheckAt and RecordAt decide as Check and Record do, step by step
// through opening, a hold, a cooldown and a probe, and read the clock only when the
// circuit is not closed and quiet (no failure counted, no hold).
func TestCheckAtRecordAt(t *testing.T) {
	const key = "b/m"
	pol := breaker.Policy{Failures: 2, Cooldown: 30 * time.Second}
	by, at := breaker.New(breaker.Options{}), breaker.New(breaker.Options{})
	for _, s := range []*breaker.Set{by, at} {
		s.Configure([]breaker.Circuit{{Key: key, Backend: "b", Model: "m", Policy: pol}})
	}
	t0 := time.Unix(1_000_000, 0)
	for i, st := range []struct {
		at    time.Duration
		op    string // "check", "ok", "fail", "hold"
		reads int    // the clock readings CheckAt or RecordAt makes
	}{
		{op: "check"}, {op: "ok"}, {op: "check"}, {op: "ok"}, // closed and quiet: none
		{op: "ok", at: time.Second}, {op: "check", at: time.Second},
		{op: "fail", reads: 1}, {op: "check"}, {op: "ok", reads: 1}, {op: "ok"},
		{op: "fail", reads: 1}, {op: "fail", reads: 1}, // open
		{op: "check", at: time.Second, reads: 1}, {op: "ok", at: 2 * time.Second, reads: 1},
		{op: "check", at: 30 * time.Second, reads: 1}, // the probe
		{op: "check", at: 31 * time.Second, reads: 1},
		{op: "ok", at: 32 * time.Second, reads: 1}, // closed again
		{op: "check", at: 32 * time.Second},
		{op: "hold", at: 33 * time.Second},
		{op: "check", at: 34 * time.Second, reads: 1}, {op: "check", at: 40 * time.Second, reads: 1},
		{op: "ok", at: 41 * time.Second, reads: 1}, {op: "check", at: 41 * time.Second},
		{op: "check", at: 41 * time.Second}, {op: "ok", at: 42 * time.Second},
	} {
		now := t0.Add(st.at)
		reads := 0
		clock := func() time.Time { reads++; return now }
		switch st.op {
		case "check":
			if want, got := by.Check(key, now), at.CheckAt(key, clock); got != want {
				t.Fatalf("step %d: CheckAt = %+v, Check %+v", i, got, want)
			}
		case "ok", "fail":
			by.Record(key, st.op == "ok", now)
			at.RecordAt(key, st.op == "ok", clock)
		case "hold":
			by.Hold(key, now.Add(5*time.Second))
			at.Hold(key, now.Add(5*time.Second))
		}
		if reads != st.reads {
			t.Errorf("step %d (%s at %v): %d clock readings, want %d", i, st.op, st.at, reads, st.reads)
		}
		want, _ := by.State(key, now)
		if got, _ := at.State(key, now); got != want {
			t.Fatalf("step %d: state %v, Check and Record's %v", i, got, want)
		}
	}
	if v := at.CheckAt("no/circuit", func() time.Time { t.Fatal("a key without a circuit read the clock"); return t0 }); !v.Allow {
		t.Fatalf("a key without a circuit: %+v", v)
	}
}
