package main

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// TestIdleRelease_Step: the memory is given back at the second poll in a row with nothing
// in flight, once idleAllocated bytes were allocated since the last release; never while
// a request is in flight, nor again before as much more was allocated.
func TestIdleRelease_Step(t *testing.T) {
	const mb = 1 << 20
	type poll struct {
		inFlight  float64
		allocated uint64
		want      bool // released at this poll
	}
	tests := []struct {
		name  string
		polls []poll
	}{
		{name: "a burst, then idle", polls: []poll{{3, 10 * mb, false}, {0, 20 * mb, false}, {0, 20 * mb, true}, {0, 20 * mb, false}, {0, 20 * mb, false}}},
		{name: "never while in flight", polls: []poll{{1, 50 * mb, false}, {2, 60 * mb, false}, {1, 70 * mb, false}}},
		{name: "one idle poll between requests is not idle", polls: []poll{{0, 10 * mb, false}, {1, 20 * mb, false}, {0, 30 * mb, false}, {1, 40 * mb, false}}},
		{name: "too little allocated since the start", polls: []poll{{0, 1 * mb, false}, {0, 3 * mb, false}, {0, 3 * mb, false}}},
		{name: "again only after as much more", polls: []poll{
			{0, 8 * mb, false}, {0, 8 * mb, true},
			{1, 9 * mb, false}, {0, 10 * mb, false}, {0, 10 * mb, false}, // 2 MB since: left
			{1, 12 * mb, false}, {0, 13 * mb, false}, {0, 13 * mb, true}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			i, released := 0, 0
			r := &idleRelease{
				inFlight:  func() float64 { return tt.polls[i].inFlight },
				allocated: func() uint64 { return tt.polls[i].allocated },
				release:   func() { released++ },
			}
			for i = range tt.polls {
				before := released
				if got := r.step(); got != tt.polls[i].want || (released > before) != got {
					t.Fatalf("poll %d: step = %v (released %d times), want %v", i, got, released, tt.polls[i].want)
				}
			}
		})
	}
}

// TestNewIdleRelease: the gateway's release reads the in-flight gauge and the runtime's
// allocated bytes, and its release runs (the heap's free pages, the binary's read-only
// pages) with the process still working after it.
func TestNewIdleRelease(t *testing.T) {
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: "inflight_test"})
	r := newIdleRelease(g)
	if got := r.inFlight(); got != 0 {
		t.Fatalf("inFlight = %v, want 0", got)
	}
	g.Add(2)
	if got := r.inFlight(); got != 2 {
		t.Fatalf("inFlight = %v, want 2", got)
	}
	a := r.allocated()
	sink := make([][]byte, 0, 64)
	for range 64 {
		sink = append(sink, make([]byte, 64<<10))
	}
	if b := r.allocated(); b < a+uint64(len(sink))*(64<<10) {
		t.Fatalf("allocated went from %d to %d over 4 MiB of allocations", a, b)
	}
	r.release()
	if r.allocated() == 0 { // the code and data after the release are mapped back
		t.Fatal("allocated reads 0 after the release")
	}
}
