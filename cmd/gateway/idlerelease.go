package main

import (
	"context"
	"runtime/debug"
	"runtime/metrics"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// After a burst of requests the process keeps what the burst grew: the heap up to the
// goal its last collection set (the runtime returns free pages to the system only
// gradually, and collects again only when the next requests allocate), the goroutine
// stacks, and the pages of the binary the burst ran (startpages.go). A gateway that then
// idles holds the burst's memory for minutes; and a process that serves bursts of
// different shapes one after the other (the shared bench runs its scenarios so) starts
// each with the last one's memory. So once a burst is over, the gateway gives it back:
// a collection and every free page returned (debug.FreeOSMemory), and the binary's
// read-only pages dropped again as at the start. Nothing of it runs while requests are in
// flight; the next burst maps back what it uses (PERFORMANCE.md, "Peak RSS and the
// stream's buffers, tenth session").

const (
	idlePoll = 500 * time.Millisecond // how often the gateway looks
	// idleAllocated is how much must have been allocated since the last release for
	// another to be worth its collection: an idle gateway, or one serving a request now
	// and then, is left alone.
	idleAllocated = 4 << 20
)

// idleRelease decides when to give memory back: at a poll that finds no request in
// flight, after a poll that found none either (idle for at least idlePoll), and with at
// least idleAllocated bytes allocated since the last release (or the start).
type idleRelease struct {
	inFlight  func() float64 // requests in flight now
	allocated func() uint64  // bytes allocated since the process started
	release   func()         // gives the memory back

	idlePolls int    // consecutive polls with nothing in flight
	last      uint64 // allocated at the last release
}

// step is one poll; it reports whether it released.
func (r *idleRelease) step() bool {
	if r.inFlight() > 0 {
		r.idlePolls = 0
		return false
	}
	r.idlePolls++
	if r.idlePolls < 2 {
		return false
	}
	a := r.allocated()
	if a-r.last < idleAllocated {
		return false
	}
	r.release()
	r.last = r.allocated() // the release's own collection allocates a little
	r.idlePolls = 0
	return true
}

// run polls every idlePoll until ctx is done.
func (r *idleRelease) run(ctx context.Context) {
	t := time.NewTicker(idlePoll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			r.step()
		}
	}
}

// newIdleRelease is the gateway's: requests in flight read from the gateway_inflight
// gauge (which the request path keeps anyway: the poll adds nothing to a request), the
// runtime's count of allocated bytes, and a release that returns the heap's free pages
// and drops the binary's clean read-only pages.
func newIdleRelease(inflight prometheus.Gauge) *idleRelease {
	var m dto.Metric
	sample := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	return &idleRelease{
		inFlight: func() float64 {
			if inflight.Write(&m) != nil || m.Gauge == nil {
				return 1 // unknown: as if busy
			}
			return m.Gauge.GetValue()
		},
		allocated: func() uint64 {
			metrics.Read(sample)
			if sample[0].Value.Kind() != metrics.KindUint64 {
				return 0
			}
			return sample[0].Value.Uint64()
		},
		release: func() {
			debug.FreeOSMemory()
			_, _ = releaseStartPages() // best effort: what stays mapped is only not given back
		},
	}
}
