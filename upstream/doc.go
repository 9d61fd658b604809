// Package upstream is the gateway's HTTP client of its backends: it sends an upstream
// request body to one configured backend and hands back the answer. It owns the
// connection pool of each backend (one fasthttp.HostClient to the one host of its base
// URL), the timeouts (dial, response head, a streamed body's silence between reads,
// the wait for a free connection), the exchange of one request and its answer, the
// retries with their backoff and Retry-After, which failures are retryable, reading,
// decoding (gzip, deflate) and bounding an answer's body, lending body buffers, and the pumps that read a
// streamed answer: its server-sent events (over internal/sse), or its AWS event-stream
// frames (Bedrock; decoded by the AWS SDK's eventstream package), as Backend.Framing says.
//
// The contract:
//
//   - New builds a Client from a Backend (the options proxy maps from the configured
//     backend) and the backend's translate.Provider, which supplies the headers every
//     request carries and decodes error answers. It imports no config: the defaults are
//     config's, applied before the options get here; New uses the values as they are.
//   - Client.Send posts one body and returns the Exchange of a 2xx answer, whose head has
//     arrived (a streamed body may still be arriving; any other was read whole, up to
//     Backend.MaxResponseBytes). Any other status, read up to 1 MiB, is the provider's
//     *translate.UpstreamError, with the answer's Retry-After; a failure to reach the
//     upstream is a retryable 502 (504 on timeout, 503 when every pooled connection stays
//     busy). A pooled keep-alive connection that fails before any answer byte is retried
//     once at once on a fresh one; nothing else is retried here. The Exchange is the
//     caller's memory (Send allocates none), closed before the caller's next Send.
//   - An Exchange's body is read as it is (Buffered), whole (ReadBody) or as a stream
//     (DecodedBody, then Client.Pump: Pump or PumpEventStream), each while the Exchange is open; Close releases it, and ending
//     the Send's context closes a streamed body a reader is blocked on.
//   - A Buffer lends its user one body buffer at a time from a pool it is given (shared
//     with the server's request bodies): an upstream request body until Send wrote it, a
//     non-streamed answer's body (Answer: the response's own buffer when fasthttp read it
//     whole) until it was decoded.
//   - A Backend's Signer signs each request once it is final (a cloud's credentials:
//     package cloudauth); a credential that cannot be had is AuthFailed, a 502.
//   - Retries.Do runs the attempts of one call on one backend: a retryable failure is
//     tried again after a full-jitter exponential backoff, or after the upstream's
//     Retry-After when it asked for one no longer than MaxDelay. What the caller counts,
//     traces or limits around an attempt it does in the attempt and in the again hook;
//     this package imports no metrics, telemetry or limits.
//
// An error is the context's once it ended, else a *translate.UpstreamError: the
// provider's decoding of an error answer, or the gateway's own naming "the upstream of
// backend <name>" (Fault; an upstream unreachable, timed out or busy; a body over
// Backend.MaxResponseBytes or that does not decode). Nothing here keeps package-level
// mutable state; a Client is safe for concurrent use, an Exchange is read by one
// goroutine at a time.
package upstream
