package responsestore

import (
	"context"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// Redis is a Store shared by every gateway replica using the same Redis and Prefix: a
// response stored by one replica is continued or read on any other. Keys, all under
// Prefix:
//
//	rs:<id>   hash {k: key, r: response, i: input, o: output, u: upstream, x: overlong},
//	          expiring TTL after it was stored
//	rso:<id>  hash {k: key, d: deleted}: the id's owner, kept a day longer than the
//	          record, so that an expired id is told apart from an unknown one and no
//	          other key can take the id over
//	rsi       sorted set of the records' ids by the time they were stored (ms)
//	rsz       hash id -> the record's size; rsb: the records' total size
//
// Put runs one script that checks the owner, stores the record and, while the store is
// over MaxEntries or MaxBytes, drops the oldest records, so the store stays bounded
// whatever Redis's memory policy; the index forgets the records Redis expired as later
// Puts pass them. The index keys carry no TTL (they are bounded by the records'
// number). Each call waits at most Timeout. Safe for concurrent use.
type Redis struct {
	Client *redis.Client
	Prefix string
	// TTL is how long a record lives; zero means 24h.
	TTL time.Duration
	// MaxEntries bounds the number of records, MaxBytes their total size (as Memory
	// counts it); zero means no bound. A record larger than MaxBytes is not stored.
	MaxEntries int
	MaxBytes   int64
	// Timeout bounds one call's Redis round trips; zero means one second.
	Timeout time.Duration
}

var _ Store = (*Redis)(nil)

// The fields of a record's hash.
const (
	fieldKey      = "k"
	fieldResponse = "r"
	fieldInput    = "i"
	fieldOutput   = "o"
	fieldUpstream = "u"
	fieldOverlong = "x"
	fieldDeleted  = "d"
)

func (r *Redis) ttl() time.Duration {
	if r.TTL <= 0 {
		return 24 * time.Hour
	}
	return r.TTL
}

func (r *Redis) ctx(ctx context.Context) (context.Context, context.CancelFunc) {
	d := r.Timeout
	if d <= 0 {
		d = time.Second
	}
	return context.WithTimeout(ctx, d)
}

// keys returns the keys of id's scripts: record, owner, index, sizes, total.
func (r *Redis) keys(id string) []string {
	return []string{r.Prefix + "rs:" + id, r.Prefix + "rso:" + id, r.Prefix + "rsi", r.Prefix + "rsz", r.Prefix + "rsb"}
}

// dropFunction removes an id from the index and its size from the total. KEYS as keys.
const dropFunction = `
local function drop(x)
  local s = redis.call('HGET', KEYS[4], x)
  if s then redis.call('DECRBY', KEYS[5], s); redis.call('HDEL', KEYS[4], x) end
  redis.call('ZREM', KEYS[3], x)
end
`

// putScript stores a record unless its id is another key's. ARGV: id, key, ttl ms, owner
// ttl ms, max entries, max bytes, size, prefix, response, input, output, upstream,
// overlong. Returns 1 when stored, 0 when the id is another key's, 2 when the record is
// over max bytes.
var putScript = redis.NewScript(dropFunction + `
local id, owner = ARGV[1], ARGV[2]
local ttl, ottl = tonumber(ARGV[3]), tonumber(ARGV[4])
local maxn, maxb, size = tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7])
local held = redis.call('HGET', KEYS[1], 'k') or redis.call('HGET', KEYS[2], 'k')
if held and held ~= owner then return 0 end
if maxb > 0 and size > maxb then return 2 end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
for _, x in ipairs(redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', now - ttl, 'LIMIT', 0, 100)) do drop(x) end
drop(id)
redis.call('DEL', KEYS[1], KEYS[2])
redis.call('HSET', KEYS[1], 'k', owner, 'r', ARGV[9], 'i', ARGV[10], 'o', ARGV[11], 'u', ARGV[12], 'x', ARGV[13])
redis.call('PEXPIRE', KEYS[1], ttl)
redis.call('HSET', KEYS[2], 'k', owner)
redis.call('PEXPIRE', KEYS[2], ottl)
redis.call('ZADD', KEYS[3], now, id)
redis.call('HSET', KEYS[4], id, size)
local used = redis.call('INCRBY', KEYS[5], size)
while (maxn > 0 and redis.call('ZCARD', KEYS[3]) > maxn) or (maxb > 0 and used > maxb) do
  local v = redis.call('ZPOPMIN', KEYS[3])
  if #v == 0 then break end
  local s = redis.call('HGET', KEYS[4], v[1])
  if s then used = redis.call('DECRBY', KEYS[5], s); redis.call('HDEL', KEYS[4], v[1]) end
  redis.call('DEL', ARGV[8] .. 'rs:' .. v[1])
end
return 1
`)

// deleteScript removes a record of key ARGV[1], keeping its owner. Returns 0 when the
// record is not there or is another key's.
var deleteScript = redis.NewScript(dropFunction + `
if redis.call('HGET', KEYS[1], 'k') ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[1])
drop(ARGV[2])
redis.call('HSET', KEYS[2], 'k', ARGV[1], 'd', '1')
if redis.call('PTTL', KEYS[2]) < 0 then redis.call('PEXPIRE', KEYS[2], ARGV[3]) end
return 1
`)

// Put stores rec under id (see Store).
func (r *Redis) Put(ctx context.Context, id string, rec *Record) error {
	ctx, cancel := r.ctx(ctx)
	defer cancel()
	ttl := r.ttl()
	overlong := "0"
	if rec.Overlong {
		overlong = "1"
	}
	n, err := putScript.Run(ctx, r.Client, r.keys(id), id, rec.Key, ttl.Milliseconds(), (ttl + 24*time.Hour).Milliseconds(),
		r.MaxEntries, r.MaxBytes, rec.size()+len(id), r.Prefix, rec.Response, rec.Input, rec.Output, rec.Upstream, overlong).Int()
	if err != nil {
		return err
	}
	if n == 0 {
		return ErrIDTaken
	}
	return nil
}

// Get returns the record of id if key owns it.
func (r *Redis) Get(ctx context.Context, key, id string) (*Record, error) {
	ctx, cancel := r.ctx(ctx)
	defer cancel()
	m, err := r.Client.HGetAll(ctx, r.Prefix+"rs:"+id).Result()
	if err != nil {
		return nil, err
	}
	if len(m) == 0 {
		owner, err := r.Client.HGetAll(ctx, r.Prefix+"rso:"+id).Result()
		if err != nil {
			return nil, err
		}
		if owner[fieldKey] == key && owner[fieldDeleted] == "" {
			return nil, ErrExpired
		}
		return nil, ErrNotFound
	}
	if m[fieldKey] != key {
		return nil, ErrNotFound
	}
	return &Record{Key: key, Response: []byte(m[fieldResponse]), Input: []byte(m[fieldInput]),
		Output: []byte(m[fieldOutput]), Upstream: m[fieldUpstream], Overlong: m[fieldOverlong] == "1"}, nil
}

// Delete removes the record of id if key owns it. The id stays the key's.
func (r *Redis) Delete(ctx context.Context, key, id string) error {
	ctx, cancel := r.ctx(ctx)
	defer cancel()
	n, err := deleteScript.Run(ctx, r.Client, r.keys(id), key, id, strconv.FormatInt((r.ttl()+24*time.Hour).Milliseconds(), 10)).Int()
	if err != nil {
		return err
	}
	if n == 0 {
		return ErrNotFound
	}
	return nil
}
