package config

import (
	"sort"
	"time"
)

// CacheSettings are the caches a model or a key turns on: models.<m>.cache and
// keys.<k>.cache. (The top-level cache section is the tool result cache's.)
type CacheSettings struct {
	// Responses turns the response cache on for this model's or this key's requests; nil
	// (the default) leaves it off. When both the key and the model of a request configure
	// it, the key's block applies.
	Responses *ResponseCache `koanf:"responses"`
}

// ResponseCache is an exact-match cache of whole answers (docs/response-cache.md): a
// request the key already sent (the same routed model, messages, tools and every sampling
// parameter, in whichever client API, streamed or not) is answered from the cache, in the client's
// API and shape, without calling the upstream and without being charged tokens. Each
// configured block is its own cache; entries are scoped to the API key. It applies to
// translated answers and to the chat completions passthrough (which a cacheable request
// leaves for the translated path); a Responses or Messages passthrough and a key with
// server tools are not cached.
type ResponseCache struct {
	// TTL is how long an answer stays in the cache. Default 10m (also when 0).
	TTL time.Duration `koanf:"ttl"`
	// MaxBytes bounds the memory store's entries in all (their encoded size); the least
	// recently used go first. Default 64 MiB (67108864; also when 0). Memory store only.
	MaxBytes int64 `koanf:"max_bytes"`
	// MaxEntryBytes bounds one cached answer (its encoded events, before compression); a
	// longer answer is served but not cached. Default 1 MiB (1048576; also when 0), and
	// never more than MaxBytes.
	MaxEntryBytes int64 `koanf:"max_entry_bytes"`
	// Store is "memory" (the default, also ""; per replica) or "redis" (the Redis of
	// state, which must be type redis: shared by the replicas, entries compressed and
	// expiring after TTL).
	Store string `koanf:"store"`
	// When is "deterministic" (the default, also ""): only requests that ask for a
	// deterministic answer (temperature 0, or a seed) are cached; or "always": every
	// request.
	When string `koanf:"when"`
}

// The values of ResponseCache.Store and ResponseCache.When.
const (
	ResponseCacheMemory        = "memory"
	ResponseCacheRedis         = "redis"
	ResponseCacheDeterministic = "deterministic"
	ResponseCacheAlways        = "always"
)

const (
	defaultResponseCacheTTL        = 10 * time.Minute
	defaultResponseCacheBytes      = 64 << 20
	defaultResponseCacheEntryBytes = 1 << 20
)

var (
	responseCacheStores = []string{"", ResponseCacheMemory, ResponseCacheRedis}
	responseCacheWhens  = []string{"", ResponseCacheDeterministic, ResponseCacheAlways}
)

// responseCacheDefaults fills in the defaults of every model's and key's response cache.
func (c *Config) responseCacheDefaults() {
	for _, m := range c.Models {
		if m.Cache != nil {
			m.Cache.Responses.defaults()
		}
	}
	for _, k := range c.Keys {
		if k.Cache != nil {
			k.Cache.Responses.defaults()
		}
	}
}

func (r *ResponseCache) defaults() {
	if r == nil {
		return
	}
	setDefault(&r.TTL, defaultResponseCacheTTL)
	setDefault(&r.MaxBytes, int64(defaultResponseCacheBytes))
	setDefault(&r.MaxEntryBytes, min(int64(defaultResponseCacheEntryBytes), r.MaxBytes))
	setDefault(&r.Store, ResponseCacheMemory)
	setDefault(&r.When, ResponseCacheDeterministic)
}

// validateResponseCaches checks every model's and key's response cache.
func (c *Config) validateResponseCaches(v *validator) {
	for _, name := range sortedNames(c.Models) {
		if m := c.Models[name]; m.Cache != nil && m.Cache.Responses != nil {
			c.validateResponseCache(v, "models."+name+".cache.responses", m.Cache.Responses)
		}
	}
	for _, name := range sortedNames(c.Keys) {
		if k := c.Keys[name]; k.Cache != nil && k.Cache.Responses != nil {
			c.validateResponseCache(v, "keys."+name+".cache.responses", k.Cache.Responses)
		}
	}
}

func (c *Config) validateResponseCache(v *validator, p string, r *ResponseCache) {
	v.nonNegativeDuration(p+".ttl", r.TTL)
	if r.MaxBytes < 0 {
		v.addf(p+".max_bytes", "must not be negative")
	}
	if r.MaxEntryBytes < 0 {
		v.addf(p+".max_entry_bytes", "must not be negative")
	}
	if r.MaxBytes > 0 && r.MaxEntryBytes > r.MaxBytes {
		v.addf(p+".max_entry_bytes", "must not be more than max_bytes")
	}
	v.oneOf(p+".store", r.Store, responseCacheStores)
	v.oneOf(p+".when", r.When, responseCacheWhens)
	if r.Store == ResponseCacheRedis && c.State.Type != "redis" {
		v.addf(p+".store", "redis needs state.type: redis (the cache uses the Redis of state)")
	}
}

func sortedNames[V any](m map[string]V) []string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
