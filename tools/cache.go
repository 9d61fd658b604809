package tools

import (
	"context"
	"sync"
	"time"

	"github.com/hashicorp/golang-lru/v2/expirable"
)

// Cache stores successful results of cacheable tools. Keys are opaque strings built by the
// Registry from the caller (with cache scope key), the model-facing tool name and the
// canonical JSON of the arguments; values
// are never error results. Implementations must be safe for concurrent use; Get must not
// return an expired entry. A shared store (Redis, memcached) can implement Cache and be
// passed with [WithCache]; the Registry counts hits and misses itself, so implementations
// only report evictions, if they can.
type Cache interface {
	// Get returns the result stored under key, if present and not expired.
	Get(key string) (Result, bool)
	// Add stores r under key, replacing any previous entry.
	Add(key string, r Result)
}

// LRUCache is an in-process [Cache]: least recently used entries leave first once MaxEntries
// is reached, and every entry expires TTL after it was added. It is safe for concurrent use.
type LRUCache struct {
	lru *expirable.LRU[string, Result]
}

var _ Cache = (*LRUCache)(nil)

// NewLRUCache returns a cache of at most maxEntries results (zero or less means
// DefaultCacheMaxEntries) that expire after ttl (zero or less means DefaultCacheTTL).
// onEvict, if not nil, is called (with the cache's lock held: it must not call back into the
// cache) whenever an entry leaves because of the bound or its TTL.
//
// The underlying expirable LRU runs one background goroutine for expiry that lives as long as
// the process; build one cache per Registry, not per request.
func NewLRUCache(maxEntries int, ttl time.Duration, onEvict func()) *LRUCache {
	if maxEntries <= 0 {
		maxEntries = DefaultCacheMaxEntries
	}
	if ttl <= 0 {
		ttl = DefaultCacheTTL
	}
	var cb expirable.EvictCallback[string, Result]
	if onEvict != nil {
		cb = func(string, Result) { onEvict() }
	}
	return &LRUCache{lru: expirable.NewLRU(maxEntries, cb, ttl)}
}

// Get implements [Cache].
func (c *LRUCache) Get(key string) (Result, bool) { return c.lru.Get(key) }

// Add implements [Cache].
func (c *LRUCache) Add(key string, r Result) { c.lru.Add(key, r) }

// Len returns the number of entries, expired ones not yet removed included.
func (c *LRUCache) Len() int { return c.lru.Len() }

// flightGroup makes concurrent calls with the same key share one execution. Unlike
// golang.org/x/sync/singleflight, the execution runs under its own context, cancelled only
// when every caller waiting for it has gone, so one impatient caller does not fail the
// others. The zero value is ready to use.
type flightGroup struct {
	mu      sync.Mutex
	flights map[string]*flight
}

type flight struct {
	done    chan struct{}
	res     Result
	outcome string
	waiters int // guarded by flightGroup.mu
	cancel  context.CancelFunc
}

// do runs fn once for all concurrent callers with the same key and returns its result to
// each. fn gets a context carrying the values of the first caller's ctx, cancelled when the
// last waiting caller's ctx is done. A caller whose ctx ends first gets ok false.
func (g *flightGroup) do(ctx context.Context, key string, fn func(context.Context) (Result, string)) (res Result, outcome string, shared, ok bool) {
	g.mu.Lock()
	if g.flights == nil {
		g.flights = make(map[string]*flight)
	}
	f, joined := g.flights[key]
	if joined {
		f.waiters++
	} else {
		fctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		f = &flight{done: make(chan struct{}), waiters: 1, cancel: cancel}
		g.flights[key] = f
		go func() {
			defer cancel()
			r, o := fn(fctx)
			g.mu.Lock()
			f.res, f.outcome = r, o
			if g.flights[key] == f {
				delete(g.flights, key)
			}
			g.mu.Unlock()
			close(f.done)
		}()
	}
	g.mu.Unlock()

	select {
	case <-f.done:
		return f.res, f.outcome, joined, true
	case <-ctx.Done():
		g.mu.Lock()
		f.waiters--
		if f.waiters == 0 {
			f.cancel()
			// Forget the flight so a new caller starts afresh instead of joining a
			// cancelled execution.
			if g.flights[key] == f {
				delete(g.flights, key)
			}
		}
		g.mu.Unlock()
		return Result{}, "", joined, false
	}
}
