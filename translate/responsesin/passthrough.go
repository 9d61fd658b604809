package responsesin

import (
	"bytes"
	"strconv"
	"strings"

	"github.com/agate-gateway/agate/internal/jsonx"
	"github.com/agate-gateway/agate/translate"
)

// What the passthrough to a responses backend reads of the request it forwards and of the
// upstream's answer, so that the proxy parses no JSON itself.

// AppendBody appends the request body as received with its top-level model replaced by
// model, for a responses backend. Parse rejected bodies that name model twice, so there is
// exactly one; Parse has also kept where its value is, so the body is not read again.
func (r *Request) AppendBody(dst []byte, model string) []byte {
	if m := r.model; m.End > 0 && m.End <= len(r.Body) {
		dst = append(dst, r.Body[:m.Start]...)
		dst = jsonx.AppendString(dst, model)
		return append(dst, r.Body[m.End:]...)
	}
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
	// Seq is its sequence_number when HasSeq (the member is a count: digits only, at
	// most 18, no sign, fraction or exponent).
	Seq    int
	HasSeq bool
	// SeqAt and SeqLen locate the sequence_number member's value in the data it was read
	// from (whatever its kind); SeqLen is 0 when the event has no such member.
	SeqAt, SeqLen int
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
	if seq.Kind == jsonx.Number && plainCount(seq.Raw) {
		ev.Seq, ev.HasSeq = int(seq.Int()), true
	}
	if seq.Exists() {
		ev.SeqAt, ev.SeqLen = seq.At, len(seq.Raw)
	}
	if delta.Kind == jsonx.String {
		ev.DeltaBytes = len(delta.Str) // the literal's contents, escapes as written
	}
	return ev, true
}

// plainCount reports whether raw, a JSON number, is a count a client reads as an integer.
func plainCount(raw string) bool {
	if len(raw) == 0 || len(raw) > 18 {
		return false
	}
	for i := 0; i < len(raw); i++ {
		if raw[i] < '0' || raw[i] > '9' {
			return false
		}
	}
	return true
}

// Sequencer keeps the sequence_number of the events a Responses client gets strictly
// increasing when the gateway passes a responses backend's stream through: an event that
// numbers itself after every event before it keeps its number (so an upstream's own
// numbering, gaps included, reaches the client as it is), and any other (a number not
// above the last one, a repeated or restarted count, a missing or non-numeric
// sequence_number) gets the last number plus one, as do the events the gateway adds
// (Next). The zero Sequencer numbers from 0.
type Sequencer struct {
	next int // the least number the next event may have
}

// Event returns the data of the stream event ev (as ReadStreamEvent read it from data) as
// the client gets it: data itself when it keeps its number and is one line, else
// (rewritten) a copy in scratch's memory with its sequence_number replaced, or inserted as
// its first member, and without line breaks (an upstream event sent on several data
// lines arrives joined by line breaks, which would cut it on the client's one data line;
// in JSON text they are only ever insignificant whitespace).
func (s *Sequencer) Event(scratch, data []byte, ev StreamEvent) (out []byte, rewritten bool) {
	multiline := bytes.IndexByte(data, '\n') >= 0 || bytes.IndexByte(data, '\r') >= 0
	if ev.HasSeq && ev.Seq >= s.next && ev.SeqLen > 0 {
		s.next = ev.Seq + 1
		if !multiline {
			return data, false
		}
		return jsonx.AppendCompact(scratch[:0], jsonx.View(data)), true
	}
	out = s.renumber(scratch, data, ev)
	if multiline {
		out = jsonx.AppendCompact(nil, jsonx.View(out))
	}
	return out, true
}

func (s *Sequencer) renumber(scratch, data []byte, ev StreamEvent) []byte {
	n := s.Next()
	if ev.SeqLen > 0 {
		scratch = append(scratch[:0], data[:ev.SeqAt]...)
		scratch = strconv.AppendInt(scratch, int64(n), 10)
		return append(scratch, data[ev.SeqAt+ev.SeqLen:]...)
	}
	// ReadStreamEvent accepted data, so it is an object opening at data[0].
	scratch = append(scratch[:0], `{"sequence_number":`...)
	scratch = strconv.AppendInt(scratch, int64(n), 10)
	rest := data[1:]
	if r := strings.TrimLeft(jsonx.View(rest), " \t\r\n"); len(r) > 0 && r[0] != '}' {
		scratch = append(scratch, ',')
	}
	return append(scratch, rest...)
}

// Next returns the number of an event the gateway adds to the stream (the error event
// that ends a failed one), counting it.
func (s *Sequencer) Next() int {
	n := s.next
	s.next++
	return n
}

// Upstream is what the gateway reads of a Response object a responses backend sent.
type Upstream struct {
	// Response is the Response object's JSON text; Output its output member's ("" when
	// absent), ID its id.
	Response, Output, ID string
	// Usage is its usage, in the gateway's terms.
	Usage translate.Usage
}

// AppendModelAt appends body, a whole answer, with the value at model (ReadAnswer's
// span of the Response's model) replaced by name, a JSON string literal: AppendWithModel's
// result without walking body again; body as it is when model.End is 0.
func AppendModelAt(dst, body []byte, model translate.Span, name []byte) []byte {
	if model.End == 0 {
		return append(dst, body...)
	}
	dst = append(dst, body[:model.Start]...)
	dst = append(dst, name...)
	return append(dst, body[model.End:]...)
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
	u, kind, _ := ReadAnswer(body)
	return u, kind
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
	return Upstream{Response: resp.Raw, Output: v[0].Raw, ID: v[2].Str, Usage: readUsage(&sc, v[1])}
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

// readUsage reads a Response object's usage (the first member of each name).
func readUsage(sc *jsonx.Scanner, u jsonx.Value) translate.Usage {
	var v [4]jsonx.Value
	sc.Members(u, []string{"input_tokens", "output_tokens", "input_tokens_details", "output_tokens_details"}, v[:])
	return translate.Usage{
		PromptTokens:     int(v[0].Int()),
		CompletionTokens: int(v[1].Int()),
		CachedTokens:     int(sc.Get(v[2], "cached_tokens").Int()),
		ReasoningTokens:  int(sc.Get(v[3], "reasoning_tokens").Int()),
	}
}
