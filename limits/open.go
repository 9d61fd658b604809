package limits

import (
	"log/slog"
	"sync"
	"time"

	"github.com/agate-gateway/agate/tools"
)

// Stores, the values of Options.Store.
const (
	StoreMemory = "memory" // this process only: a [Memory]
	StoreRedis  = "redis"  // a Redis server shared by every replica: a [Redis]
)

// Options choose where the limiter [Open] returns keeps its state. The zero value keeps
// it in this process. The package reads no configuration: the gateway maps its `state:`
// section to Options.
type Options struct {
	// Store is StoreRedis for a [Redis] limiter; anything else (StoreMemory, "") gives a
	// [Memory].
	Store string
	// URL is the Redis server (store redis): redis://[user:password@]host:port/db, or
	// rediss:// for TLS. Never included in errors.
	URL string
	// KeyPrefix starts every Redis key the limiter and its [SharedToolCache] write; empty
	// means none.
	KeyPrefix string
	// Timeout bounds one Redis round trip. Zero or less means DefaultTimeout.
	Timeout time.Duration
}

// Open returns the limiter o describes: a [Memory], or a [Redis] for store redis. The
// caller closes it. errs, if not nil, is told about every failed Redis round trip.
func Open(o Options, errs ErrorObserver) (Limiter, error) {
	if o.Store != StoreRedis {
		return NewMemory(nil), nil
	}
	return NewRedis(RedisOptions{URL: o.URL, KeyPrefix: o.KeyPrefix, Timeout: o.Timeout, Errors: errs})
}

// SharedToolCache returns the tool result cache for a registry: a [ToolCache] on the
// Redis server of l, under its key prefix, when l is a [Redis], or nil (the registry's own
// LRU) otherwise. The first level is sized by c (its defaults are the tools package's) and
// reports evictions to onEvict; c.Shared is the registry's, not the cache's, concern.
func SharedToolCache(l Limiter, c tools.CacheOptions, onEvict func(), errs ErrorObserver) tools.Cache {
	r, ok := l.(*Redis)
	if !ok {
		return nil
	}
	ttl := c.TTL
	if ttl <= 0 {
		ttl = tools.DefaultCacheTTL
	}
	return &ToolCache{L1: tools.NewLRUCache(c.MaxEntries, ttl, onEvict), Client: r.Client(), Prefix: r.prefix,
		TTL: ttl, Timeout: r.timeout, Errors: errs}
}

// ErrorLog is an [ErrorObserver] that counts every error and logs at most one line per
// operation per Interval, with the number of errors it left out, so a Redis outage does not
// flood the log. Safe for concurrent use.
type ErrorLog struct {
	// Logger receives the lines; nil logs nothing.
	Logger *slog.Logger
	// Count, if not nil, is called for every error.
	Count func(op string)
	// Interval is the least time between two lines of one operation. Zero means 10s.
	Interval time.Duration
	// Now replaces time.Now when not nil.
	Now func() time.Time

	mu         sync.Mutex
	last       map[string]time.Time
	suppressed map[string]int
}

var _ ErrorObserver = (*ErrorLog)(nil)

// StateError implements [ErrorObserver].
func (e *ErrorLog) StateError(op string, err error) {
	if e.Count != nil {
		e.Count(op)
	}
	if e.Logger == nil {
		return
	}
	now := time.Now
	if e.Now != nil {
		now = e.Now
	}
	interval := e.Interval
	if interval <= 0 {
		interval = 10 * time.Second
	}
	t := now()
	e.mu.Lock()
	if e.last == nil {
		e.last, e.suppressed = map[string]time.Time{}, map[string]int{}
	}
	if last, ok := e.last[op]; ok && t.Sub(last) < interval {
		e.suppressed[op]++
		e.mu.Unlock()
		return
	}
	n := e.suppressed[op]
	e.last[op], e.suppressed[op] = t, 0
	e.mu.Unlock()
	e.Logger.Warn("state store error", "op", op, "error", err.Error(), "suppressed_since_last", n)
}
