package responsesin

import (
	"strings"

	"github.com/agate-gateway/agate/internal/jsonx"
	"github.com/agate-gateway/agate/translate"
)

// What the passthrough to a responses backend reads of the request it forwards and of the
// upstream's answer, so that the proxy parses no JSON itself.

// AppendBody appends the request body as received with its top-level model replaced by
// model, for a responses backend. Parse rejected bodies that name model twice, so there is
// exactly one.
func (r *Request) AppendBody(dst []byte, model string) []byte {
	sc := jsonx.NewScanner(r.Body)
	var m [1]jsonx.Value
	if _, ok := sc.RootMembers([]string{"model"}, m[:]); !ok || m[0].At <= 0 {
		return append(dst, r.Body...) // not reached: Parse requires a model
	}
	dst = append(dst, r.Body[:m[0].At]...)
	dst = jsonx.AppendString(dst, model)
	return append(dst, r.Body[m[0].At+len(m[0].Raw):]...)
}

// AppendWithModel appends data, the JSON text of a Response object (inner false) or of a
// stream event carrying one in its member response (inner true), with the Response's
// model set to model (a JSON string literal); data as it is when the Response has no
// string model or data is not JSON.
func AppendWithModel(dst, data []byte, inner bool, model []byte) []byte {
	sc := jsonx.NewScanner(jsonx.View(data))
	root, ok := sc.Root()
	if !ok {
		return append(dst, data...)
	}
	var m jsonx.Value
	if inner {
		m = sc.Path(root, "response", "model")
	} else {
		m = sc.Get(root, "model")
	}
	if m.At <= 0 || m.Kind != jsonx.String {
		return append(dst, data...)
	}
	dst = append(dst, data[:m.At]...)
	dst = append(dst, model...)
	return append(dst, data[m.At+len(m.Raw):]...)
}

// StreamEvent is what the passthrough reads of one event of a responses backend's stream.
type StreamEvent struct {
	// Type is the event's type member, "" when it has none.
	Type string
	// Seq is its sequence_number when HasSeq (the member is a number).
	Seq    int
	HasSeq bool
	// DeltaBytes is the length of its delta member's literal without the quotes when
	// it is a string (response.output_text.delta, .function_call_arguments.delta, the
	// reasoning and refusal deltas), else 0: the output the gateway estimates the tokens
	// of when the stream ends without its usage.
	DeltaBytes int
}

// ReadStreamEvent reads the data of a stream event; ok is false when it is not a JSON
// object. The Type aliases data.
func ReadStreamEvent(data []byte) (ev StreamEvent, ok bool) {
	if len(data) == 0 || data[0] != '{' {
		return StreamEvent{}, false
	}
	sc := jsonx.NewScanner(jsonx.View(data))
	// RootMembers' walk, the delta read as written: decoded, its escapes would cost an
	// arena on every delta, and only its length is wanted.
	var typ, seq, delta jsonx.Value
	for n := 0; sc.NextField(&n); {
		var ok bool
		switch sc.Key() {
		case "type":
			ok = sc.First(&typ)
		case "sequence_number":
			ok = sc.First(&seq)
		case "delta":
			if delta.Kind == jsonx.Missing {
				ok = sc.ValueRaw(&delta)
			} else {
				ok = sc.Skip()
			}
		default:
			ok = sc.Skip()
		}
		if !ok {
			return StreamEvent{}, false
		}
	}
	if sc.Failed() || !sc.AtEnd() {
		return StreamEvent{}, false
	}
	ev = StreamEvent{Type: typ.Str}
	if seq.Kind == jsonx.Number {
		ev.Seq, ev.HasSeq = int(seq.Int()), true
	}
	if delta.Kind == jsonx.String {
		ev.DeltaBytes = len(delta.Str) // the literal's contents, escapes as written
	}
	return ev, true
}

// Upstream is what the gateway reads of a Response object a responses backend sent.
type Upstream struct {
	// Response is the Response object's JSON text; Output its output member's ("" when
	// absent), ID its id.
	Response, Output, ID string
	// Usage is its usage, in the gateway's terms.
	Usage translate.Usage
}

// Body classifies a responses backend's whole (non-streamed) answer.
type Body int

const (
	BodyResponse Body = iota // a Response object
	BodyNotJSON              // not JSON text
	BodyError                // a JSON object with an error object and no Response
	BodyOther                // JSON, but no Response object
)

// ReadResponse reads a responses backend's whole answer: a Response object has object
// "response". The strings alias body.
func ReadResponse(body []byte) (Upstream, Body) {
	sc := jsonx.NewScanner(jsonx.View(body))
	var v [5]jsonx.Value
	root, ok := sc.RootMembers([]string{"object", "error", "output", "usage", "id"}, v[:])
	switch {
	case !ok:
		return Upstream{}, BodyNotJSON
	case root.Kind != jsonx.Object || v[0].Str != "response":
		if v[1].Kind == jsonx.Object {
			return Upstream{}, BodyError
		}
		return Upstream{}, BodyOther
	}
	return Upstream{Response: root.Raw, Output: v[2].Raw, ID: v[4].Str, Usage: usage(&sc, v[3])}, BodyResponse
}

// ReadEventResponse reads the Response object in the member response of a terminal stream
// event (response.completed, .incomplete, .failed); the zero Upstream when there is none.
// The strings alias data.
func ReadEventResponse(data []byte) Upstream {
	sc := jsonx.NewScanner(jsonx.View(data))
	root, ok := sc.Root()
	if !ok {
		return Upstream{}
	}
	resp := sc.Get(root, "response")
	var v [3]jsonx.Value
	sc.Members(resp, []string{"output", "usage", "id"}, v[:])
	return Upstream{Response: resp.Raw, Output: v[0].Raw, ID: v[2].Str, Usage: usage(&sc, v[1])}
}

// ResponseID returns the id of the Response object response (a copy), "" when it has none.
func ResponseID(response []byte) string {
	sc := jsonx.NewScanner(jsonx.View(response))
	root, ok := sc.Root()
	if !ok {
		return ""
	}
	return strings.Clone(sc.Get(root, "id").Str)
}

// usage reads a Response object's usage.
func usage(sc *jsonx.Scanner, u jsonx.Value) translate.Usage {
	var v [4]jsonx.Value
	sc.Members(u, []string{"input_tokens", "output_tokens", "input_tokens_details", "output_tokens_details"}, v[:])
	return translate.Usage{
		PromptTokens:     int(v[0].Int()),
		CompletionTokens: int(v[1].Int()),
		CachedTokens:     int(sc.Get(v[2], "cached_tokens").Int()),
		ReasoningTokens:  int(sc.Get(v[3], "reasoning_tokens").Int()),
	}
}
