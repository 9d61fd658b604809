package translate

import "github.com/agate-gateway/agate/internal/jsonx"

// The client side's contract, as Provider is the upstream side's: a client dialect
// (openaichat, responsesin, messagesin) writes the core's events in its API's wire
// format, streamed (ClientStream) or whole (ClientAssembler), and its API's errors. The
// gateway keeps one stream writer and one non-streamed path over them: what differs
// between the client APIs is here, not in three writers.

// ClientError is a failure as the gateway reports it to a client, whatever its API:
// the HTTP status, OpenAI's error type, the parameter to blame and OpenAI's code ("" for
// none of either), the message, and the request's id.
type ClientError struct {
	Status                     int
	Message, Type, Param, Code string
	RequestID                  string
}

// ClientErrors writes a client API's errors: all a stream the gateway forwards from an
// upstream of the client's own API needs of its dialect (the upstream's events are the
// stream). Its methods append to dst and return the extended slice.
type ClientErrors interface {
	// AppendErrorEvent appends the in-band error that ends a started stream, after any
	// event the stream holds (a Responses stream's error event is numbered after them).
	AppendErrorEvent(dst []byte, e *ClientError) []byte
	// AppendErrorBody appends the JSON body of the error status that answers a stream that
	// failed before it started.
	AppendErrorBody(dst []byte, e *ClientError) []byte
}

// ClientStream writes one streamed answer in a client API's wire format: SSE events, each
// whole ("...\n\n"), appended to the caller's buffer. It is made for one answer and is not
// safe for concurrent use. The caller writes:
//
//   - nothing, then AppendErrorBody: the answer failed before anything was written (the
//     body of the error status the client gets instead of a stream);
//   - else any number of AppendEvent and AppendKeepAlive, then exactly one of Finish (the
//     answer ended well) or AppendErrorEvent (it failed after the stream started), or
//     nothing more (the client left).
//
// Every method appends to dst and returns the extended slice; none keeps dst. The
// strings of an Event are valid only during AppendEvent: what it keeps, it copies.
type ClientStream interface {
	ClientErrors
	// AppendEvent appends what ev adds to the stream, possibly nothing (an event the API
	// has no place for, or one it writes later: a finish reason waits for the usage). ev
	// is never EventError: the caller ends the stream with AppendErrorEvent instead. An
	// error means the events cannot be written in this API; the caller ends the stream.
	AppendEvent(dst []byte, ev *Event) ([]byte, error)
	// AppendKeepAlive appends what keeps an idle stream open (the tool loop calls it while
	// server tools run) without adding content: an SSE comment, or the API's ping event,
	// after whatever opens the stream if nothing did yet (Messages: message_start).
	AppendKeepAlive(dst []byte) []byte
	// Finish appends the end of an answer that ended well: what the events left open and
	// the stream's terminal event ([DONE], response.completed, message_stop).
	Finish(dst []byte) []byte
}

// ClientAssembler collects the events of one non-streamed answer into its body in a client
// API's wire format. It is made for one answer and is not safe for concurrent use.
type ClientAssembler interface {
	// Add collects ev, copying what it keeps (ev's strings live only during the call). An
	// EventError is kept, or returned (which ends the answer), as the implementation
	// says; either way AppendBody then returns its error.
	Add(ev *Event) error
	// AppendBody appends the whole answer to dst once every event was added, or returns
	// the failure an EventError reported, appending nothing.
	AppendBody(dst []byte) ([]byte, error)
}

// AppendOpenAIError appends an OpenAI error object, {"error":{"message","type","param",
// "code"}}, param and code null when empty: the error body of the chat completions and
// Responses APIs, and of the gateway's own refusals whatever the path.
func AppendOpenAIError(dst []byte, message, typ, param, code string) []byte {
	dst = append(dst, `{"error":{"message":`...)
	dst = jsonx.AppendString(dst, message)
	dst = append(dst, `,"type":`...)
	dst = jsonx.AppendString(dst, typ)
	dst = append(dst, `,"param":`...)
	dst = appendStringOrNull(dst, param)
	dst = append(dst, `,"code":`...)
	dst = appendStringOrNull(dst, code)
	return append(dst, `}}`...)
}

func appendStringOrNull(dst []byte, s string) []byte {
	if s == "" {
		return append(dst, "null"...)
	}
	return jsonx.AppendString(dst, s)
}
