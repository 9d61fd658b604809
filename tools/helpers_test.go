package tools

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"sync"
	"testing"
	"time"
)

// recordingObserver is an Observer that remembers every event.
type recordingObserver struct {
	mu        sync.Mutex
	calls     []observedCall
	hits      int
	misses    int
	evictions int
}

type observedCall struct{ Tool, Outcome string }

func (o *recordingObserver) ToolCall(tool, outcome string, _ time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.calls = append(o.calls, observedCall{tool, outcome})
}

func (o *recordingObserver) CacheLookup(hit bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if hit {
		o.hits++
	} else {
		o.misses++
	}
}

func (o *recordingObserver) CacheEviction() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.evictions++
}

// lastOutcome returns the outcome of the most recent call.
func (o *recordingObserver) lastCall() observedCall {
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.calls) == 0 {
		return observedCall{}
	}
	return o.calls[len(o.calls)-1]
}

func (o *recordingObserver) counts() (hits, misses, evictions int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.hits, o.misses, o.evictions
}

// testLogger logs to the test's output, so failures come with the registry's log.
func testLogger(t testing.TB) *slog.Logger {
	if !testing.Verbose() {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// newTestRegistry builds a Registry that is closed when the test ends.
func newTestRegistry(t testing.TB, sources map[string]SourceOptions, obs Observer, opts ...Option) *Registry {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	r, err := New(ctx, sources, CacheOptions{}, obs, testLogger(t), opts...)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() {
		if err := r.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return r
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t testing.TB, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(2 * time.Millisecond) // polling interval, not a readiness guess
	}
}

func ptr[T any](v T) *T { return &v }

// anyDown is Ready and Degraded together: every source, required or not, that cannot take
// calls.
func (r *Registry) anyDown() error { return errors.Join(r.Ready(), r.Degraded()) }
