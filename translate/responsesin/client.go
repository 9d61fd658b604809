package responsesin

import "github.com/agate-gateway/agate/translate"

// The Responses API's side of the client contract: Answer is its stream
// (translate.ClientStream) and its whole answer (translate.ClientAssembler); Forward
// rewrites a responses backend's stream for a passthrough, and writes its errors
// (translate.ClientErrors).

// Answer writes one response over Enc, streamed or not as Enc was made (EncoderOptions.
// Stream), finished at Now() (Unix seconds, read when the answer ends).
type Answer struct {
	Enc *Encoder
	Now func() int64
}

// SetModel replaces the client-facing model name (Encoder.SetModel).
func (a *Answer) SetModel(model string) { a.Enc.SetModel(model) }

// AppendEvent appends ev's events (Encoder.Encode).
func (a *Answer) AppendEvent(dst []byte, ev *translate.Event) ([]byte, error) {
	return a.Enc.Encode(dst, ev), nil
}

// AppendKeepAlive appends an SSE comment, which clients ignore.
func (a *Answer) AppendKeepAlive(dst []byte) []byte {
	return append(dst, ": keep-alive\n\n"...)
}

// Finish appends the end of the stream (Encoder.Finish): the open items done and
// response.completed or response.incomplete.
func (a *Answer) Finish(dst []byte) []byte { return a.Enc.Finish(dst, a.Now()) }

// AppendErrorEvent appends the error event that ends a failed stream, its code OpenAI's
// code, else its type: after response.created and response.in_progress when nothing was
// written yet (a stream a keep-alive started), numbered after the events before it.
func (a *Answer) AppendErrorEvent(dst []byte, err *translate.ClientError) []byte {
	dst = a.Enc.Start(dst)
	return a.Enc.AppendError(dst, err.Message, errorCode(err), err.Param)
}

// errorCode is the code of a Responses error event: OpenAI's code, else its type.
func errorCode(err *translate.ClientError) string {
	if err.Code != "" {
		return err.Code
	}
	return err.Type
}

// AppendErrorBody appends an OpenAI error object (translate.AppendOpenAIError).
func (a *Answer) AppendErrorBody(dst []byte, err *translate.ClientError) []byte {
	return appendErrorBody(dst, err)
}

func appendErrorBody(dst []byte, err *translate.ClientError) []byte {
	return translate.AppendOpenAIError(dst, err.Message, err.Type, err.Param, err.Code)
}

// Add records ev in Enc (made for a non-streaming client); an EventError is returned,
// which ends the answer.
func (a *Answer) Add(ev *translate.Event) error {
	if ev.Kind == translate.EventError {
		return ev.Err
	}
	a.Enc.Encode(nil, ev)
	return nil
}

// AppendBody finishes Enc and appends the Response object.
func (a *Answer) AppendBody(dst []byte) ([]byte, error) {
	a.Enc.Finish(nil, a.Now())
	return a.Enc.AppendResponse(dst), nil
}

// Forward rewrites the events of a responses backend's stream as the client gets them:
// each with the client-facing Model (a JSON string literal) in the Response object it
// carries, and a sequence_number above the one before it (Seq). Final and Output are the
// terminal event's Response object and its output (copies), for storing. It serves one
// response, its retries included; Begin starts each attempt's stream.
type Forward struct {
	Model         []byte
	Seq           Sequencer
	Final, Output []byte
	terminal      bool
	scratch       []byte // an event Seq renumbered
}

// Forwarded is what Forward.Event read of an upstream event.
type Forwarded struct {
	// DeltaBytes is the output it carried (StreamEvent.DeltaBytes).
	DeltaBytes int
	// Usage is the usage of a terminal event's Response, when HasUsage.
	Usage    translate.Usage
	HasUsage bool
}

// Begin starts an attempt's stream.
func (f *Forward) Begin() { f.terminal = false }

// Ended reports whether the stream had its terminal event (response.completed,
// .incomplete, .failed, or error): a stream that ends without one was cut.
func (f *Forward) Ended() bool { return f.terminal }

// Event appends the SSE event the client gets for the upstream event data to dst, and
// what it read; ok is false, and nothing appended, when data is not a JSON object. data
// is only read during the call.
func (f *Forward) Event(dst, data []byte) (out []byte, r Forwarded, ok bool) {
	ev, ok := ReadStreamEvent(data)
	if !ok {
		return dst, r, false
	}
	out, r = f.EventRead(dst, data, ev)
	return out, r, true
}

// EventRead is Event for data its caller already read: ev is what ReadStreamEvent (or
// ReadFlatEvent, which reads the same) returned for data, which it accepted.
func (f *Forward) EventRead(dst, data []byte, ev StreamEvent) (out []byte, r Forwarded) {
	r.DeltaBytes = ev.DeltaBytes
	typ := ev.Type
	// Numbered after every event the client got before it, whatever the upstream sent
	// (TestResponses_PassthroughSequenceNumbers).
	if d, renumbered := f.Seq.Event(f.scratch, data, ev); renumbered {
		data, f.scratch = d, d[:0]
	}
	dst = append(dst, "event: "...)
	dst = append(dst, typ...)
	dst = append(dst, "\ndata: "...)
	start := len(dst)
	if carriesResponse(typ) {
		dst = AppendWithModel(dst, data, true, f.Model)
	} else {
		dst = append(dst, data...)
	}
	switch typ {
	case "response.completed", "response.incomplete", "response.failed":
		f.terminal = true
		resp := ReadEventResponse(dst[start:])
		f.Final = []byte(resp.Response)
		f.Output = []byte(resp.Output)
		r.Usage, r.HasUsage = resp.Usage, true
	case "error":
		f.terminal = true
	}
	return append(dst, "\n\n"...), r
}

// AppendErrorEvent appends the error event that ends a failed forwarded stream, numbered
// after the events forwarded (Seq), its code OpenAI's code, else its type.
func (f *Forward) AppendErrorEvent(dst []byte, err *translate.ClientError) []byte {
	return AppendErrorEvent(dst, f.Seq.Next(), err.Message, errorCode(err), err.Param)
}

// AppendErrorBody appends an OpenAI error object (translate.AppendOpenAIError).
func (f *Forward) AppendErrorBody(dst []byte, err *translate.ClientError) []byte {
	return appendErrorBody(dst, err)
}

// carriesResponse reports whether a stream event of type typ carries the Response object.
func carriesResponse(typ string) bool {
	switch typ {
	case "response.created", "response.in_progress", "response.queued", "response.completed",
		"response.incomplete", "response.failed":
		return true
	}
	return false
}
