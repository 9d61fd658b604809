package translate

// Provider is one upstream dialect: how to phrase a request for it and how to read its
// answers. Implementations are stateless and safe for concurrent use; per-response state
// lives in the StreamDecoder.
type Provider interface {
	// Path returns what to append to the backend's base URL (path and query).
	Path(upstreamModel string, stream bool) string
	// Headers returns the request headers besides Content-Type, authentication included.
	// They are the same for every request: a backend asks once and keeps them.
	Headers(apiKey string) []Header
	// AppendRequest appends the upstream request body for req to dst. Errors are
	// *ParamError values for requests this upstream cannot honour.
	AppendRequest(dst []byte, req *Request, opts *Options) ([]byte, error)
	// NewStreamDecoder returns a decoder for one streamed response.
	NewStreamDecoder(opts *Options) StreamDecoder
	// DecodeResponse decodes a whole non-streamed response body into events, ending with
	// EventUsage and EventFinish for every choice.
	DecodeResponse(body []byte, emit Emit) error
	// DecodeError maps an upstream error response (status >= 400) to the error the client
	// sees, keeping the upstream's message.
	DecodeError(status int, body []byte) *UpstreamError
}

// ResponseDecoderInto is implemented by a Provider whose whole-response decode can emit
// through an Event its caller provides: DecodeResponseInto(body, ev, emit) is
// DecodeResponse(body, emit), each event written into *ev (whatever it held before)
// and emit called with ev. DecodeResponse's own Event is allocated for every answer, since
// the Emit it is handed is not known; a caller that keeps an Event for its answers (the
// gateway's recycled model call) decodes without that allocation. Emit's callee may read
// *ev only while it runs, as with DecodeResponse.
type ResponseDecoderInto interface {
	DecodeResponseInto(body []byte, ev *Event, emit Emit) error
}

// StreamDecoder decodes one streamed upstream response, fed one SSE event at a time. It
// is not safe for concurrent use.
type StreamDecoder interface {
	// Event decodes one SSE event: its type ("" when the event had no event: field) and
	// its data. An event whose data cannot be read at all (not JSON) is an error that
	// matches ErrMalformedEvent (MalformedEvent), the decoder's state left as it was:
	// the caller may skip it explicitly (counted and logged), and the stream goes on
	// with the next event. Every other malformed event (a known event in the wrong place
	// or missing what it must carry) is an error after which the stream cannot be
	// followed; a decoder never skips anything silently.
	Event(typ, data []byte, emit Emit) error
	// Close ends the stream. It emits the terminal events (usage, finish) exactly once and
	// returns an error wrapping ErrUpstream if the stream ended before it was complete.
	Close(emit Emit) error
}

// Header is one HTTP header.
type Header struct{ Name, Value string }

// Options are the per-route settings a request encoder needs.
type Options struct {
	// UpstreamModel is the model name the upstream knows.
	UpstreamModel string
	// Stream asks the upstream for a streamed response.
	Stream bool
	// DefaultMaxTokens is used when the client sets no limit and the upstream needs one;
	// zero means the provider's own default.
	DefaultMaxTokens int
	// PromptCache places prompt-cache breakpoints automatically (Anthropic).
	PromptCache bool
	// DropUnsupported drops parameters the upstream cannot honour instead of failing.
	DropUnsupported bool
	// Dropped is called with each dropped parameter's name; it may be nil.
	Dropped func(param string)
	// Store asks a Responses upstream to store the response.
	Store bool
}

// Param is a request parameter an upstream cannot honour, and whether the client set it.
type Param struct {
	Name string
	Set  bool
}

// Refuse returns the Unsupported error, for provider, of the first parameter that is set
// and may not be dropped (Drop), looking at params in order, then at extra (each one set);
// the set parameters before it are dropped and recorded. It returns nil when every set one
// is dropped.
func (o *Options) Refuse(provider string, extra []Field, params ...Param) error {
	for _, p := range params {
		if p.Set && !o.Drop(p.Name) {
			return Unsupported(p.Name, provider)
		}
	}
	for i := range extra {
		if !o.Drop(extra[i].Name) {
			return Unsupported(extra[i].Name, provider)
		}
	}
	return nil
}

// Drop reports whether an unsupported param may be dropped, and records it if so.
func (o *Options) Drop(param string) bool {
	if o == nil || !o.DropUnsupported {
		return false
	}
	if o.Dropped != nil {
		o.Dropped(param)
	}
	return true
}
