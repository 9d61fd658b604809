package translate

import (
	"github.com/agate-gateway/agate/internal/jsonx"
	"strconv"

	"github.com/tidwall/gjson"
)

// anthropicPhase is where an Anthropic stream is.
type anthropicPhase uint8

const (
	anthropicAwaitStart anthropicPhase = iota // before message_start
	anthropicInMessage                        // between message_start and message_stop
	anthropicStopped                          // message_stop seen
	anthropicFailed                           // an error event or a malformed event
	anthropicClosed                           // Close has run
)

// anthropicBlock is the kind of the open content block.
type anthropicBlock uint8

const (
	anthropicNoBlock anthropicBlock = iota
	anthropicText
	anthropicThinkingBlock
	anthropicToolUse
	anthropicServerBlock // server_tool_use, web_search_tool_result and unknown blocks: not shown
)

// anthropicStream decodes one streamed Messages API response (message_start,
// content_block_start/delta/stop, message_delta, message_stop, ping, error). It is not
// safe for concurrent use.
type anthropicStream struct {
	phase      anthropicPhase
	block      anthropicBlock
	blockIndex int
	usage      anthropicUsage
	finish     string
	thinking   anthropicThinking
	err        *UpstreamError
	ev         Event // reused for every emit
}

// Event decodes one SSE event. The event's JSON "type" decides; the SSE event name is the
// same by the API's contract and is not needed.
func (d *anthropicStream) Event(_, data []byte, emit Emit) error {
	switch d.phase {
	case anthropicFailed:
		return d.err
	case anthropicStopped, anthropicClosed:
		return nil // nothing follows message_stop; a stray ping is harmless
	}
	s := jsonx.View(data)
	if !gjson.Valid(s) {
		return d.fail(anthropicMalformed("event", data))
	}
	typ := gjson.Get(s, "type")
	if typ.Type != gjson.String {
		return d.fail(d.malformed("an event without a type", data))
	}
	if d.phase == anthropicAwaitStart && typ.Str != "message_start" && typ.Str != "ping" && typ.Str != "error" {
		return d.fail(d.malformed(typ.Str+" before message_start", data))
	}
	switch typ.Str {
	case "ping":
		return nil
	case "error":
		err := anthropicErrorEvent(gjson.Parse(s))
		d.phase, d.err = anthropicFailed, err
		d.ev = Event{Kind: EventError, Err: err}
		emit(&d.ev)
		return err
	case "message_start":
		if d.phase != anthropicAwaitStart {
			return d.fail(d.malformed("a second message_start", data))
		}
		d.phase = anthropicInMessage
		msg := gjson.Get(s, "message")
		d.usage.merge(msg.Get("usage"))
		d.ev = Event{Kind: EventStart, ID: msg.Get("id").Str, Model: msg.Get("model").Str}
		return emit(&d.ev)
	case "content_block_start":
		return d.blockStart(s, data, emit)
	case "content_block_delta":
		return d.blockDelta(s, data, emit)
	case "content_block_stop":
		return d.blockStop(s, data, emit)
	case "message_delta":
		if r := gjson.Get(s, "delta.stop_reason"); r.Type == gjson.String {
			d.finish = anthropicFinish(r.Str)
		}
		d.usage.merge(gjson.Get(s, "usage"))
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

func (d *anthropicStream) blockStart(s string, data []byte, emit Emit) error {
	if d.block != anthropicNoBlock {
		return d.fail(d.malformed("content_block_start while block "+strconv.Itoa(d.blockIndex)+" is open", data))
	}
	index := gjson.Get(s, "index")
	if index.Type != gjson.Number {
		return d.fail(d.malformed("content_block_start without an index", data))
	}
	d.blockIndex = int(index.Int())
	cb := gjson.Get(s, "content_block")
	switch cb.Get("type").Str {
	case "text":
		d.block = anthropicText
		d.ev = Event{Kind: EventTextDelta, Text: cb.Get("text").Str}
		if d.ev.Text != "" {
			return emit(&d.ev)
		}
	case "thinking":
		d.block = anthropicThinkingBlock
		d.thinking.text = append(d.thinking.text[:0], cb.Get("thinking").Str...)
		d.thinking.sig = append(d.thinking.sig[:0], cb.Get("signature").Str...)
		d.ev = Event{Kind: EventReasoningDelta, Text: cb.Get("thinking").Str}
		if d.ev.Text != "" {
			return emit(&d.ev)
		}
	case "redacted_thinking":
		d.block = anthropicServerBlock // nothing to show; kept for the next turn
		d.thinking.addRedacted(cb.Get("data").Str)
	case "tool_use":
		d.block = anthropicToolUse
		id := cb.Get("id").Str
		if id == "" {
			return d.fail(d.malformed("tool_use without an id", data))
		}
		d.ev = Event{Kind: EventToolCallStart, Index: d.blockIndex, CallID: d.thinking.callID(id), Name: cb.Get("name").Str}
		return emit(&d.ev)
	default:
		d.block = anthropicServerBlock
	}
	return nil
}

func (d *anthropicStream) blockDelta(s string, data []byte, emit Emit) error {
	if d.block == anthropicNoBlock {
		return d.fail(d.malformed("content_block_delta outside a content block", data))
	}
	delta := gjson.Get(s, "delta")
	switch delta.Get("type").Str {
	case "text_delta":
		if d.block == anthropicText {
			d.ev = Event{Kind: EventTextDelta, Text: delta.Get("text").Str}
			return emit(&d.ev)
		}
	case "thinking_delta":
		if d.block == anthropicThinkingBlock {
			t := delta.Get("thinking").Str
			d.thinking.text = append(d.thinking.text, t...)
			d.ev = Event{Kind: EventReasoningDelta, Text: t}
			return emit(&d.ev)
		}
	case "signature_delta":
		if d.block == anthropicThinkingBlock {
			d.thinking.sig = append(d.thinking.sig, delta.Get("signature").Str...)
		}
	case "input_json_delta":
		if d.block == anthropicToolUse {
			d.ev = Event{Kind: EventToolCallArgsDelta, Index: d.blockIndex, Text: delta.Get("partial_json").Str}
			if d.ev.Text == "" {
				return nil // the first fragment is always ""
			}
			return emit(&d.ev)
		}
		// a server_tool_use block's input: the upstream runs that tool itself
	}
	return nil // citations_delta and newer delta types have no OpenAI counterpart
}

func (d *anthropicStream) blockStop(_ string, data []byte, emit Emit) error {
	kind := d.block
	if kind == anthropicNoBlock {
		return d.fail(d.malformed("content_block_stop outside a content block", data))
	}
	d.block = anthropicNoBlock
	switch kind {
	case anthropicThinkingBlock:
		d.thinking.addThinking(jsonx.View(d.thinking.text), jsonx.View(d.thinking.sig))
	case anthropicToolUse:
		d.ev = Event{Kind: EventToolCallEnd, Index: d.blockIndex}
		return emit(&d.ev)
	}
	return nil
}

// Close emits usage and the finish reason once message_stop has arrived; a stream that
// ended before it is an error.
func (d *anthropicStream) Close(emit Emit) error {
	switch d.phase {
	case anthropicClosed:
		return nil
	case anthropicFailed:
		d.phase = anthropicClosed
		return d.err
	case anthropicStopped:
		d.phase = anthropicClosed
		d.ev = Event{Kind: EventUsage, Usage: d.usage.openai()}
		if err := emit(&d.ev); err != nil {
			return err
		}
		d.ev = Event{Kind: EventFinish, FinishReason: d.finish}
		if d.ev.FinishReason == "" {
			d.ev.FinishReason = FinishStop
		}
		return emit(&d.ev)
	}
	where := "before message_start"
	if d.phase == anthropicInMessage {
		where = "before message_stop"
	}
	d.phase = anthropicClosed
	return &UpstreamError{Status: 502, Type: "api_error", Message: "the anthropic stream ended " + where}
}

func (d *anthropicStream) fail(err *UpstreamError) error {
	d.phase, d.err = anthropicFailed, err
	return err
}

func (d *anthropicStream) malformed(what string, data []byte) *UpstreamError {
	return &UpstreamError{Status: 502, Type: "api_error", Message: "decoding anthropic event: " + what + anthropicSnippet(data)}
}
