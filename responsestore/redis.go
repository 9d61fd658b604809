package responsestore

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"
)

// Redis is a Store shared by every gateway replica using the same Redis and Prefix (the
// state section's key_prefix): a response stored by one replica is continued or read on
// any other. Each record is a Redis hash under Prefix+"rs:"+id that expires after TTL;
// Redis's own memory policy bounds the total. A marker under Prefix+"rsk:"+id, kept a day
// longer, remembers the owner so that an expired id is told apart from an unknown one.
// Each call waits at most Timeout. Safe for concurrent use.
type Redis struct {
	Client *redis.Client
	Prefix string
	// TTL is how long a record lives; zero means 24h.
	TTL time.Duration
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

// Put stores rec under id.
func (r *Redis) Put(ctx context.Context, id string, rec *Record) error {
	ctx, cancel := r.ctx(ctx)
	defer cancel()
	key := r.Prefix + "rs:" + id
	_, err := r.Client.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Del(ctx, key)
		p.HSet(ctx, key, fieldKey, rec.Key, fieldResponse, rec.Response, fieldInput, rec.Input, fieldOutput, rec.Output, fieldUpstream, rec.Upstream)
		p.Expire(ctx, key, r.ttl())
		p.Set(ctx, r.Prefix+"rsk:"+id, rec.Key, r.ttl()+24*time.Hour)
		return nil
	})
	return err
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
		owner, err := r.Client.Get(ctx, r.Prefix+"rsk:"+id).Result()
		if err == nil && owner == key {
			return nil, ErrExpired
		}
		if err != nil && !errors.Is(err, redis.Nil) {
			return nil, err
		}
		return nil, ErrNotFound
	}
	if m[fieldKey] != key {
		return nil, ErrNotFound
	}
	return &Record{Key: key, Response: []byte(m[fieldResponse]), Input: []byte(m[fieldInput]),
		Output: []byte(m[fieldOutput]), Upstream: m[fieldUpstream]}, nil
}

// Delete removes the record of id if key owns it.
func (r *Redis) Delete(ctx context.Context, key, id string) error {
	ctx, cancel := r.ctx(ctx)
	defer cancel()
	k := r.Prefix + "rs:" + id
	owner, err := r.Client.HGet(ctx, k, fieldKey).Result()
	if errors.Is(err, redis.Nil) || (err == nil && owner != key) {
		return ErrNotFound
	}
	if err != nil {
		return err
	}
	return r.Client.Del(ctx, k, r.Prefix+"rsk:"+id).Err()
}
