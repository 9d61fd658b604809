package responsesin

import (
	"bytes"
	"strconv"
	"strings"

	"github.com/agate-gateway/agate/internal/jsonx"
	"github.com/agate-gateway/agate/translate"
)

// Response statuses.
const (
	StatusInProgress = "in_progress"
	StatusCompleted  = "completed"
	StatusIncomplete = "incomplete"
	StatusFailed     = "failed"
)

// Encoder turns the core events of one response into Responses output: for a streaming
// client the server-sent events (response.created, response.output_item.added, ...,
// response.completed) numbered by sequence_number, and for every client the Response
// object (AppendResponse). It keeps the output items as they grow, so a streamed
// response's terminal event and a stored response carry the whole output.
//
// Output items: reasoning deltas make a reasoning item with one summary part; text and
// refusal deltas make an assistant message item (one output_text or refusal content part
// per run of either); each tool call makes a function_call item (a call of a namespace
// tool's function under its flat name gets the function's name and namespace, see
// FlatName). A new item closes the
// reasoning or message item before it; function calls close at their EventToolCallEnd or
// at the end. A built-in tool item a Responses upstream ran (EventBuiltinItem of
// translate.DialectResponses: web_search_call...) is an output item as the upstream wrote
// it; the built-in items of other dialects are dropped.
//
// When the request includes reasoning.encrypted_content, each reasoning block an upstream
// decoder emits with its dialect (EventReasoningBlock: an Anthropic thinking block and its
// signature, a Gemini thought signature) is sealed (translate.SealBlock) into the
// encrypted_content of a reasoning item (the one its text went to, else one of its own),
// and the function calls whose state those blocks hold get their plain call ids; Parse
// turns the items back into the blocks. Without it the state stays in the call ids
// (translate.CarryID), as for chat clients.
//
// An Encoder is not safe for concurrent use.
type Encoder struct {
	id, model string
	created   int64
	// stream selects whether Encode writes events; the Response object is kept either way.
	stream bool
	echo   []byte
	// idBase is id without its "resp_" prefix; item ids are a prefix, idBase and a number.
	idBase  string
	seq     int
	started bool
	items   []item
	// open is the index of the reasoning or message item deltas go to, -1 when none.
	open   int
	usage  translate.Usage
	finish string
	// encrypted: the client asked for reasoning.encrypted_content.
	encrypted bool
	// sealed counts the reasoning blocks sealed since the last function call.
	sealed int
	// flat names the functions of the request's namespace tools.
	flat flatTools
	// Completed is the completion time of Finish, 0 before.
	completed int64
	status    string
	// The room of the first output item, its first content part and the item ids, in the
	// Encoder itself (#55: one allocation for the Encoder instead of four for a one-item
	// answer): items, the first item's parts and ids start in them and grow out of them as
	// append does. ids holds the item ids' text; an item's id is a view of it (bytes once
	// written are never changed, so a view outlives a growth).
	items1      [1]item
	parts1      [1]part
	parts1Taken bool
	ids         []byte
	ids1        [48]byte
}

type itemKind uint8

const (
	itemReasoning itemKind = iota + 1
	itemMessage
	itemFunctionCall
	itemBuiltin // text is the upstream's item, written as it is
)

// item is one output item. text holds a reasoning item's summary, a function call's
// arguments; a message's text is in its parts.
type item struct {
	kind         itemKind
	id           string
	done         bool
	summary      bool   // a reasoning item has its one summary part (reasoning deltas opened it)
	encrypted    string // a reasoning item's encrypted_content, "" for none
	text         []byte
	parts        []part
	callID, name string
	namespace    string // a function_call's namespace, "" for none
	index        int    // the tool call's Event.Index
}

type part struct {
	refusal bool
	text    []byte
}

// EncoderOptions configure an Encoder.
type EncoderOptions struct {
	// ID is the response id ("resp_..."); Model the model named to the client; Created
	// the creation time (Unix seconds).
	ID, Model string
	Created   int64
	// Stream makes Encode write server-sent events.
	Stream bool
}

// NewEncoder returns an encoder for the response to req.
func NewEncoder(req *Request, opts EncoderOptions) *Encoder {
	e := &Encoder{id: opts.ID, model: opts.Model, created: opts.Created, stream: opts.Stream, echo: oneLine(req.echoOf()),
		open: -1, status: StatusInProgress, encrypted: req.EncryptedReasoning, flat: req.flat}
	e.items, e.ids = e.items1[:0], e.ids1[:0]
	e.idBase = opts.ID
	if len(e.idBase) > 5 && e.idBase[:5] == "resp_" {
		e.idBase = e.idBase[5:]
	}
	return e
}

// SetModel replaces the model named to the client (the model that answered, when it is not
// the one the encoder was made for). It must be called before the first Encode: every
// event's Response object, and the whole one, name the same model.
func (e *Encoder) SetModel(model string) { e.model = model }

// oneLine returns raw, JSON text the encoder writes as it is (the request settings the
// Response echoes, a built-in tool's item), without its line breaks: each stream event
// is one SSE data line, and a line break in it (a client's pretty-printed tools or
// schema) would end the data there and cut the event's JSON. Line breaks are only ever
// insignificant whitespace in JSON text, so raw is compacted when it has any.
func oneLine(raw []byte) []byte {
	if bytes.IndexByte(raw, '\n') < 0 && bytes.IndexByte(raw, '\r') < 0 {
		return raw
	}
	return jsonx.AppendCompact(make([]byte, 0, len(raw)), jsonx.View(raw))
}

// Started reports whether response.created was written.
func (e *Encoder) Started() bool { return e.started }

// Usage returns the usage the events reported.
func (e *Encoder) Usage() translate.Usage { return e.usage }

// Start appends response.created and response.in_progress, once.
func (e *Encoder) Start(dst []byte) []byte {
	if e.started {
		return dst
	}
	e.started = true
	if !e.stream {
		return dst
	}
	for _, typ := range [...]string{"response.created", "response.in_progress"} {
		dst = e.beginEvent(dst, typ)
		dst = append(dst, `"response":`...)
		dst = e.AppendResponse(dst)
		dst = e.endEvent(dst)
	}
	return dst
}

// open_ starts an SSE event of type typ, through `{"type":…,"sequence_number":n,`.
func (e *Encoder) beginEvent(dst []byte, typ string) []byte {
	dst = append(dst, "event: "...)
	dst = append(dst, typ...)
	dst = append(dst, "\ndata: {\"type\":\""...)
	dst = append(dst, typ...)
	dst = append(dst, `","sequence_number":`...)
	dst = strconv.AppendInt(dst, int64(e.seq), 10)
	e.seq++
	return append(dst, ',')
}

func (e *Encoder) endEvent(dst []byte) []byte { return append(dst, "}\n\n"...) }

// Encode appends the events ev makes for a streaming client to dst (nothing for a
// non-streaming one) and records its content. EventError is not encoded: the caller ends
// the stream with AppendError.
func (e *Encoder) Encode(dst []byte, ev *translate.Event) []byte {
	if ev.Choice != 0 {
		return dst // the Responses API has one output; n > 1 is refused by Parse
	}
	dst = e.Start(dst)
	switch ev.Kind {
	case translate.EventReasoningDelta, translate.EventTextDelta, translate.EventRefusalDelta, translate.EventToolCallArgsDelta:
		if ev.Text == "" {
			return dst // some decoders emit empty deltas (an Anthropic signature); OpenAI sends none
		}
	}
	switch ev.Kind {
	case translate.EventReasoningDelta:
		it := e.current(&dst, itemReasoning)
		it.text = append(it.text, ev.Text...)
		if e.stream {
			dst = e.itemEvent(dst, "response.reasoning_summary_text.delta", it)
			dst = append(dst, `"summary_index":0,"delta":`...)
			dst = jsonx.AppendString(dst, ev.Text)
			dst = e.endEvent(dst)
		}
	case translate.EventTextDelta, translate.EventRefusalDelta:
		refusal := ev.Kind == translate.EventRefusalDelta
		it := e.current(&dst, itemMessage)
		if n := len(it.parts); n == 0 || it.parts[n-1].refusal != refusal {
			if n > 0 {
				dst = e.partDone(dst, it, n-1)
			}
			if it.parts == nil && !e.parts1Taken {
				it.parts, e.parts1Taken = e.parts1[:0], true
			}
			it.parts = append(it.parts, part{refusal: refusal})
			if e.stream {
				dst = e.itemEvent(dst, "response.content_part.added", it)
				dst = append(dst, `"content_index":`...)
				dst = strconv.AppendInt(dst, int64(len(it.parts)-1), 10)
				dst = append(dst, `,"part":`...)
				dst = appendPart(dst, &it.parts[len(it.parts)-1])
				dst = e.endEvent(dst)
			}
		}
		p := &it.parts[len(it.parts)-1]
		p.text = append(p.text, ev.Text...)
		if e.stream {
			typ := "response.output_text.delta"
			if refusal {
				typ = "response.refusal.delta"
			}
			dst = e.itemEvent(dst, typ, it)
			dst = append(dst, `"content_index":`...)
			dst = strconv.AppendInt(dst, int64(len(it.parts)-1), 10)
			dst = append(dst, `,"delta":`...)
			dst = jsonx.AppendString(dst, ev.Text)
			if !refusal {
				dst = append(dst, `,"logprobs":[]`...)
			}
			dst = e.endEvent(dst)
		}
	case translate.EventReasoningBlock:
		if e.encrypted && ev.Block != nil && ev.Block.Dialect != "" {
			dst = e.seal(dst, ev.Block)
		}
	case translate.EventToolCallStart:
		dst = e.closeOpen(dst)
		callID := ev.CallID
		if e.sealed > 0 {
			// The blocks sealed since the last call hold the state the id carries.
			callID = translate.CarriedID(callID)
			e.sealed = 0
		}
		ns, name := e.flat.clientName(ev.Name)
		if ns == "" {
			name = strings.Clone(name) // event strings alias the decoder's buffer
		}
		e.items = append(e.items, item{kind: itemFunctionCall, id: e.itemID("fc_"), callID: strings.Clone(callID),
			name: name, namespace: ns, index: ev.Index})
		dst = e.itemAdded(dst, len(e.items)-1)
	case translate.EventToolCallArgsDelta:
		i := e.call(ev.Index)
		if i < 0 {
			return dst
		}
		it := &e.items[i]
		it.text = append(it.text, ev.Text...)
		if e.stream {
			dst = e.itemEventAt(dst, "response.function_call_arguments.delta", it, i)
			dst = append(dst, `"delta":`...)
			dst = jsonx.AppendString(dst, ev.Text)
			dst = e.endEvent(dst)
		}
	case translate.EventToolCallEnd:
		if i := e.call(ev.Index); i >= 0 {
			dst = e.itemDone(dst, i)
		}
	case translate.EventBuiltinItem:
		if ev.Item == nil || ev.Item.Dialect != translate.DialectResponses {
			return dst
		}
		dst = e.closeOpen(dst)
		e.items = append(e.items, item{kind: itemBuiltin, text: oneLine([]byte(ev.Item.Raw)), done: true})
		i := len(e.items) - 1
		dst = e.itemAdded(dst, i)
		if e.stream {
			dst = e.beginEvent(dst, "response.output_item.done")
			dst = append(dst, `"output_index":`...)
			dst = strconv.AppendInt(dst, int64(i), 10)
			dst = append(dst, `,"item":`...)
			dst = e.appendItem(dst, &e.items[i])
			dst = e.endEvent(dst)
		}
	case translate.EventUsage:
		e.usage = ev.Usage
	case translate.EventFinish:
		e.finish = translate.OwnedFinishReason(ev.FinishReason) // ev's strings are views of the upstream's event
	}
	return dst
}

// seal puts reasoning block b into the encrypted_content of the open reasoning item (the
// one b's text went to) or of a new one, and closes that item.
func (e *Encoder) seal(dst []byte, b *translate.ThinkingBlock) []byte {
	sealed := translate.SealBlock(b)
	e.sealed++
	if e.open >= 0 && e.items[e.open].kind == itemReasoning && e.items[e.open].encrypted == "" {
		e.items[e.open].encrypted = sealed
		return e.closeOpen(dst)
	}
	dst = e.closeOpen(dst)
	e.items = append(e.items, item{kind: itemReasoning, id: e.itemID("rs_"), encrypted: sealed})
	dst = e.itemAdded(dst, len(e.items)-1)
	return e.itemDone(dst, len(e.items)-1)
}

// call returns the index of the open function call item of tool call index, or -1.
func (e *Encoder) call(index int) int {
	for i := len(e.items) - 1; i >= 0; i-- {
		if it := &e.items[i]; it.kind == itemFunctionCall && it.index == index && !it.done {
			return i
		}
	}
	return -1
}

// itemID returns the id of the next item: prefix, idBase, "_" and its index, written into
// e.ids.
func (e *Encoder) itemID(prefix string) string {
	at := len(e.ids)
	e.ids = append(e.ids, prefix...)
	e.ids = append(e.ids, e.idBase...)
	e.ids = append(e.ids, '_')
	e.ids = strconv.AppendInt(e.ids, int64(len(e.items)), 10)
	return jsonx.View(e.ids[at:len(e.ids):len(e.ids)])
}

// current returns the open item of kind, opening one (and closing another) if needed.
func (e *Encoder) current(dst *[]byte, kind itemKind) *item {
	if e.open >= 0 && e.items[e.open].kind == kind {
		return &e.items[e.open]
	}
	*dst = e.closeOpen(*dst)
	prefix := "msg_"
	if kind == itemReasoning {
		prefix = "rs_"
	}
	e.items = append(e.items, item{kind: kind, id: e.itemID(prefix)})
	e.open = len(e.items) - 1
	*dst = e.itemAdded(*dst, e.open)
	it := &e.items[e.open]
	it.summary = kind == itemReasoning
	if kind == itemReasoning && e.stream {
		*dst = e.itemEvent(*dst, "response.reasoning_summary_part.added", it)
		*dst = append(*dst, `"summary_index":0,"part":{"type":"summary_text","text":""}`...)
		*dst = e.endEvent(*dst)
	}
	return it
}

// closeOpen closes the open reasoning or message item.
func (e *Encoder) closeOpen(dst []byte) []byte {
	if e.open < 0 {
		return dst
	}
	i := e.open
	e.open = -1
	return e.itemDone(dst, i)
}

// itemEvent starts an event about item it, the latest item.
func (e *Encoder) itemEvent(dst []byte, typ string, it *item) []byte {
	return e.itemEventAt(dst, typ, it, e.indexOf(it))
}

func (e *Encoder) indexOf(it *item) int {
	for i := len(e.items) - 1; i >= 0; i-- {
		if &e.items[i] == it {
			return i
		}
	}
	return 0
}

func (e *Encoder) itemEventAt(dst []byte, typ string, it *item, i int) []byte {
	dst = e.beginEvent(dst, typ)
	dst = append(dst, `"item_id":`...)
	dst = jsonx.AppendString(dst, it.id)
	dst = append(dst, `,"output_index":`...)
	dst = strconv.AppendInt(dst, int64(i), 10)
	return append(dst, ',')
}

func (e *Encoder) itemAdded(dst []byte, i int) []byte {
	if !e.stream {
		return dst
	}
	return e.wholeItemEvent(dst, "response.output_item.added", i)
}

// wholeItemEvent appends the event typ (output_item.added or .done) carrying item i whole.
func (e *Encoder) wholeItemEvent(dst []byte, typ string, i int) []byte {
	dst = e.beginEvent(dst, typ)
	dst = append(dst, `"output_index":`...)
	dst = strconv.AppendInt(dst, int64(i), 10)
	dst = append(dst, `,"item":`...)
	dst = e.appendItem(dst, &e.items[i])
	return e.endEvent(dst)
}

// partDone closes content part j of message item it.
func (e *Encoder) partDone(dst []byte, it *item, j int) []byte {
	if !e.stream {
		return dst
	}
	p := &it.parts[j]
	if p.refusal {
		dst = e.itemEvent(dst, "response.refusal.done", it)
		dst = append(dst, `"content_index":`...)
		dst = strconv.AppendInt(dst, int64(j), 10)
		dst = append(dst, `,"refusal":`...)
		dst = jsonx.AppendString(dst, string(p.text))
	} else {
		dst = e.itemEvent(dst, "response.output_text.done", it)
		dst = append(dst, `"content_index":`...)
		dst = strconv.AppendInt(dst, int64(j), 10)
		dst = append(dst, `,"text":`...)
		dst = jsonx.AppendString(dst, string(p.text))
		dst = append(dst, `,"logprobs":[]`...)
	}
	dst = e.endEvent(dst)
	dst = e.itemEvent(dst, "response.content_part.done", it)
	dst = append(dst, `"content_index":`...)
	dst = strconv.AppendInt(dst, int64(j), 10)
	dst = append(dst, `,"part":`...)
	dst = appendPart(dst, p)
	return e.endEvent(dst)
}

// itemDone closes item i: its closing events, then response.output_item.done.
func (e *Encoder) itemDone(dst []byte, i int) []byte {
	it := &e.items[i]
	if it.done {
		return dst
	}
	if it.kind == itemFunctionCall && translate.NoArgumentText(it.text) {
		// A call the upstream streamed no arguments for (an Anthropic tool_use with input
		// {}): its arguments are translate.NoArguments, as OpenAI streams them, in the
		// deltas, the done event and the item alike.
		it.text = append(it.text, translate.NoArguments...)
		if e.stream {
			dst = e.itemEventAt(dst, "response.function_call_arguments.delta", it, i)
			dst = append(dst, `"delta":`...)
			dst = jsonx.AppendString(dst, translate.NoArguments)
			dst = e.endEvent(dst)
		}
	}
	if e.stream {
		switch it.kind {
		case itemReasoning:
			if !it.summary {
				break
			}
			dst = e.itemEventAt(dst, "response.reasoning_summary_text.done", it, i)
			dst = append(dst, `"summary_index":0,"text":`...)
			dst = jsonx.AppendString(dst, string(it.text))
			dst = e.endEvent(dst)
			dst = e.itemEventAt(dst, "response.reasoning_summary_part.done", it, i)
			dst = append(dst, `"summary_index":0,"part":{"type":"summary_text","text":`...)
			dst = jsonx.AppendString(dst, string(it.text))
			dst = append(dst, '}')
			dst = e.endEvent(dst)
		case itemMessage:
			if n := len(it.parts); n > 0 {
				dst = e.partDone(dst, it, n-1)
			}
		case itemFunctionCall:
			dst = e.itemEventAt(dst, "response.function_call_arguments.done", it, i)
			dst = append(dst, `"name":`...)
			dst = jsonx.AppendString(dst, it.name)
			dst = append(dst, `,"arguments":`...)
			dst = jsonx.AppendString(dst, string(it.text))
			dst = e.endEvent(dst)
		}
	}
	it.done = true
	if !e.stream {
		return dst
	}
	return e.wholeItemEvent(dst, "response.output_item.done", i)
}

// Finish closes every open item and appends the terminal event (response.completed, or
// response.incomplete when the output was cut by max_output_tokens or a content filter).
// completedAt is the completion time (Unix seconds). For a non-streaming client it only
// sets the final status for AppendResponse.
func (e *Encoder) Finish(dst []byte, completedAt int64) []byte {
	dst = e.Start(dst)
	dst = e.closeOpen(dst)
	for i := range e.items {
		dst = e.itemDone(dst, i)
	}
	e.completed = completedAt
	typ := "response.completed"
	e.status = StatusCompleted
	if e.finish == translate.FinishLength || e.finish == translate.FinishContentFilter {
		typ, e.status = "response.incomplete", StatusIncomplete
	}
	if !e.stream {
		return dst
	}
	dst = e.beginEvent(dst, typ)
	dst = append(dst, `"response":`...)
	dst = e.AppendResponse(dst)
	return e.endEvent(dst)
}

// AppendError appends the error event that ends a stream which failed after it started.
// code is OpenAI's error code (or type) and param the offending parameter; "" for none.
func (e *Encoder) AppendError(dst []byte, message, code, param string) []byte {
	e.status = StatusFailed
	dst = AppendErrorEvent(dst, e.seq, message, code, param)
	e.seq++
	return dst
}

// AppendErrorEvent appends an error event with sequence number seq: how a stream ends when
// it fails after it started.
func AppendErrorEvent(dst []byte, seq int, message, code, param string) []byte {
	dst = append(dst, "event: error\ndata: {\"type\":\"error\",\"sequence_number\":"...)
	dst = strconv.AppendInt(dst, int64(seq), 10)
	dst = append(dst, `,"code":`...)
	dst = appendStringOrNull(dst, code)
	dst = append(dst, `,"message":`...)
	dst = jsonx.AppendString(dst, message)
	dst = append(dst, `,"param":`...)
	dst = appendStringOrNull(dst, param)
	return append(dst, "}\n\n"...)
}

// Status returns the response's status: in_progress until Finish or AppendError.
func (e *Encoder) Status() string { return e.status }

// AppendResponse appends the Response object in its current state.
func (e *Encoder) AppendResponse(dst []byte) []byte {
	dst = append(dst, `{"id":`...)
	dst = jsonx.AppendString(dst, e.id)
	dst = append(dst, `,"object":"response","created_at":`...)
	dst = strconv.AppendInt(dst, e.created, 10)
	dst = append(dst, `,"status":`...)
	dst = jsonx.AppendString(dst, e.status)
	dst = append(dst, `,"background":false,"completed_at":`...)
	if e.status == StatusCompleted {
		dst = strconv.AppendInt(dst, e.completed, 10)
	} else {
		dst = append(dst, "null"...)
	}
	dst = append(dst, `,"error":null,"incomplete_details":`...)
	switch {
	case e.status != StatusIncomplete:
		dst = append(dst, "null"...)
	case e.finish == translate.FinishContentFilter:
		dst = append(dst, `{"reason":"content_filter"}`...)
	default:
		dst = append(dst, `{"reason":"max_output_tokens"}`...)
	}
	dst = append(dst, `,"model":`...)
	dst = jsonx.AppendString(dst, e.model)
	dst = append(dst, `,"output":`...)
	dst = e.AppendOutput(dst)
	dst = append(dst, ',')
	dst = append(dst, e.echo...)
	if e.status != StatusInProgress {
		dst = append(dst, `,"usage":`...)
		dst = appendUsage(dst, e.usage)
	}
	return append(dst, '}')
}

// AppendOutput appends the output items as a JSON array: the items done so far in full,
// for storing and for continuing with previous_response_id.
func (e *Encoder) AppendOutput(dst []byte) []byte {
	if e.status == StatusInProgress {
		return append(dst, "[]"...)
	}
	dst = append(dst, '[')
	for i := range e.items {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = e.appendItem(dst, &e.items[i])
	}
	return append(dst, ']')
}

func (e *Encoder) appendItem(dst []byte, it *item) []byte {
	if it.kind == itemBuiltin {
		return append(dst, it.text...)
	}
	status := `"in_progress"`
	if it.done {
		status = `"completed"`
	}
	dst = append(dst, `{"id":`...)
	dst = jsonx.AppendString(dst, it.id)
	switch it.kind {
	case itemReasoning:
		dst = append(dst, `,"type":"reasoning","summary":[`...)
		if it.done && it.summary {
			dst = append(dst, `{"type":"summary_text","text":`...)
			dst = jsonx.AppendString(dst, string(it.text))
			dst = append(dst, '}')
		}
		dst = append(dst, ']')
		if it.encrypted != "" {
			dst = append(dst, `,"encrypted_content":`...)
			dst = jsonx.AppendString(dst, it.encrypted)
		}
	case itemMessage:
		dst = append(dst, `,"type":"message","status":`...)
		dst = append(dst, status...)
		dst = append(dst, `,"content":[`...)
		if it.done {
			for j := range it.parts {
				if j > 0 {
					dst = append(dst, ',')
				}
				dst = appendPart(dst, &it.parts[j])
			}
		}
		dst = append(dst, `],"role":"assistant"`...)
	case itemFunctionCall:
		dst = append(dst, `,"type":"function_call","status":`...)
		dst = append(dst, status...)
		dst = append(dst, `,"arguments":`...)
		if it.done {
			dst = jsonx.AppendString(dst, string(it.text))
		} else {
			dst = append(dst, `""`...)
		}
		dst = append(dst, `,"call_id":`...)
		dst = jsonx.AppendString(dst, it.callID)
		dst = append(dst, `,"name":`...)
		dst = jsonx.AppendString(dst, it.name)
		if it.namespace != "" {
			dst = append(dst, `,"namespace":`...)
			dst = jsonx.AppendString(dst, it.namespace)
		}
	}
	return append(dst, '}')
}

func appendPart(dst []byte, p *part) []byte {
	if p.refusal {
		dst = append(dst, `{"type":"refusal","refusal":`...)
		dst = jsonx.AppendString(dst, jsonx.View(p.text))
		return append(dst, '}')
	}
	dst = append(dst, `{"type":"output_text","annotations":[],"logprobs":[],"text":`...)
	dst = jsonx.AppendString(dst, jsonx.View(p.text))
	return append(dst, '}')
}

func appendUsage(dst []byte, u translate.Usage) []byte {
	dst = append(dst, `{"input_tokens":`...)
	dst = jsonx.AppendInt(dst, u.PromptTokens)
	dst = append(dst, `,"input_tokens_details":{"cached_tokens":`...)
	dst = jsonx.AppendInt(dst, u.CachedTokens)
	dst = append(dst, `,"cache_write_tokens":`...)
	dst = jsonx.AppendInt(dst, u.CacheCreationTokens)
	dst = append(dst, `},"output_tokens":`...)
	dst = jsonx.AppendInt(dst, u.CompletionTokens)
	dst = append(dst, `,"output_tokens_details":{"reasoning_tokens":`...)
	dst = jsonx.AppendInt(dst, u.ReasoningTokens)
	dst = append(dst, `},"total_tokens":`...)
	dst = jsonx.AppendInt(dst, u.PromptTokens+u.CompletionTokens)
	return append(dst, '}')
}
