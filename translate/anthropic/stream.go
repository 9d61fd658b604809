package anthropic

import (
	"strconv"
	"strings"

	"github.com/agate-gateway/agate/internal/jsonx"
	"github.com/agate-gateway/agate/translate"
)

// anthropicPhase is where an Anthropic stream is.
type anthropicPhase uint8

const (
	anthropicAwaitStart anthropicPhase = iota // before message_start
	anthropicInMessage                        // between message_start and message_stop
	anthropicStopped                          // message_stop seen
	anthropicFailed                           // an error event, or an event out of place (an unreadable one leaves the phase)
	anthropicClosed                           // Close has run
)

// anthropicBlock is the kind of the open content block.
type anthropicBlock uint8

const (
	anthropicNoBlock anthropicBlock = iota
	anthropicText
	anthropicThinkingBlock
	anthropicToolUse
	anthropicServerBlock  // redacted_thinking and unknown blocks: not shown
	anthropicBuiltinBlock // server_tool_use, web_search_tool_result...: an EventBuiltinItem at its stop
)

// anthropicStream decodes one streamed Messages API response (message_start,
// content_block_start/delta/stop, message_delta, message_stop, ping, error). It is not
// safe for concurrent use.
type anthropicStream struct {
	phase      anthropicPhase
	block      anthropicBlock
	blockIndex int
	usage      anthropicUsage
	// finalUsage is set once a message_delta brought its usage: the output count then
	// covers the whole message (UsageSoFar).
	finalUsage bool
	finish     string
	thinking   anthropicThinking
	err        *translate.UpstreamError
	ev         translate.Event // reused for every emit
	// sc reads the current event; its arena holds the event's decoded strings.
	sc jsonx.Scanner
	// builtin is the open built-in tool block: its content_block as it started, where its
	// input value is in it, and the input_json_delta fragments since.
	builtin builtinBlock
}

// builtinBlock collects a built-in tool block (server_tool_use, *_tool_result) across its
// events.
type builtinBlock struct {
	typ               string
	raw, input        []byte
	inputAt, inputEnd int // raw[inputAt:inputEnd] is the input value; inputAt < 0 if none
}

// block returns the block with its streamed input in place of the one it started with.
func (b *builtinBlock) block() []byte {
	if len(b.input) == 0 || b.inputAt < 0 {
		return b.raw
	}
	out := make([]byte, 0, len(b.raw)+len(b.input))
	out = append(out, b.raw[:b.inputAt]...)
	out = append(out, b.input...)
	out = append(out, b.raw[b.inputEnd:]...)
	if !jsonx.Valid(jsonx.View(out)) {
		return b.raw // a malformed input never reaches a client; the block as it started does
	}
	return out
}

// isBuiltinBlock reports whether a content block type is a built-in (server) tool's call
// or result, which the upstream runs itself: server_tool_use, web_search_tool_result,
// web_fetch_tool_result, code_execution_tool_result and the other *_tool_result blocks.
func isBuiltinBlock(typ string) bool {
	return typ == "server_tool_use" || typ != "tool_result" && strings.HasSuffix(typ, "_tool_result")
}

// anthropicMembers are the members of an event the decoder reads: type, index, delta,
// content_block, message and usage.
type anthropicMembers [6]jsonx.Value

// Event decodes one SSE event. The event's JSON "type" decides; the SSE event name is the
// same by the API's contract and is not needed.
func (d *anthropicStream) Event(_, data []byte, emit translate.Emit) error {
	switch d.phase {
	case anthropicFailed:
		return d.err
	case anthropicStopped, anthropicClosed:
		return nil // nothing follows message_stop; a stray ping is harmless
	}
	sc := &d.sc
	sc.Reset(jsonx.View(data))
	if d.phase == anthropicInMessage && d.block != anthropicNoBlock {
		// Nearly every event of a stream is a text or argument delta in the API's own
		// layout: read as that, in one pass, when it is exactly that.
		if member, value, ok := fastDelta(sc); ok {
			return d.delta(deltaTypes[member], value, emit)
		}
		sc.Reset(jsonx.View(data))
	}
	// One pass checks the event and reads the members any event type needs.
	var m anthropicMembers
	root, ok := sc.RootMembers([]string{"type", "index", "delta", "content_block", "message", "usage"}, m[:])
	if !ok { // unreadable: the state is untouched, and the caller may skip it
		return translate.MalformedEvent(anthropicMalformed("event", data))
	}
	typ := m[0]
	if typ.Kind != jsonx.String {
		return d.fail(d.malformed("an event without a type", data))
	}
	if d.phase == anthropicAwaitStart && typ.Str != "message_start" && typ.Str != "ping" && typ.Str != "error" {
		return d.fail(d.malformed(typ.Str+" before message_start", data))
	}
	switch typ.Str {
	case "ping":
		return nil
	case "error":
		err := anthropicErrorEvent(sc, root)
		d.phase, d.err = anthropicFailed, err
		d.ev = translate.Event{Kind: translate.EventError, Err: err}
		emit(&d.ev)
		return err
	case "message_start":
		if d.phase != anthropicAwaitStart {
			return d.fail(d.malformed("a second message_start", data))
		}
		d.phase = anthropicInMessage
		msg := m[4]
		d.usage.merge(sc, sc.Get(msg, "usage"))
		d.ev = translate.Event{Kind: translate.EventStart, ID: sc.Get(msg, "id").Str, Model: sc.Get(msg, "model").Str}
		return emit(&d.ev)
	case "content_block_start":
		return d.blockStart(m[1], m[3], data, emit)
	case "content_block_delta":
		return d.blockDelta(m[2], data, emit)
	case "content_block_stop":
		return d.blockStop(data, emit)
	case "message_delta":
		if r := sc.Get(m[2], "stop_reason"); r.Kind == jsonx.String {
			d.finish = anthropicFinish(r.Str)
		}
		d.usage.merge(sc, m[5])
		d.finalUsage = d.finalUsage || m[5].Kind == jsonx.Object
		return nil
	case "message_stop":
		if d.block != anthropicNoBlock {
			return d.fail(d.malformed("message_stop inside content block "+strconv.Itoa(d.blockIndex), data))
		}
		d.phase = anthropicStopped
		return nil
	}
	return nil // event types added to the API later carry nothing a client needs yet
}

func (d *anthropicStream) blockStart(index, cb jsonx.Value, data []byte, emit translate.Emit) error {
	sc := &d.sc
	if d.block != anthropicNoBlock {
		return d.fail(d.malformed("content_block_start while block "+strconv.Itoa(d.blockIndex)+" is open", data))
	}
	if index.Kind != jsonx.Number {
		return d.fail(d.malformed("content_block_start without an index", data))
	}
	d.blockIndex = int(index.Int())
	switch sc.Get(cb, "type").Str {
	case "text":
		d.block = anthropicText
		d.ev = translate.Event{Kind: translate.EventTextDelta, Text: sc.Get(cb, "text").Str}
		if d.ev.Text != "" {
			return emit(&d.ev)
		}
	case "thinking":
		d.block = anthropicThinkingBlock
		d.thinking.text = append(d.thinking.text[:0], sc.Get(cb, "thinking").Str...)
		d.thinking.sig = append(d.thinking.sig[:0], sc.Get(cb, "signature").Str...)
		d.ev = translate.Event{Kind: translate.EventReasoningDelta, Text: sc.Get(cb, "thinking").Str}
		if d.ev.Text != "" {
			return emit(&d.ev)
		}
	case "redacted_thinking":
		d.block = anthropicServerBlock // nothing to show; kept for the next turn
		data := sc.Get(cb, "data").Str
		d.thinking.addRedacted(data)
		d.ev = translate.Event{Kind: translate.EventReasoningBlock, Block: &translate.ThinkingBlock{Dialect: anthropicName, Type: "redacted_thinking", Data: data}}
		return emit(&d.ev)
	case "tool_use":
		d.block = anthropicToolUse
		id := sc.Get(cb, "id").Str
		if id == "" {
			return d.fail(d.malformed("tool_use without an id", data))
		}
		d.ev = translate.Event{Kind: translate.EventToolCallStart, Index: d.blockIndex, CallID: d.thinking.callID(id), Name: sc.Get(cb, "name").Str}
		return emit(&d.ev)
	default:
		d.block = anthropicServerBlock
		if typ := sc.Get(cb, "type").Str; isBuiltinBlock(typ) {
			d.block = anthropicBuiltinBlock
			b := &d.builtin
			b.typ = strings.Clone(typ) // it outlives this event
			b.raw = append(b.raw[:0], cb.Raw...)
			b.input = b.input[:0]
			b.inputAt = -1
			if in := sc.Get(cb, "input"); in.Exists() {
				b.inputAt = in.At - cb.At
				b.inputEnd = b.inputAt + len(in.Raw)
			}
		}
	}
	return nil
}

// deltaMembers are the members of a content_block_delta's delta that blockDelta reads
// (in one pass), at the indexes named below.
var deltaMembers = [...]string{"type", "text", "thinking", "signature", "partial_json"}

const (
	deltaType = iota
	deltaText
	deltaThinking
	deltaSignature
	deltaPartialJSON
)

func (d *anthropicStream) blockDelta(delta jsonx.Value, data []byte, emit translate.Emit) error {
	sc := &d.sc
	if d.block == anthropicNoBlock {
		return d.fail(d.malformed("content_block_delta outside a content block", data))
	}
	var f [len(deltaMembers)]jsonx.Value
	sc.Members(delta, deltaMembers[:], f[:])
	typ := f[deltaType].Str
	var value string
	for m, t := range deltaTypes {
		if t == typ && t != "" {
			value = f[m].Str
		}
	}
	return d.delta(typ, value, emit)
}

// deltaTypes names, for each of deltaMembers that carries a delta's content, the delta
// type it belongs to: text_delta's text, thinking_delta's thinking, signature_delta's
// signature, input_json_delta's partial_json.
var deltaTypes = [len(deltaMembers)]string{
	deltaText:        "text_delta",
	deltaThinking:    "thinking_delta",
	deltaSignature:   "signature_delta",
	deltaPartialJSON: "input_json_delta",
}

// Text and argument deltas in the layout the API sends: the prefix, the index digits, one
// of the delta heads, the string, and the two closing braces (the API pads some events
// with spaces before the last). The members come in this order and no others.
const (
	deltaPrefix   = `{"type":"content_block_delta","index":`
	textDelta     = `,"delta":{"type":"text_delta","text":`
	argumentDelta = `,"delta":{"type":"input_json_delta","partial_json":`
)

// fastDelta reads the event in sc, just reset, when it is a content_block_delta whose
// delta is a text_delta or input_json_delta in exactly the API's layout (deltaPrefix): it
// reports true with the one member of deltaMembers the delta holds (deltaText or
// deltaPartialJSON; its type is deltaTypes[member]) and that member's string, as
// blockDelta's Members would read them, and no array of members to clear and fill for
// each delta. For anything else it reports false, leaving the event to the general reader:
// what it accepts is valid JSON that the general reader reads the same
// (FuzzFastDeltaMatchesMembers).
func fastDelta(sc *jsonx.Scanner) (member int, value string, ok bool) {
	s := sc.Input()
	if !strings.HasPrefix(s, deltaPrefix) {
		return 0, "", false
	}
	j, ok := jsonx.IndexEnd(s, len(deltaPrefix))
	if !ok {
		return 0, "", false
	}
	switch {
	case strings.HasPrefix(s[j:], textDelta):
		member = deltaText
		j += len(textDelta)
	case strings.HasPrefix(s[j:], argumentDelta):
		member = deltaPartialJSON
		j += len(argumentDelta)
	default:
		return 0, "", false
	}
	sc.Seek(j)
	if sc.Peek() != '"' {
		return 0, "", false
	}
	value, ok = sc.Str()
	if !ok || sc.Peek() != '}' {
		return 0, "", false
	}
	sc.Seek(sc.Pos() + 1)
	if sc.Peek() != '}' { // the API pads some events with spaces before this brace
		return 0, "", false
	}
	sc.Seek(sc.Pos() + 1)
	if !sc.AtEnd() {
		return 0, "", false
	}
	return member, value, true
}

// delta applies a content_block_delta's delta of type typ, whose content member
// (deltaTypes) is value, to the open block.
func (d *anthropicStream) delta(typ, value string, emit translate.Emit) error {
	switch typ {
	case "text_delta":
		if d.block == anthropicText {
			d.ev = translate.Event{Kind: translate.EventTextDelta, Text: value}
			return emit(&d.ev)
		}
	case "thinking_delta":
		if d.block == anthropicThinkingBlock {
			d.thinking.text = append(d.thinking.text, value...)
			d.ev = translate.Event{Kind: translate.EventReasoningDelta, Text: value}
			return emit(&d.ev)
		}
	case "signature_delta":
		if d.block == anthropicThinkingBlock {
			d.thinking.sig = append(d.thinking.sig, value...)
		}
	case "input_json_delta":
		if d.block == anthropicToolUse {
			d.ev = translate.Event{Kind: translate.EventToolCallArgsDelta, Index: d.blockIndex, Text: value}
			if d.ev.Text == "" {
				return nil // the first fragment is always ""
			}
			return emit(&d.ev)
		}
		if d.block == anthropicBuiltinBlock { // a server_tool_use block's input
			d.builtin.input = append(d.builtin.input, value...)
		}
	}
	return nil // citations_delta and newer delta types have no OpenAI counterpart
}

func (d *anthropicStream) blockStop(data []byte, emit translate.Emit) error {
	kind := d.block
	if kind == anthropicNoBlock {
		return d.fail(d.malformed("content_block_stop outside a content block", data))
	}
	d.block = anthropicNoBlock
	switch kind {
	case anthropicThinkingBlock:
		text, sig := jsonx.View(d.thinking.text), jsonx.View(d.thinking.sig)
		d.thinking.addThinking(text, sig)
		d.ev = translate.Event{Kind: translate.EventReasoningBlock, Block: &translate.ThinkingBlock{Dialect: anthropicName, Type: "thinking", Thinking: text, Signature: sig}}
		return emit(&d.ev)
	case anthropicToolUse:
		d.ev = translate.Event{Kind: translate.EventToolCallEnd, Index: d.blockIndex}
		return emit(&d.ev)
	case anthropicBuiltinBlock:
		d.ev = translate.Event{Kind: translate.EventBuiltinItem,
			Item: &translate.Item{Dialect: translate.DialectAnthropic, Type: d.builtin.typ, Raw: jsonx.View(d.builtin.block())}}
		return emit(&d.ev)
	}
	return nil
}

// Close emits usage and the finish reason once message_stop has arrived; a stream that
// ended before it is an error.
func (d *anthropicStream) Close(emit translate.Emit) error {
	switch d.phase {
	case anthropicClosed:
		return nil
	case anthropicFailed:
		d.phase = anthropicClosed
		return d.err
	case anthropicStopped:
		d.phase = anthropicClosed
		d.ev = translate.Event{Kind: translate.EventUsage, Usage: d.usage.openai()}
		if err := emit(&d.ev); err != nil {
			return err
		}
		d.ev = translate.Event{Kind: translate.EventFinish, FinishReason: d.finish}
		if d.ev.FinishReason == "" {
			d.ev.FinishReason = translate.FinishStop
		}
		return emit(&d.ev)
	}
	where := "before message_start"
	if d.phase == anthropicInMessage {
		where = "before message_stop"
	}
	d.phase = anthropicClosed
	return &translate.UpstreamError{Status: 502, Type: "api_error", Message: "the anthropic stream ended " + where}
}

func (d *anthropicStream) fail(err *translate.UpstreamError) error {
	d.phase, d.err = anthropicFailed, err
	return err
}

// malformed is the error of an event the decoder cannot follow. It and anthropicMalformed
// are never inlined: inlined, each of Event's calls added its own buffers to Event's frame,
// which is on the stack of every translated stream (PERFORMANCE.md, "The stream event and
// peak RSS, fifteenth session").
//
//go:noinline
func (d *anthropicStream) malformed(what string, data []byte) *translate.UpstreamError {
	return &translate.UpstreamError{Status: 502, Type: "api_error", Message: "decoding anthropic event: " + what + anthropicSnippet(data)}
}

var _ translate.UsageReporter = (*anthropicStream)(nil)

// UsageSoFar returns the usage of message_start, updated by any message_delta since:
// current once a message_delta brought usage (message_start's output count is a
// placeholder sent before any content).
func (d *anthropicStream) UsageSoFar() (translate.Usage, bool) {
	return d.usage.openai(), d.finalUsage
}
