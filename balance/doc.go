// Package balance picks, for each attempt of a request to a model, one of the model's
// deployments (a backend and the model name it is sent as): by a strategy (Weighted,
// LeastBusy, Latency, Cost), within the best priority tier that has a usable deployment,
// leaving out deployments that are unhealthy (Health), over their own limits (max_conns,
// requests and tokens per minute) or resting after a 429 until its Retry-After passed,
// and, with affinity, keeping a conversation on the deployment that served it (Affinity,
// PrefixKey) so that the provider's prompt cache stays warm.
//
// A Set is one model's deployments. It is safe for concurrent use. Per-deployment state
// (in-flight count, latency EWMA, rest after a 429, the minute windows) lives in a
// State, which a Set built for a reloaded config takes over by name (Options.Previous),
// so in-flight requests of the old config still count against the new one.
//
// The package is pure: no configuration, no network but an optional Redis affinity
// store, and its clock and randomness are the caller's (now arguments, Options.Rand).
package balance
