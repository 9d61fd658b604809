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
// object. The Type aliases data. An event in the compact flat layout providers write their
// deltas in is read by ReadFlatEvent; any other by the Scanner's member loop
// (readStreamEventMembers), which reads the same of every event ReadFlatEvent takes
// (FuzzFlatEventMatchesMembers).
func ReadStreamEvent(data []byte) (ev StreamEvent, ok bool) {
	if fe, taken := ReadFlatEvent(data); taken {
		return fe.StreamEvent, true
	}
	return readStreamEventMembers(data)
}

// FlatEvent is what ReadFlatEvent reads of an event: the passthrough's StreamEvent and
// what the continuation of a passthrough reads of a delta.
type FlatEvent struct {
	StreamEvent
	// OutputIndex and ContentIndex are the first output_index and content_index members'
	// values when they are integers, else -1.
	OutputIndex, ContentIndex int64
	// Delta is the first delta member's text when it is a string (a flat event's strings
	// hold no escape: as written is as decoded), else "". It aliases the data.
	Delta string
}

// flatKeys are the members of a text delta in the order OpenAI writes them, each with
// its quotes and colon: ReadFlatEvent compares a member with the next of them before it
// reads its name.
var flatKeys = [...]string{`"type":`, `"sequence_number":`, `"item_id":`, `"output_index":`,
	`"content_index":`, `"delta":`, `"logprobs":`, `"obfuscation":`}

// flatKey is the index in flatKeys of the member named name (-1: none of them).
func flatKey(name string) int {
	for k, q := range flatKeys {
		if len(q) == len(name)+3 && q[1:len(q)-2] == name {
			return k
		}
	}
	return -1
}

// ReadFlatEvent reads data when it is one object in the compact flat layout of a
// provider's delta events (response.output_text.delta: type, sequence_number, item_id,
// output_index, content_index, delta, logprobs, obfuscation, in any order): no
// whitespace, each member's name a literal jsonx.PlainEnd takes, each value a string
// jsonx.PlainEnd takes, an integer jsonx.PlainUint takes, null, true, false or an empty
// array, and type, when present, a string. taken is false for anything else (a string
// with an escape or a byte beyond ASCII, a nested value, whitespace, a bad byte), which
// may still be an event, for the Scanner to read. What it takes is valid JSON, of which it
// reads what a member loop reads: the first member of each name, literals as written.
func ReadFlatEvent(data []byte) (fe FlatEvent, taken bool) {
	s := jsonx.View(data)
	if len(s) < 2 || s[0] != '{' {
		return FlatEvent{}, false
	}
	fe.OutputIndex, fe.ContentIndex = -1, -1
	if s[1] == '}' {
		return fe, len(s) == 2
	}
	var seen uint8 // which of type, sequence_number, delta, output_index and content_index came
	for i, m := 1, 0; ; m++ {
		var key string
		k := -1 // the member's index in flatKeys when it is the one expected there
		v := 0  // the value's first byte
		if m < len(flatKeys) && strings.HasPrefix(s[i:], flatKeys[m]) {
			k, v = m, i+len(flatKeys[m])
		} else {
			if s[i] != '"' {
				return FlatEvent{}, false
			}
			ke := jsonx.PlainEnd(s, i+1)
			if ke < 0 || ke+1 >= len(s) || s[ke+1] != ':' {
				return FlatEvent{}, false
			}
			key, v = s[i+1:ke], ke+2
		}
		if v >= len(s) {
			return FlatEvent{}, false
		}
		str, num, n := false, false, int64(0)
		switch c := s[v]; {
		case c == '"':
			e := jsonx.PlainEnd(s, v+1)
			if e < 0 {
				return FlatEvent{}, false
			}
			i, str = e+1, true
		case c >= '0' && c <= '9':
			if n, i = jsonx.PlainUint(s, v); i < 0 {
				return FlatEvent{}, false
			}
			num = true
		case c == 'n' && strings.HasPrefix(s[v:], "null"), c == 't' && strings.HasPrefix(s[v:], "true"):
			i = v + 4
		case c == 'f' && strings.HasPrefix(s[v:], "false"):
			i = v + 5
		case c == '[' && strings.HasPrefix(s[v:], "[]"):
			i = v + 2
		default:
			return FlatEvent{}, false
		}
		if k < 0 {
			k = flatKey(key)
		}
		var bit uint8
		switch k {
		case 0: // type
			if bit = 1; seen&bit == 0 {
				if !str {
					return FlatEvent{}, false
				}
				fe.Type = s[v+1 : i-1]
			}
		case 1: // sequence_number
			if bit = 2; seen&bit == 0 {
				fe.SeqAt, fe.SeqLen = v, i-v
				if num { // PlainUint's: at most 18 digits, a count plainCount takes
					fe.Seq, fe.HasSeq = int(n), true
				}
			}
		case 5: // delta
			if bit = 4; seen&bit == 0 && str {
				fe.DeltaBytes, fe.Delta = i-v-2, s[v+1:i-1]
			}
		case 3: // output_index
			if bit = 8; seen&bit == 0 && num {
				fe.OutputIndex = n
			}
		case 4: // content_index
			if bit = 16; seen&bit == 0 && num {
				fe.ContentIndex = n
			}
		}
		seen |= bit
		if i >= len(s) {
			return FlatEvent{}, false
		}
		switch s[i] {
		case '}':
			if i+1 != len(s) {
				return FlatEvent{}, false
			}
			return fe, true
		case ',':
			if i+1 >= len(s) {
				return FlatEvent{}, false
			}
			i++
		default:
			return FlatEvent{}, false
		}
	}
}

// readStreamEventMembers is ReadStreamEvent's general reader: the Scanner's member loop.
func readStreamEventMembers(data []byte) (ev StreamEvent, ok bool) {
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
