// Package breaker keeps a circuit breaker per upstream deployment ("<backend>/<upstream
// model>"), so that a gateway stops sending requests to an upstream that keeps failing
// and sends them to its fallbacks instead, then tries it again after a cooldown.
//
// # The state machine
//
// A circuit starts closed: [Set.Allow] lets every call through. [Set.Record] counts
// consecutive failures; the Policy.Failures-th opens the circuit for Policy.Cooldown, during
// which Allow refuses every call. Once the cooldown passed, the circuit is half-open:
// Allow lets exactly one call through (the probe) and refuses the others. The probe's
// success closes the circuit (and resets the count), its failure opens it for another
// cooldown. A probe whose outcome is never recorded (the client left, the process died)
// gives its turn up after one cooldown: the next Allow is a new probe. What counts as a
// failure is the caller's to say (ok=false): the gateway counts retryable upstream
// failures (5xx, 529, transport errors, timeouts), not the client's 4xx.
//
// Separately, [Set.Hold] keeps a closed circuit's calls away until a time (an upstream's
// 429 with Retry-After): Allow refuses them until then, and [Set.Check] tells such a hold
// from an open circuit, for callers that would rather call a held upstream than nobody.
//
// Keys the Set was not configured with ([Set.Configure]) have no circuit: Allow lets them
// through and Record ignores them. Configure keeps the state of keys that remain, so a
// configuration reload does not close an open circuit.
//
// # Cost
//
// Allow and Record of a closed circuit take no lock and allocate nothing: an atomic load
// of the key table, a map lookup and atomic loads (a success with no failures counted) or
// one mutex (a failure). Time is always the caller's now, so tests need no clock.
//
// # Sharing across replicas
//
// With [Options.Redis], replicas share their circuits' openings through one Redis server:
//   - The replica whose count opens a circuit writes `<prefix>circuit:<key>` (the opening's
//     end, Unix milliseconds, expiring with it) and publishes `open <until-ms> <key>` on the
//     channel `<prefix>circuit`. Every replica subscribed opens its circuit until then.
//   - When the cooldown passed, the one replica that sets `<prefix>circuit-probe:<key>`
//     (SET NX, expiring after one cooldown) probes; the others keep the circuit open until
//     the probe's outcome is published (`closed 0 <key>` when it succeeded, a new `open`
//     when it failed) or the lease expires.
//   - On every (re)subscription a replica reads the open circuits of its keys (MGET), so a
//     replica that starts, or lost its connection, while a circuit is open learns of it.
//
// Failures are counted per replica (no round trip per failure), so with R replicas behind a
// balancer a circuit opens after at most R×Failures failures in all, and everywhere at once.
// Allow and Record of a closed circuit never touch Redis; only transitions and the probe's
// claim do (bounded by Options.Timeout). When Redis does not answer, each replica goes on
// with its own state, and the error is reported to Options.Errors. A 429 hold stays local.
package breaker
