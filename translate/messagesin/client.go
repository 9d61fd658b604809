package messagesin

import "github.com/agate-gateway/agate/translate"

// The Messages API's side of the client contract (translate.ClientStream,
// translate.ClientAssembler, translate.ClientErrors): Encoder is its stream, Message its
// whole answer, Errors its errors.

// AppendEvent appends ev's events (Encode): translate.ClientStream.
func (e *Encoder) AppendEvent(dst []byte, ev *translate.Event) ([]byte, error) {
	return e.Encode(dst, ev)
}

// AppendKeepAlive appends a ping event, after message_start if the stream has not started:
// a Messages stream opens with it.
func (e *Encoder) AppendKeepAlive(dst []byte) []byte {
	if !e.started {
		dst = e.start(dst)
	}
	return AppendPing(dst)
}

// Errors writes the Messages API's errors (translate.ClientErrors): those of a stream
// forwarded from an anthropic upstream, and Encoder's (which embeds it).
type Errors struct{}

// AppendErrorEvent appends the error event that ends a failed stream (AppendErrorEvent):
// the error's type is Anthropic's for its status.
func (Errors) AppendErrorEvent(dst []byte, err *translate.ClientError) []byte {
	return AppendErrorEvent(dst, err.Status, err.Message, err.RequestID)
}

// AppendErrorBody appends an Anthropic error body (AppendError).
func (Errors) AppendErrorBody(dst []byte, err *translate.ClientError) []byte {
	return AppendError(dst, err.Status, err.Message, err.RequestID)
}

// Message is the Messages API's translate.ClientAssembler: it collects the events in A and
// writes them as one Message object with the client-facing ID and Model. An EventError is
// kept in A.Err.
type Message struct {
	A         Assembler
	ID, Model string
}

// SetModel replaces the client-facing model name (the model that answered, when it is not
// the one m was made for); call it before AppendBody.
func (m *Message) SetModel(model string) { m.Model = model }

// Add collects ev in m.A.
func (m *Message) Add(ev *translate.Event) error { return m.A.Add(ev) }

// AppendBody appends the Message object, or returns the upstream error m.A kept.
func (m *Message) AppendBody(dst []byte) ([]byte, error) {
	if m.A.Err != nil {
		return dst, m.A.Err
	}
	return m.A.AppendMessage(dst, m.ID, m.Model), nil
}
