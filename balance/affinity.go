package balance

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"time"

	"github.com/hashicorp/golang-lru/v2/simplelru"
	"github.com/redis/go-redis/v9"
)

// Affinity stores which deployment each conversation (an affinity key of a model) went
// to. Memory is one process's; Redis is shared by every replica.
type Affinity interface {
	// Lookup returns the deployment stored for key of model and true, refreshing its
	// TTL; when there is none it stores candidate and returns it and false. One round
	// trip at most.
	Lookup(ctx context.Context, model string, key uint64, candidate string) (string, bool, error)
	// Store stores deployment for key of model, replacing what was stored.
	Store(ctx context.Context, model string, key uint64, deployment string) error
}

// memKey is a Memory entry's key.
type memKey struct {
	model string
	key   uint64
}

// memEntry is a Memory entry: the deployment's name and when it expires.
type memEntry struct {
	name    string
	expires int64
}

// Memory is an in-process Affinity: an LRU of at most its size entries, each dropped
// TTL after its last use.
type Memory struct {
	ttl time.Duration
	mu  sync.Mutex
	lru *simplelru.LRU[memKey, memEntry]
}

// NewMemory returns a Memory of at most size entries (at least 1), each kept ttl after
// its last use (0: 1 hour).
func NewMemory(size int, ttl time.Duration) *Memory {
	if ttl <= 0 {
		ttl = time.Hour
	}
	lru, _ := simplelru.NewLRU[memKey, memEntry](max(size, 1), nil) // only a size below 1 fails
	return &Memory{ttl: ttl, lru: lru}
}

// get returns the deployment stored for key, "" for none or an expired one, and
// refreshes its TTL.
func (m *Memory) get(model string, key uint64, now time.Time) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	k := memKey{model, key}
	e, ok := m.lru.Get(k)
	if !ok {
		return ""
	}
	ns := now.UnixNano()
	if e.expires <= ns {
		m.lru.Remove(k)
		return ""
	}
	e.expires = ns + int64(m.ttl)
	m.lru.Add(k, e)
	return e.name
}

// put stores name for key.
func (m *Memory) put(model string, key uint64, name string, now time.Time) {
	m.mu.Lock()
	m.lru.Add(memKey{model, key}, memEntry{name: name, expires: now.UnixNano() + int64(m.ttl)})
	m.mu.Unlock()
}

// Len returns the number of entries (expired ones not yet dropped included).
func (m *Memory) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.lru.Len()
}

// Lookup implements Affinity.
func (m *Memory) Lookup(_ context.Context, model string, key uint64, candidate string) (string, bool, error) {
	now := time.Now()
	if name := m.get(model, key, now); name != "" {
		return name, true, nil
	}
	m.put(model, key, candidate, now)
	return candidate, false, nil
}

// Store implements Affinity.
func (m *Memory) Store(_ context.Context, model string, key uint64, deployment string) error {
	m.put(model, key, deployment, time.Now())
	return nil
}

// Redis is an Affinity in Redis, shared by every replica that uses the same server and
// prefix: one key per conversation, "<prefix>affinity:<model>:<key in hex>", expiring TTL
// after its last use.
type Redis struct {
	Client *redis.Client
	// Prefix starts every key (the state section's key_prefix).
	Prefix string
	// TTL is how long an entry lives after its last use; 0: 1 hour.
	TTL time.Duration
	// Timeout bounds one round trip; 0: 50ms.
	Timeout time.Duration
}

// lookupScript returns the deployment stored at KEYS[1] and 1, refreshing its TTL
// (ARGV[2] milliseconds), or stores ARGV[1] there and returns it and 0: one round trip,
// atomic, so two replicas that see a new conversation at once agree on its deployment.
var lookupScript = redis.NewScript(`
local v = redis.call('GET', KEYS[1])
if v then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return {v, 1}
end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return {ARGV[1], 0}
`)

func (r *Redis) key(model string, key uint64) string {
	return r.Prefix + "affinity:" + model + ":" + strconv.FormatUint(key, 16)
}

func (r *Redis) ttl() time.Duration {
	if r.TTL <= 0 {
		return time.Hour
	}
	return r.TTL
}

func (r *Redis) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	t := r.Timeout
	if t <= 0 {
		t = 50 * time.Millisecond
	}
	return context.WithTimeout(ctx, t)
}

// Lookup implements Affinity.
func (r *Redis) Lookup(ctx context.Context, model string, key uint64, candidate string) (string, bool, error) {
	ctx, cancel := r.bound(ctx)
	defer cancel()
	res, err := lookupScript.Run(ctx, r.Client, []string{r.key(model, key)}, candidate, r.ttl().Milliseconds()).Slice()
	if err != nil {
		return "", false, err
	}
	if len(res) != 2 {
		return "", false, errors.New("balance: unexpected affinity lookup reply")
	}
	name, _ := res[0].(string)
	found, _ := res[1].(int64)
	if name == "" {
		return "", false, errors.New("balance: unexpected affinity lookup reply")
	}
	return name, found == 1, nil
}

// Store implements Affinity.
func (r *Redis) Store(ctx context.Context, model string, key uint64, deployment string) error {
	ctx, cancel := r.bound(ctx)
	defer cancel()
	return r.Client.Set(ctx, r.key(model, key), deployment, r.ttl()).Err()
}
