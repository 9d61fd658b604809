package proxy

import (
	"errors"

	"github.com/agate-gateway/agate/translate"
)

// The passthrough: a request whose route and fallbacks are all backends of the client's own
// API (chat → openai, Responses → responses, Messages → anthropic), and that runs no tool
// loop, is forwarded nearly as the client sent it, and the upstream's answer nearly as it
// came. One mechanism serves the three APIs, over the run's forwarder: what it reads of
// the upstream's events and how it rewrites them are the client API's (chatForward,
// responsesForward, messagesForward, each over its dialect's readers); this file is their
// contract. The transport is the model call's (modelCall.roundTrip: retries and
// fallbacks, the upstream body, the usage), the stream the stream writer's
// (forwardStream), the whole answer complete's (forwardComplete).

// forwarder is a client API's side of the passthrough. It serves one request, its
// retries and fallbacks included, and is not safe for concurrent use.
type forwarder interface {
	// errors returns the writer of the client API's errors: a forwarded stream's error
	// event, or its error body.
	errors() translate.ClientErrors
	// request appends the upstream request body for route r to dst: the client's body,
	// its model the route's upstream model.
	request(dst []byte, r *route, opts *translate.Options) ([]byte, error)
	// begin starts an attempt's stream from route r.
	begin(r *route)
	// event appends to dst the client's bytes for one upstream SSE event (typ and data,
	// views valid during the call), reporting the output and usage it read to m; how says
	// what the stream does with the bytes (passed). Its error ends the attempt, after
	// bytes that are to be written are (an upstream error event the client gets as it is:
	// the error wraps errReported).
	event(dst, typ, data []byte, m *meter) (out []byte, how passed, err error)
	// end is called once the attempt's stream stopped, with nil at its clean end (it then
	// returns the error of a stream that ended before it finished: an upstream fault) or
	// the error that stopped it, which it returns.
	end(err error, m *meter) error
	// whole appends to dst the client's body for an upstream's whole answer, reporting its
	// usage to m. body lives until whole returns: nothing of it may be kept.
	whole(dst, body []byte, r *route, m *meter) ([]byte, error)
}

// passed says what the stream does with the bytes of a forwarded event.
type passed uint8

const (
	// passSent: the client is deemed to have seen part of the attempt's answer, so its
	// failure is not retried (modelCall.sent), even when the event failed.
	passSent passed = 1 << iota
	// passWrite: the bytes go to the client (and start the stream).
	passWrite
	// passContent: the first such event is the answer's time to first token.
	passContent
	// passFirstChunk: the event is a chunk for the attempt's span (tracing).
	passFirstChunk
)

// errReported is returned by the passthrough when the upstream's own error event was
// forwarded: the stream has its error and needs no other.
var errReported = errors.New("upstream error event forwarded")

// streamEnd is upstream.Pump's onEnd for a forwarded stream: the forwarder's end judges it.
func streamEnd() error { return nil }
