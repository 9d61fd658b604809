package responses

import (
	"fmt"
	"strings"

	"github.com/agate-gateway/agate/internal/jsonx"
	"github.com/agate-gateway/agate/translate"
)

// responsesPhase is where a Responses stream is.
type responsesPhase uint8

const (
	responsesWaiting responsesPhase = iota // before response.created
	responsesRunning                       // between response.created and the end
	responsesDone                          // after response.completed / incomplete
	responsesFailed                        // after an error event or response.failed
)

// responsesStream decodes one streamed Responses answer. It is not safe for concurrent
// use.
type responsesStream struct {
	phase responsesPhase
	carry responsesCarry
	// sc reads the current event; its arena holds the event's decoded strings.
	sc jsonx.Scanner
	// calls are the function call items seen, in order; a call's position is its
	// Event.Index.
	calls []responsesCall
	// sawText / sawSummary record whether the current message / reasoning item streamed
	// deltas, so that its done event only fills in what was never streamed.
	sawText    bool
	sawSummary bool
	// ev is the event handed to emit, reused so that decoding allocates nothing per event.
	ev translate.Event
}

func (d *responsesStream) emit(emit translate.Emit, ev translate.Event) error {
	d.ev = ev
	return emit(&d.ev)
}

type responsesCall struct {
	itemID  string
	hasArgs bool
}

// responsesMembers are the members of an event the decoder reads: type, delta,
// response, error, item, item_id, arguments and summary_index.
type responsesMembers [len(responsesMemberNames)]jsonx.Value

// responsesMemberNames are the members Event reads, at their index in responsesMembers.
var responsesMemberNames = [...]string{"type", "delta", "response", "error", "item", "item_id", "arguments", "summary_index"}

// The members of a text or argument delta in the layout the API sends, in this order and
// without whitespace: type, sequence_number, item_id, output_index, then for text
// content_index, delta and logprobs, for arguments delta; obfuscation is left out when
// the request turned it off.
const (
	deltaTypeHead    = `{"type":"`
	textDeltaType    = "response.output_text.delta"
	argsDeltaType    = "response.function_call_arguments.delta"
	deltaSequence    = `","sequence_number":`
	deltaItemID      = `,"item_id":`
	deltaOutput      = `,"output_index":`
	deltaContent     = `,"content_index":`
	deltaDelta       = `,"delta":`
	deltaLogprobs    = `,"logprobs":[]`
	deltaObfuscation = `,"obfuscation":`
)

// fastDelta reads the event in sc, just reset, when it is a response.output_text.delta or
// response.function_call_arguments.delta in exactly the API's layout (see deltaTypeHead):
// it fills the type, delta and item_id of m as RootMembers would (the others stay
// Missing) and reports true. For anything else it reports false, and the event goes to
// RootMembers, which starts over: what it accepts is valid JSON that RootMembers reads the
// same (FuzzFastDeltaMatchesRootMembers). Nearly every event of an answer is one of
// these; the scanner still checks and decodes the strings, and the rest is matched as
// bytes instead of member by member.
func fastDelta(sc *jsonx.Scanner, m *responsesMembers) bool {
	s := sc.Input()
	if !strings.HasPrefix(s, deltaTypeHead) {
		return false
	}
	rest := s[len(deltaTypeHead):]
	text := strings.HasPrefix(rest, textDeltaType+deltaSequence)
	if !text && !strings.HasPrefix(rest, argsDeltaType+deltaSequence) {
		return false
	}
	typ := argsDeltaType
	if text {
		typ = textDeltaType
	}
	i, ok := jsonx.IndexEnd(s, len(deltaTypeHead)+len(typ)+len(deltaSequence))
	if !ok || !strings.HasPrefix(s[i:], deltaItemID) {
		return false
	}
	id, ok := stringAt(sc, i+len(deltaItemID))
	if !ok {
		return false
	}
	if i = sc.Pos(); !strings.HasPrefix(s[i:], deltaOutput) {
		return false
	}
	if i, ok = jsonx.IndexEnd(s, i+len(deltaOutput)); !ok {
		return false
	}
	if text {
		if !strings.HasPrefix(s[i:], deltaContent) {
			return false
		}
		if i, ok = jsonx.IndexEnd(s, i+len(deltaContent)); !ok {
			return false
		}
	}
	if !strings.HasPrefix(s[i:], deltaDelta) {
		return false
	}
	delta, ok := stringAt(sc, i+len(deltaDelta))
	if !ok {
		return false
	}
	i = sc.Pos()
	if text {
		if !strings.HasPrefix(s[i:], deltaLogprobs) {
			return false
		}
		i += len(deltaLogprobs)
	}
	if strings.HasPrefix(s[i:], deltaObfuscation) {
		if _, ok := stringAt(sc, i+len(deltaObfuscation)); !ok {
			return false
		}
		i = sc.Pos()
	}
	if i >= len(s) || s[i] != '}' {
		return false
	}
	sc.Seek(i + 1)
	if !sc.AtEnd() {
		return false
	}
	at := len(deltaTypeHead) - 1 // the type's opening quote
	m[0] = jsonx.Value{Kind: jsonx.String, Raw: s[at : at+len(typ)+2], At: at, Str: typ}
	m[1], m[5] = delta, id
	return true
}

// stringAt reads the string literal at s[i:] with sc, which it leaves past it, as a
// Value like RootMembers'; false when there is none or it is not valid JSON.
func stringAt(sc *jsonx.Scanner, i int) (jsonx.Value, bool) {
	s := sc.Input()
	if i >= len(s) || s[i] != '"' {
		return jsonx.Value{}, false
	}
	sc.Seek(i)
	str, ok := sc.Str()
	if !ok {
		return jsonx.Value{}, false
	}
	return jsonx.Value{Kind: jsonx.String, Raw: s[i:sc.Pos()], At: i, Str: str}, true
}

// Event decodes one SSE event.
func (d *responsesStream) Event(typ, data []byte, emit translate.Emit) error {
	if d.phase == responsesFailed || d.phase == responsesDone {
		// The failure or the end was reported once; a response.failed after an error
		// event, or anything after the end, adds nothing.
		return nil
	}
	sc := &d.sc
	sc.Reset(jsonx.View(data))
	// One pass checks the event and reads the members any event type needs: a text or
	// argument delta in the API's own layout by fastDelta, anything else by RootMembers.
	var m responsesMembers
	var root jsonx.Value
	if !fastDelta(sc, &m) {
		var ok bool
		if root, ok = sc.RootMembers(responsesMemberNames[:], m[:]); !ok { // the state is untouched: the caller may skip it
			return translate.MalformedEvent(d.malformed(typ, "not valid JSON"))
		}
	}
	if len(typ) == 0 {
		typ = jsonx.Bytes(m[0].Str)
	}
	switch string(typ) {
	case "response.output_text.delta":
		if d.phase != responsesRunning {
			return d.malformed(typ, "before response.created")
		}
		d.sawText = true
		return d.emit(emit, translate.Event{Kind: translate.EventTextDelta, Text: m[1].Str})
	case "response.created", "response.in_progress", "response.queued":
		if d.phase == responsesWaiting {
			r := m[2]
			if r.Kind != jsonx.Object {
				return d.malformed(typ, "no response object")
			}
			d.phase = responsesRunning
			return d.emit(emit, translate.Event{Kind: translate.EventStart, ID: sc.Get(r, "id").Str, Model: sc.Get(r, "model").Str})
		}
		return nil
	case "error":
		eo, flat := m[3], false
		if eo.Kind != jsonx.Object { // the spec's flat shape: code, message, param at the top
			eo, flat = root, true
		}
		return d.fail(emit, responsesFailure(sc, eo, flat, "the upstream stream failed"))
	case "response.failed":
		if u := sc.Get(m[2], "usage"); u.Kind == jsonx.Object {
			// Tokens a failed response consumed are billed: count them.
			if err := d.emit(emit, translate.Event{Kind: translate.EventUsage, Usage: responsesUsage(sc, u)}); err != nil {
				return err
			}
		}
		return d.fail(emit, responsesFailure(sc, sc.Get(m[2], "error"), false, "the upstream response failed"))
	}
	if d.phase != responsesRunning {
		return d.malformed(typ, "before response.created")
	}
	switch string(typ) {
	case "response.refusal.delta":
		d.sawText = true
		return d.emit(emit, translate.Event{Kind: translate.EventRefusalDelta, Text: m[1].Str})
	case "response.reasoning_summary_text.delta", "response.reasoning_text.delta":
		d.sawSummary = true
		return d.emit(emit, translate.Event{Kind: translate.EventReasoningDelta, Text: m[1].Str})
	case "response.reasoning_summary_part.added":
		if m[7].Int() > 0 {
			return d.emit(emit, translate.Event{Kind: translate.EventReasoningDelta, Text: "\n\n"})
		}
	case "response.function_call_arguments.delta":
		n := d.find(m[5].Str)
		if n < 0 {
			return d.malformed(typ, "for an unknown item_id")
		}
		delta := m[1].Str
		if delta == "" {
			return nil
		}
		d.calls[n].hasArgs = true
		return d.emit(emit, translate.Event{Kind: translate.EventToolCallArgsDelta, Index: n, Text: delta})
	case "response.function_call_arguments.done":
		return d.callArgs(m[5].Str, m[6].Str, emit)
	case "response.output_item.added":
		return d.itemAdded(typ, m[4], emit)
	case "response.output_item.done":
		return d.itemDone(typ, m[4], emit)
	case "response.completed", "response.incomplete":
		r := m[2]
		if r.Kind != jsonx.Object {
			return d.malformed(typ, "no response object")
		}
		d.phase = responsesDone
		if u := sc.Get(r, "usage"); u.Kind == jsonx.Object {
			if err := d.emit(emit, translate.Event{Kind: translate.EventUsage, Usage: responsesUsage(sc, u)}); err != nil {
				return err
			}
		}
		return d.emit(emit, translate.Event{Kind: translate.EventFinish, FinishReason: responsesFinish(sc, r, len(d.calls) > 0)})
	}
	// Everything else (content parts, *.done events whose content was streamed, built-in
	// tool progress such as response.web_search_call.*, annotations) adds nothing: a
	// built-in tool's item is emitted whole at its output_item.done.
	return nil
}

func (d *responsesStream) malformed(typ []byte, what string) *translate.UpstreamError {
	return &translate.UpstreamError{Status: 502, Type: "api_error",
		Message: fmt.Sprintf("decoding responses event %q: %s", typ, what)}
}

func (d *responsesStream) fail(emit translate.Emit, ue *translate.UpstreamError) error {
	d.phase = responsesFailed
	if err := d.emit(emit, translate.Event{Kind: translate.EventError, Err: ue}); err != nil && err != error(ue) {
		return err
	}
	return ue
}

func (d *responsesStream) find(itemID string) int {
	for i := range d.calls {
		if d.calls[i].itemID == itemID {
			return i
		}
	}
	return -1
}

func (d *responsesStream) itemAdded(typ []byte, item jsonx.Value, emit translate.Emit) error {
	sc := &d.sc
	switch sc.Get(item, "type").Str {
	case "message":
		d.sawText = false
	case "reasoning":
		d.sawSummary = false
	case "function_call":
		itemID := sc.Get(item, "id").Str
		if itemID == "" || d.find(itemID) >= 0 {
			return d.malformed(typ, "function_call item without a unique id")
		}
		n := len(d.calls)
		d.calls = append(d.calls, responsesCall{itemID: strings.Clone(itemID)})
		id := d.carry.callID(sc.Get(item, "call_id").Str, itemID)
		if err := d.emit(emit, translate.Event{Kind: translate.EventToolCallStart, Index: n, CallID: id, Name: sc.Get(item, "name").Str}); err != nil {
			return err
		}
		if args := sc.Get(item, "arguments").Str; args != "" {
			d.calls[n].hasArgs = true
			return d.emit(emit, translate.Event{Kind: translate.EventToolCallArgsDelta, Index: n, Text: args})
		}
	}
	return nil
}

// callArgs emits a call's whole arguments if none were streamed.
func (d *responsesStream) callArgs(itemID, args string, emit translate.Emit) error {
	n := d.find(itemID)
	if n < 0 || d.calls[n].hasArgs || args == "" {
		return nil
	}
	d.calls[n].hasArgs = true
	return d.emit(emit, translate.Event{Kind: translate.EventToolCallArgsDelta, Index: n, Text: args})
}

func (d *responsesStream) itemDone(typ []byte, item jsonx.Value, emit translate.Emit) error {
	sc := &d.sc
	var err error
	switch sc.Get(item, "type").Str {
	case "reasoning":
		if !d.sawSummary {
			err = eachSummary(sc, item, func(text string) error {
				return d.emit(emit, translate.Event{Kind: translate.EventReasoningDelta, Text: text})
			})
		}
		d.carry.addReasoning(sc, item)
		if err == nil {
			err = d.emit(emit, translate.Event{Kind: translate.EventReasoningBlock, Block: reasoningBlock(sc, item)})
		}
	case "message":
		if !d.sawText {
			sc.Each(sc.Get(item, "content"), func(_ string, p jsonx.Value) bool {
				switch sc.Get(p, "type").Str {
				case "output_text":
					err = d.emit(emit, translate.Event{Kind: translate.EventTextDelta, Text: sc.Get(p, "text").Str})
				case "refusal":
					err = d.emit(emit, translate.Event{Kind: translate.EventRefusalDelta, Text: sc.Get(p, "refusal").Str})
				}
				return err == nil
			})
		}
	case "function_call":
		itemID := sc.Get(item, "id").Str
		n := d.find(itemID)
		if n < 0 {
			return d.malformed(typ, "for a function_call never added")
		}
		if err := d.callArgs(itemID, sc.Get(item, "arguments").Str, emit); err != nil {
			return err
		}
		return d.emit(emit, translate.Event{Kind: translate.EventToolCallEnd, Index: n})
	default:
		if typ := sc.Get(item, "type").Str; builtinItem(typ) {
			return d.emit(emit, translate.Event{Kind: translate.EventBuiltinItem,
				Item: &translate.Item{Dialect: translate.DialectResponses, Type: typ, Raw: item.Raw}})
		}
	}
	return err
}

// builtinItem reports whether an output item type is a call of a built-in tool the
// upstream ran itself (web search, file search, code interpreter, image generation, a
// remote MCP server): one the client sees but never answers.
func builtinItem(typ string) bool {
	switch typ {
	case "web_search_call", "file_search_call", "code_interpreter_call", "image_generation_call", "mcp_call", "mcp_list_tools":
		return true
	}
	return false
}

// Close ends the stream: a stream that stopped before its terminal event is an error.
func (d *responsesStream) Close(emit translate.Emit) error {
	switch d.phase {
	case responsesWaiting:
		d.phase = responsesFailed
		return responsesTruncated("before response.created")
	case responsesRunning:
		d.phase = responsesFailed
		return responsesTruncated("mid-response")
	}
	return nil
}
