// Package proxy is Agate's HTTP face: a fasthttp server that serves three client APIs,
// OpenAI chat completions (/v1/chat/completions), OpenAI Responses (/v1/responses and its
// stored responses) and Anthropic Messages (/v1/messages and count_tokens), beside
// /v1/models, /metrics and the health checks. Every API takes one request path: the key
// is authenticated, the body parsed once by the API's client dialect (translate/openaichat,
// responsesin, messagesin), the model routed to a backend and admitted against the limits;
// the upstream is called (pooled connections, timeouts, retries, fallbacks, cancellation),
// through the tool loop when the key has server tools, and the answer written back in the
// client's API, streamed one flushed event at a time or whole. A request whose API is its
// backend's own is passed through, read and normalized chunk by chunk rather than
// translated. Every failure goes through one funnel that renders the error in the client
// API's shape (OpenAI's, or Anthropic's on the Messages routes).
package proxy
