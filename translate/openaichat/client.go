package openaichat

import "github.com/agate-gateway/agate/translate"

// The chat completions API's side of the client contract (translate.ClientStream,
// translate.ClientAssembler, translate.ClientErrors): ChunkEncoder is its stream,
// Completion its whole answer, Errors its errors.

// AppendEvent appends ev's chunks (Encode): translate.ClientStream.
func (e *ChunkEncoder) AppendEvent(dst []byte, ev *translate.Event) ([]byte, error) {
	return e.Encode(dst, ev), nil
}

// AppendKeepAlive appends an SSE comment, which clients ignore.
func (e *ChunkEncoder) AppendKeepAlive(dst []byte) []byte {
	return append(dst, ": keep-alive\n\n"...)
}

// Errors writes the chat completions API's errors (translate.ClientErrors): those of a
// stream forwarded from an OpenAI-compatible upstream, and ChunkEncoder's (which embeds it).
type Errors struct{}

// AppendErrorEvent appends the in-band error frame that ends a failed stream: a data line
// holding an OpenAI error object (AppendErrorEvent).
func (Errors) AppendErrorEvent(dst []byte, err *translate.ClientError) []byte {
	return AppendErrorEvent(dst, err.Message, err.Type, err.Param, err.Code)
}

// AppendErrorBody appends the OpenAI error object (AppendError).
func (Errors) AppendErrorBody(dst []byte, err *translate.ClientError) []byte {
	return AppendError(dst, err.Message, err.Type, err.Param, err.Code)
}

// Completion is the chat completions API's translate.ClientAssembler: it collects the
// events in A and writes them as one chat.completion with the client-facing ID and Model,
// created at Now() (read when the body is written). An EventError is kept in A.Err.
type Completion struct {
	A         *Assembler
	ID, Model string
	Now       func() int64
}

// SetModel replaces the client-facing model name (the model that answered, when it is not
// the one c was made for); call it before AppendBody.
func (c *Completion) SetModel(model string) { c.Model = model }

// Add collects ev in c.A.
func (c *Completion) Add(ev *translate.Event) error { return c.A.Add(ev) }

// AppendBody finishes c.A and appends its chat.completion, or returns the upstream error
// it kept.
func (c *Completion) AppendBody(dst []byte) ([]byte, error) {
	if c.A.Err != nil {
		return dst, c.A.Err
	}
	c.A.Finish()
	return c.A.AppendCompletion(dst, c.ID, c.Model, c.Now()), nil
}
