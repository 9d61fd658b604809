package messagesin

import (
	"strconv"
	"strings"

	"github.com/agate-gateway/agate/internal/jsonx"
	"github.com/agate-gateway/agate/translate"
)

// blockKind is the kind of a content block.
type blockKind uint8

const (
	blockNone blockKind = iota
	blockText
	blockThinking
	blockToolUse
	blockBuiltin // a built-in tool's block as an Anthropic upstream wrote it
)

// Anthropic stop reasons.
const (
	StopEndTurn   = "end_turn"
	StopMaxTokens = "max_tokens"
	StopToolUse   = "tool_use"
	StopRefusal   = "refusal"
)

// StopReason maps a core (OpenAI) finish reason to Anthropic's stop_reason. calledTools
// says whether the response holds tool_use blocks: some upstreams (Gemini) finish a turn
// of tool calls with a plain stop. A stop sequence cannot be told apart from a natural end
// in the core events, so it is end_turn.
func StopReason(finish string, calledTools bool) string {
	switch {
	case finish == translate.FinishLength:
		return StopMaxTokens
	case finish == translate.FinishContentFilter:
		return StopRefusal
	case calledTools || finish == translate.FinishToolCalls:
		return StopToolUse
	}
	return StopEndTurn
}

// Encoder writes core events as the Messages event stream: one message_start, then each
// content block as content_block_start, its deltas and content_block_stop, with dense
// indexes from 0, then (Finish) message_delta with the stop reason and the cumulative
// usage, and message_stop. A block stays open until content of another kind (or another
// tool call) arrives. A built-in tool block an Anthropic upstream ran (EventBuiltinItem of
// translate.DialectAnthropic: server_tool_use, web_search_tool_result...) is one
// content_block_start holding the whole block, input included, and its
// content_block_stop; the built-in items of other dialects are dropped. It is not safe for
// concurrent use.
type Encoder struct {
	Errors // its errors: translate.ClientStream's AppendErrorEvent and AppendErrorBody

	id, model   string
	started     bool
	block       blockKind
	index       int // index of the open block
	count       int // blocks opened so far
	tool        int // core Index of the open tool_use block
	finish      string
	calledTools bool
	usage       translate.Usage
}

// NewEncoder returns an encoder for one response with the client-facing message id and
// model.
func NewEncoder(id, model string) *Encoder { return &Encoder{id: id, model: model} }

// SetModel replaces the client-facing model name (the model that answered, when it is not
// the one the encoder was made for). It must be called before the first Encode: the model
// is message_start's.
func (e *Encoder) SetModel(model string) { e.model = model }

// Started reports whether message_start was written.
func (e *Encoder) Started() bool { return e.started }

// Usage returns the usage the events reported.
func (e *Encoder) Usage() translate.Usage { return e.usage }

// Encode appends the SSE events for ev to dst. EventError is not encoded (the caller ends
// the stream with AppendErrorEvent); choices other than 0 are ignored. Argument fragments
// of a tool call whose block was already closed are an upstream error: a Messages stream
// cannot reopen a block.
func (e *Encoder) Encode(dst []byte, ev *translate.Event) ([]byte, error) {
	if ev.Choice != 0 || ev.Kind == translate.EventError {
		return dst, nil
	}
	if !e.started {
		dst = e.start(dst)
	}
	switch ev.Kind {
	case translate.EventTextDelta, translate.EventRefusalDelta:
		if ev.Kind == translate.EventRefusalDelta {
			e.finish = translate.FinishContentFilter
		}
		if ev.Text == "" {
			return dst, nil
		}
		dst = e.open(dst, blockText)
		dst = e.delta(dst, `{"type":"text_delta","text":`, ev.Text)
	case translate.EventReasoningDelta:
		if ev.Text == "" {
			return dst, nil
		}
		dst = e.open(dst, blockThinking)
		dst = e.delta(dst, `{"type":"thinking_delta","thinking":`, ev.Text)
	case translate.EventToolCallStart:
		e.calledTools = true
		dst = e.close(dst)
		e.block, e.index, e.tool = blockToolUse, e.count, ev.Index
		e.count++
		dst = append(dst, "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":"...)
		dst = strconv.AppendInt(dst, int64(e.index), 10)
		dst = append(dst, `,"content_block":{"type":"tool_use","id":`...)
		dst = jsonx.AppendString(dst, ClientToolID(ev.CallID))
		dst = append(dst, `,"name":`...)
		dst = jsonx.AppendString(dst, ev.Name)
		dst = append(dst, ",\"input\":{}}}\n\n"...)
	case translate.EventToolCallArgsDelta:
		if e.block != blockToolUse || e.tool != ev.Index {
			return dst, &translate.UpstreamError{Status: 502, Type: "api_error",
				Message: "the upstream interleaved the arguments of two tool calls, which a Messages stream cannot carry"}
		}
		if ev.Text == "" {
			return dst, nil
		}
		dst = e.delta(dst, `{"type":"input_json_delta","partial_json":`, ev.Text)
	case translate.EventToolCallEnd:
		if e.block == blockToolUse && e.tool == ev.Index {
			dst = e.close(dst)
		}
	case translate.EventBuiltinItem:
		if ev.Item == nil || ev.Item.Dialect != translate.DialectAnthropic {
			return dst, nil
		}
		dst = e.close(dst)
		e.block, e.index = blockBuiltin, e.count
		e.count++
		dst = append(dst, "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":"...)
		dst = strconv.AppendInt(dst, int64(e.index), 10)
		dst = append(dst, `,"content_block":`...)
		dst = appendBuiltin(dst, ev.Item.Raw)
		dst = append(dst, "}\n\n"...)
		dst = e.close(dst)
	case translate.EventUsage:
		e.usage = ev.Usage
	case translate.EventFinish:
		if e.finish == "" || ev.FinishReason != translate.FinishStop {
			e.finish = translate.OwnedFinishReason(ev.FinishReason)
		}
	}
	return dst, nil
}

func (e *Encoder) start(dst []byte) []byte {
	e.started = true
	dst = append(dst, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":"...)
	dst = jsonx.AppendString(dst, e.id)
	dst = append(dst, `,"type":"message","role":"assistant","model":`...)
	dst = jsonx.AppendString(dst, e.model)
	dst = append(dst, `,"content":[],"stop_reason":null,"stop_sequence":null,"stop_details":null,"usage":{"input_tokens":0,"output_tokens":0}}}`+"\n\n"...)
	return dst
}

// open makes a block of kind the open one, closing another.
func (e *Encoder) open(dst []byte, kind blockKind) []byte {
	if e.block == kind {
		return dst
	}
	dst = e.close(dst)
	e.block, e.index = kind, e.count
	e.count++
	dst = append(dst, "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":"...)
	dst = strconv.AppendInt(dst, int64(e.index), 10)
	if kind == blockThinking {
		dst = append(dst, ",\"content_block\":{\"type\":\"thinking\",\"thinking\":\"\",\"signature\":\"\"}}\n\n"...)
	} else {
		dst = append(dst, ",\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n"...)
	}
	return dst
}

// delta appends a content_block_delta for the open block: head is the delta object up to
// its string value.
func (e *Encoder) delta(dst []byte, head, text string) []byte {
	dst = append(dst, "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":"...)
	dst = strconv.AppendInt(dst, int64(e.index), 10)
	dst = append(dst, `,"delta":`...)
	dst = append(dst, head...)
	dst = jsonx.AppendString(dst, text)
	return append(dst, "}}\n\n"...)
}

func (e *Encoder) close(dst []byte) []byte {
	if e.block == blockNone {
		return dst
	}
	e.block = blockNone
	dst = append(dst, "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":"...)
	dst = strconv.AppendInt(dst, int64(e.index), 10)
	return append(dst, "}\n\n"...)
}

// Finish appends the end of the stream: the open block's content_block_stop,
// message_delta and message_stop.
func (e *Encoder) Finish(dst []byte) []byte {
	if !e.started {
		dst = e.start(dst)
	}
	dst = e.close(dst)
	dst = append(dst, "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":"...)
	dst = jsonx.AppendString(dst, StopReason(e.finish, e.calledTools))
	dst = append(dst, `,"stop_sequence":null,"stop_details":null},"usage":`...)
	dst = AppendUsage(dst, e.usage)
	return append(dst, "}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"...)
}

// appendBuiltin appends a built-in tool block as the upstream wrote it, with the caller
// the Message schema requires and upstreams before it left out ({"type":"direct"}, its
// default) when it has none.
func appendBuiltin(dst []byte, raw string) []byte {
	sc := jsonx.NewScanner(raw)
	root, ok := sc.Root()
	if !ok || root.Kind != jsonx.Object || sc.Get(root, "caller").Exists() {
		return append(dst, raw...)
	}
	open := strings.IndexByte(raw, '{') + 1
	dst = append(dst, raw[:open]...)
	dst = append(dst, `"caller":{"type":"direct"},`...)
	return append(dst, raw[open:]...)
}

// AppendUsage appends usage as an Anthropic usage object: input_tokens excludes the
// cached and cache-write tokens, which have fields of their own.
func AppendUsage(dst []byte, u translate.Usage) []byte {
	in := u.PromptTokens - u.CachedTokens - u.CacheCreationTokens
	if in < 0 {
		in = 0
	}
	dst = append(dst, `{"input_tokens":`...)
	dst = strconv.AppendInt(dst, int64(in), 10)
	dst = append(dst, `,"cache_creation_input_tokens":`...)
	dst = strconv.AppendInt(dst, int64(u.CacheCreationTokens), 10)
	dst = append(dst, `,"cache_read_input_tokens":`...)
	dst = strconv.AppendInt(dst, int64(u.CachedTokens), 10)
	dst = append(dst, `,"output_tokens":`...)
	dst = strconv.AppendInt(dst, int64(u.CompletionTokens), 10)
	return append(dst, '}')
}

// AppendPing appends a ping event, sent while the response is slow to come.
func AppendPing(dst []byte) []byte {
	return append(dst, "event: ping\ndata: {\"type\":\"ping\"}\n\n"...)
}

// Assembler collects core events into one Message object, for a client that did not
// stream. It is not safe for concurrent use.
type Assembler struct {
	blocks []block
	// blocks1 is the room of the first block (#55: a one-block answer allocates none for
	// its blocks); an Assembler is not copied once it has blocks.
	blocks1     [1]block
	finish      string
	calledTools bool
	usage       translate.Usage
	// Err is the mid-stream upstream failure reported by an EventError, if any.
	Err *translate.UpstreamError
}

type block struct {
	kind     blockKind
	text     []byte // text, thinking or the tool's argument JSON
	id, name string
	tool     int
}

// Add records one event.
func (a *Assembler) Add(ev *translate.Event) error {
	if ev.Choice != 0 {
		return nil
	}
	switch ev.Kind {
	case translate.EventError:
		a.Err = ev.Err
	case translate.EventTextDelta, translate.EventRefusalDelta:
		if ev.Kind == translate.EventRefusalDelta {
			a.finish = translate.FinishContentFilter
		}
		a.appendText(blockText, ev.Text)
	case translate.EventReasoningDelta:
		a.appendText(blockThinking, ev.Text)
	case translate.EventToolCallStart:
		a.calledTools = true
		// Event strings alias the decoder's buffer: kept, they are copied.
		a.blocks = append(a.blocks, block{kind: blockToolUse, id: strings.Clone(ClientToolID(ev.CallID)), name: strings.Clone(ev.Name), tool: ev.Index})
	case translate.EventToolCallArgsDelta:
		for i := len(a.blocks) - 1; i >= 0; i-- {
			if b := &a.blocks[i]; b.kind == blockToolUse && b.tool == ev.Index {
				b.text = append(b.text, ev.Text...)
				break
			}
		}
	case translate.EventBuiltinItem:
		if ev.Item != nil && ev.Item.Dialect == translate.DialectAnthropic {
			a.blocks = append(a.blocks, block{kind: blockBuiltin, text: []byte(ev.Item.Raw)})
		}
	case translate.EventUsage:
		a.usage = ev.Usage
	case translate.EventFinish:
		if a.finish == "" || ev.FinishReason != translate.FinishStop {
			a.finish = translate.OwnedFinishReason(ev.FinishReason)
		}
	}
	return nil
}

func (a *Assembler) appendText(kind blockKind, s string) {
	if s == "" {
		return
	}
	if n := len(a.blocks); n == 0 || a.blocks[n-1].kind != kind {
		if a.blocks == nil {
			a.blocks = a.blocks1[:0]
		}
		a.blocks = append(a.blocks, block{kind: kind})
	}
	b := &a.blocks[len(a.blocks)-1]
	b.text = append(b.text, s...)
}

// Usage returns the usage the events reported.
func (a *Assembler) Usage() translate.Usage { return a.usage }

// AppendMessage appends the Message object with the client-facing id and model.
func (a *Assembler) AppendMessage(dst []byte, id, model string) []byte {
	dst = append(dst, `{"id":`...)
	dst = jsonx.AppendString(dst, id)
	dst = append(dst, `,"type":"message","role":"assistant","model":`...)
	dst = jsonx.AppendString(dst, model)
	dst = append(dst, `,"content":[`...)
	for i := range a.blocks {
		if i > 0 {
			dst = append(dst, ',')
		}
		b := &a.blocks[i]
		switch b.kind {
		case blockBuiltin:
			dst = appendBuiltin(dst, jsonx.View(b.text))
			continue
		case blockText:
			dst = append(dst, `{"type":"text","text":`...)
			dst = jsonx.AppendString(dst, jsonx.View(b.text))
			dst = append(dst, `,"citations":null`...)
		case blockThinking:
			dst = append(dst, `{"type":"thinking","thinking":`...)
			dst = jsonx.AppendString(dst, jsonx.View(b.text))
			dst = append(dst, `,"signature":""`...)
		case blockToolUse:
			dst = append(dst, `{"type":"tool_use","caller":{"type":"direct"},"id":`...)
			dst = jsonx.AppendString(dst, b.id)
			dst = append(dst, `,"name":`...)
			dst = jsonx.AppendString(dst, b.name)
			dst = append(dst, `,"input":`...)
			sc := jsonx.NewScanner(jsonx.View(b.text))
			if r, ok := sc.Root(); ok && r.Kind == jsonx.Object {
				dst = append(dst, b.text...)
			} else {
				dst = append(dst, translate.NoArguments...)
			}
		}
		dst = append(dst, '}')
	}
	dst = append(dst, `],"stop_reason":`...)
	dst = jsonx.AppendString(dst, StopReason(a.finish, a.calledTools))
	dst = append(dst, `,"stop_sequence":null,"stop_details":null,"container":null,"usage":`...)
	dst = AppendUsage(dst, a.usage)
	// The Message schema requires these usage members, which Agate cannot know.
	dst = dst[:len(dst)-1]
	return append(dst, `,"cache_creation":null,"inference_geo":null,"server_tool_use":null,"service_tier":null}}`...)
}

// ErrorType returns Anthropic's error type for an HTTP status.
func ErrorType(status int) string {
	switch status {
	case 400, 405, 413, 422:
		return "invalid_request_error"
	case 401:
		return "authentication_error"
	case 402:
		return "billing_error"
	case 403:
		return "permission_error"
	case 404:
		return "not_found_error"
	case 429:
		return "rate_limit_error"
	case 503, 529:
		return "overloaded_error"
	case 504:
		return "timeout_error"
	}
	if status >= 500 {
		return "api_error"
	}
	return "invalid_request_error"
}

// AppendError appends an Anthropic error body: {"type":"error","error":{"type",
// "message"},"request_id"}.
func AppendError(dst []byte, status int, message, requestID string) []byte {
	dst = append(dst, `{"type":"error","error":{"type":`...)
	dst = jsonx.AppendString(dst, ErrorType(status))
	dst = append(dst, `,"message":`...)
	dst = jsonx.AppendString(dst, message)
	dst = append(dst, `},"request_id":`...)
	dst = jsonx.AppendString(dst, requestID)
	return append(dst, '}')
}

// AppendErrorEvent appends an error event, which ends a stream that failed after it began.
func AppendErrorEvent(dst []byte, status int, message, requestID string) []byte {
	dst = append(dst, "event: error\ndata: "...)
	dst = AppendError(dst, status, message, requestID)
	return append(dst, "\n\n"...)
}
