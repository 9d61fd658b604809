package respcache

import (
	"bytes"
	"cmp"
	"compress/flate"
	"context"
	"errors"
	"io"
	"sync"
	"time"

	"github.com/hashicorp/golang-lru/v2/simplelru"
	"github.com/redis/go-redis/v9"
)

// Store keeps entries by key, each for a TTL. Get returns a miss (nil, nil) for an
// absent or expired key; the bytes it returns are the caller's and never changed by
// the store. Implementations are safe for concurrent use.
type Store interface {
	Get(ctx context.Context, key string) ([]byte, error)
	Set(ctx context.Context, key string, entry []byte, ttl time.Duration) error
}

// Memory is a Store in this process: a least-recently-used list bounded by the entries'
// total size in bytes.
type Memory struct {
	mu    sync.Mutex
	lru   *simplelru.LRU[string, memEntry]
	bytes int64
	max   int64
	now   func() time.Time
}

type memEntry struct {
	b       []byte
	expires time.Time
}

// NewMemory returns a Memory store holding at most maxBytes of entries (their length
// plus their key's); now is its clock (nil: time.Now).
func NewMemory(maxBytes int64, now func() time.Time) *Memory {
	if now == nil {
		now = time.Now
	}
	m := &Memory{max: maxBytes, now: now}
	// The count bound is never reached first: the byte bound evicts (an entry is a byte at least).
	m.lru, _ = simplelru.NewLRU[string, memEntry](1<<30, func(k string, e memEntry) { m.bytes -= size(k, e.b) })
	return m
}

func size(k string, b []byte) int64 { return int64(len(k) + len(b)) }

// Get implements Store.
func (m *Memory) Get(_ context.Context, key string) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.lru.Get(key)
	if !ok {
		return nil, nil
	}
	if !m.now().Before(e.expires) {
		m.lru.Remove(key)
		return nil, nil
	}
	return e.b, nil
}

// Set implements Store; an entry larger than the store's bound is not kept. entry
// becomes the store's: the caller must not change it.
func (m *Memory) Set(_ context.Context, key string, entry []byte, ttl time.Duration) error {
	n := size(key, entry)
	if n > m.max {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.lru.Remove(key)
	m.lru.Add(key, memEntry{b: entry, expires: m.now().Add(ttl)})
	m.bytes += n
	for m.bytes > m.max {
		m.lru.RemoveOldest()
	}
	return nil
}

// Bytes returns the entries' total size (for tests and gauges).
func (m *Memory) Bytes() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.bytes
}

// Redis is a Store shared by the replicas that use the same Redis and Prefix: each entry
// is one string key, Prefix + "rc:" + key, holding the entry compressed with DEFLATE and
// expiring after its TTL (Redis expires it: the store is bounded by the TTL and MaxEntry).
type Redis struct {
	Client *redis.Client
	Prefix string
	// MaxEntry bounds an entry before compression, on Set and when inflating on Get (a
	// value that inflates beyond it is a miss); zero means 1 MiB.
	MaxEntry int64
	// Timeout bounds one round trip; zero means one second.
	Timeout time.Duration
}

func (r *Redis) maxEntry() int64 { return cmp.Or(max(r.MaxEntry, 0), 1<<20) }

// Get implements Store.
func (r *Redis) Get(ctx context.Context, key string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, cmp.Or(max(r.Timeout, 0), time.Second))
	defer cancel()
	z, err := r.Client.Get(ctx, r.Prefix+"rc:"+key).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return inflate(z, r.maxEntry())
}

// Set implements Store; an entry over MaxEntry is not kept.
func (r *Redis) Set(ctx context.Context, key string, entry []byte, ttl time.Duration) error {
	if int64(len(entry)) > r.maxEntry() {
		return nil
	}
	z, err := deflate(entry)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, cmp.Or(max(r.Timeout, 0), time.Second))
	defer cancel()
	return r.Client.Set(ctx, r.Prefix+"rc:"+key, z, ttl).Err()
}

// errTooLarge is returned by inflate for a value that inflates beyond its bound.
var errTooLarge = errors.New("respcache: stored entry inflates beyond max_entry_bytes")

func deflate(b []byte) ([]byte, error) {
	var out bytes.Buffer
	w, err := flate.NewWriter(&out, flate.BestSpeed)
	if err != nil {
		return nil, err
	}
	if _, err := w.Write(b); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// inflate decompresses z, refusing more than max bytes.
func inflate(z []byte, max int64) ([]byte, error) {
	r := flate.NewReader(bytes.NewReader(z))
	defer r.Close()
	b, err := io.ReadAll(io.LimitReader(r, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > max {
		return nil, errTooLarge
	}
	return b, nil
}
