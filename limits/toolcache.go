package limits

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/agate-gateway/agate/tools"
)

// ToolCache is a [tools.Cache] in two levels: an in-process LRU first, then Redis, where
// every replica stores what it computed, so a result one replica cached is a hit on the
// others. An entry found in Redis is copied into the LRU, where it lives at most TTL
// more. Redis keys are the prefix, "tc:" and the SHA-256 of the cache key (which may
// hold tool arguments); they expire after TTL. A Redis failure is reported to Errors and
// counts as a miss; each lookup waits at most Timeout. Safe for concurrent use.
type ToolCache struct {
	L1      tools.Cache
	Client  *redis.Client
	Prefix  string
	TTL     time.Duration
	Timeout time.Duration
	Errors  ErrorObserver
}

var _ tools.Cache = (*ToolCache)(nil)

func (c *ToolCache) redisKey(key string) string {
	sum := sha256.Sum256([]byte(key))
	return c.Prefix + "tc:" + hex.EncodeToString(sum[:])
}

func (c *ToolCache) fail(op string, err error) {
	if c.Errors != nil {
		c.Errors.StateError(op, err)
	}
}

// Get implements [tools.Cache].
func (c *ToolCache) Get(key string) (tools.Result, bool) {
	if r, ok := c.L1.Get(key); ok {
		return r, true
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.Timeout)
	defer cancel()
	b, err := c.Client.Get(ctx, c.redisKey(key)).Bytes()
	if err != nil {
		if !errors.Is(err, redis.Nil) {
			c.fail("cache_get", err)
		}
		return tools.Result{}, false
	}
	if len(b) == 0 || b[0] != 'v' { // not an entry this version wrote
		return tools.Result{}, false
	}
	r := tools.Result{Content: string(b[1:])}
	c.L1.Add(key, r)
	return r, true
}

// Add implements [tools.Cache]; error results are not stored in Redis.
func (c *ToolCache) Add(key string, r tools.Result) {
	c.L1.Add(key, r)
	if r.IsError {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.Timeout)
	defer cancel()
	if err := c.Client.Set(ctx, c.redisKey(key), "v"+r.Content, c.TTL).Err(); err != nil {
		c.fail("cache_add", err)
	}
}
