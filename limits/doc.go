// Package limits admits and charges chat requests against per-key and per-model rate
// limits (requests and tokens per minute, concurrent requests) and per-key budgets (tokens
// and US dollars per fixed period).
//
// A [Limiter] keeps the counters: [Memory] in this process, [Redis] in a Redis server
// shared by every gateway replica, where each admission and each charge is one atomic
// Lua script, so limits hold exactly across replicas. [ToolCache] is the tool result cache
// of a replica with Redis as its second level, so a result one replica cached is a hit on
// the others.
//
// The package knows nothing of HTTP: callers describe a request with a [Request], get an
// [Admission] back and render it themselves. Nor does it read configuration: [Open] takes
// the package's own [Options] (where the state lives; [RedisOptions] for a [Redis], whose
// zero fields mean [DefaultTimeout] and [DefaultLease]), which the gateway maps from its
// `state:` section, and [SharedToolCache] the tools package's [tools.CacheOptions].
package limits
