// Package proxy is Agate's HTTP face: a fasthttp server that authenticates keys, parses
// OpenAI chat completions requests once, routes them to a backend, talks to the upstream
// (pooled connections, timeouts, retries, fallbacks, cancellation), and streams the answer
// back as OpenAI SSE, one flushed event at a time. Every failure goes through one funnel
// that renders OpenAI-shaped errors.
package proxy
