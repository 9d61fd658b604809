package respcache

import (
	"context"
	"sync"
)

// Flights lets identical concurrent requests share one upstream call: the first request
// of a key leads (it calls the upstream and stores the answer), the others wait for it
// to end and then read the cache. The zero Flights is ready; it is safe for concurrent
// use.
type Flights struct {
	mu sync.Mutex
	m  map[string]*Flight
}

// Flight is one key's leading request; Done ends it.
type Flight struct {
	f    *Flights
	key  string
	done chan struct{}
	once sync.Once
}

// Join returns a new Flight of key and true when no request of key is in flight (the
// caller leads and must call Done), or the leader's Flight and false.
func (f *Flights) Join(key string) (*Flight, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if fl, ok := f.m[key]; ok {
		return fl, false
	}
	if f.m == nil {
		f.m = map[string]*Flight{}
	}
	fl := &Flight{f: f, key: key, done: make(chan struct{})}
	f.m[key] = fl
	return fl, true
}

// Done ends the flight (after its answer was stored, or it failed): the waiting
// requests go on. Calling it again does nothing.
func (fl *Flight) Done() {
	fl.once.Do(func() {
		fl.f.mu.Lock()
		delete(fl.f.m, fl.key)
		fl.f.mu.Unlock()
		close(fl.done)
	})
}

// Wait waits for the flight to end or ctx to be done; it reports whether the flight ended.
func (fl *Flight) Wait(ctx context.Context) bool {
	select {
	case <-fl.done:
		return true
	case <-ctx.Done():
		return false
	}
}
