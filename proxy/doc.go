// Package proxy is Agate's HTTP face: a fasthttp server that serves three client APIs,
// OpenAI chat completions (/v1/chat/completions), OpenAI Responses (/v1/responses and its
// stored responses) and Anthropic Messages (/v1/messages and count_tokens), beside
// /v1/models, /metrics and the health checks. Every API takes one request path: the key
// is authenticated, the body parsed once by the API's client dialect (translate/openaichat,
// responsesin, messagesin), the model routed to a backend and admitted against the limits;
// the upstream is called through package upstream (pooled connections, timeouts, retries)
// and the route's fallbacks, through the tool loop when the key has server tools, and the answer written back in the
// client's API, streamed one flushed event at a time or whole. A request whose API is its
// backend's own is passed through, read and normalized chunk by chunk rather than
// translated. Every failure goes through one funnel that renders the error in the client
// API's shape (OpenAI's, or Anthropic's on the Messages routes).
//
// The files, from the HTTP face down: the server, its routes and the one request path
// (server.go, serve.go), request bodies and keys (body.go), client connections
// (listener.go); each client API's side of a request, an endpointRun and a forwarder
// (chat.go, responses.go, messages.go, messages_count.go); the answer, streamed
// (stream.go) or whole (complete.go), and the passthrough's contract (passthrough.go);
// one client request, requestRun (run.go); its model call over package upstream, with
// its usage, limits, fallbacks, betas and spans (call.go, usage.go, limits.go,
// fallback.go, betas.go, tracing.go); the runtime built from a config (runtime.go,
// backend.go, options.go); and beneath them the error funnel, metric labels, log lines
// and the request's record (errors.go, labels.go, logging.go, done.go).
package proxy
