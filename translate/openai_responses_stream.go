package translate

import (
	"fmt"
	"github.com/agate-gateway/agate/internal/jsonx"

	"github.com/tidwall/gjson"
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
	// calls are the function call items seen, in order; a call's position is its
	// Event.Index.
	calls []responsesCall
	// sawText / sawSummary record whether the current message / reasoning item streamed
	// deltas, so that its done event only fills in what was never streamed.
	sawText    bool
	sawSummary bool
	// ev is the event handed to emit, reused so that decoding allocates nothing per event.
	ev Event
}

func (d *responsesStream) emit(emit Emit, ev Event) error {
	d.ev = ev
	return emit(&d.ev)
}

type responsesCall struct {
	itemID  string
	hasArgs bool
}

// Event decodes one SSE event.
func (d *responsesStream) Event(typ, data []byte, emit Emit) error {
	if d.phase == responsesFailed || d.phase == responsesDone {
		// The failure or the end was reported once; a response.failed after an error
		// event, or anything after the end, adds nothing.
		return nil
	}
	s := jsonx.View(data)
	if !gjson.Valid(s) {
		return d.malformed(typ, "not valid JSON")
	}
	if len(typ) == 0 {
		typ = []byte(gjson.Get(s, "type").Str)
	}
	switch string(typ) {
	case "response.output_text.delta":
		if d.phase != responsesRunning {
			return d.malformed(typ, "before response.created")
		}
		d.sawText = true
		return d.emit(emit, Event{Kind: EventTextDelta, Text: gjson.Get(s, "delta").Str})
	case "response.created", "response.in_progress", "response.queued":
		if d.phase == responsesWaiting {
			r := gjson.Get(s, "response")
			if !r.IsObject() {
				return d.malformed(typ, "no response object")
			}
			d.phase = responsesRunning
			return d.emit(emit, Event{Kind: EventStart, ID: r.Get("id").Str, Model: r.Get("model").Str})
		}
		return nil
	case "error":
		eo, flat := gjson.Get(s, "error"), false
		if !eo.IsObject() { // the spec's flat shape: code, message, param at the top
			eo, flat = gjson.Parse(s), true
		}
		return d.fail(emit, responsesFailure(eo, flat, "the upstream stream failed"))
	case "response.failed":
		if u := gjson.Get(s, "response.usage"); u.IsObject() {
			// Tokens a failed response consumed are billed: count them.
			if err := d.emit(emit, Event{Kind: EventUsage, Usage: responsesUsage(u)}); err != nil {
				return err
			}
		}
		return d.fail(emit, responsesFailure(gjson.Get(s, "response.error"), false, "the upstream response failed"))
	}
	if d.phase != responsesRunning {
		return d.malformed(typ, "before response.created")
	}
	switch string(typ) {
	case "response.refusal.delta":
		d.sawText = true
		return d.emit(emit, Event{Kind: EventRefusalDelta, Text: gjson.Get(s, "delta").Str})
	case "response.reasoning_summary_text.delta", "response.reasoning_text.delta":
		d.sawSummary = true
		return d.emit(emit, Event{Kind: EventReasoningDelta, Text: gjson.Get(s, "delta").Str})
	case "response.reasoning_summary_part.added":
		if gjson.Get(s, "summary_index").Int() > 0 {
			return d.emit(emit, Event{Kind: EventReasoningDelta, Text: "\n\n"})
		}
	case "response.function_call_arguments.delta":
		n := d.find(gjson.Get(s, "item_id").Str)
		if n < 0 {
			return d.malformed(typ, "for an unknown item_id")
		}
		delta := gjson.Get(s, "delta").Str
		if delta == "" {
			return nil
		}
		d.calls[n].hasArgs = true
		return d.emit(emit, Event{Kind: EventToolCallArgsDelta, Index: n, Text: delta})
	case "response.function_call_arguments.done":
		return d.callArgs(gjson.Get(s, "item_id").Str, gjson.Get(s, "arguments").Str, emit)
	case "response.output_item.added":
		return d.itemAdded(typ, gjson.Get(s, "item"), emit)
	case "response.output_item.done":
		return d.itemDone(typ, gjson.Get(s, "item"), emit)
	case "response.completed", "response.incomplete":
		r := gjson.Get(s, "response")
		if !r.IsObject() {
			return d.malformed(typ, "no response object")
		}
		d.phase = responsesDone
		if u := r.Get("usage"); u.IsObject() {
			if err := d.emit(emit, Event{Kind: EventUsage, Usage: responsesUsage(u)}); err != nil {
				return err
			}
		}
		return d.emit(emit, Event{Kind: EventFinish, FinishReason: responsesFinish(r, len(d.calls) > 0)})
	}
	// Everything else (content parts, *.done events whose content was streamed, built-in
	// tool progress such as response.web_search_call.*, annotations) adds nothing.
	return nil
}

func (d *responsesStream) malformed(typ []byte, what string) error {
	return &UpstreamError{Status: 502, Type: "api_error",
		Message: fmt.Sprintf("decoding responses event %q: %s", typ, what)}
}

func (d *responsesStream) fail(emit Emit, ue *UpstreamError) error {
	d.phase = responsesFailed
	if err := d.emit(emit, Event{Kind: EventError, Err: ue}); err != nil && err != error(ue) {
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

func (d *responsesStream) itemAdded(typ []byte, item gjson.Result, emit Emit) error {
	switch item.Get("type").Str {
	case "message":
		d.sawText = false
	case "reasoning":
		d.sawSummary = false
	case "function_call":
		itemID := item.Get("id").Str
		if itemID == "" || d.find(itemID) >= 0 {
			return d.malformed(typ, "function_call item without a unique id")
		}
		n := len(d.calls)
		d.calls = append(d.calls, responsesCall{itemID: clone(itemID)})
		id := d.carry.callID(item.Get("call_id").Str, itemID)
		if err := d.emit(emit, Event{Kind: EventToolCallStart, Index: n, CallID: id, Name: item.Get("name").Str}); err != nil {
			return err
		}
		if args := item.Get("arguments").Str; args != "" {
			d.calls[n].hasArgs = true
			return d.emit(emit, Event{Kind: EventToolCallArgsDelta, Index: n, Text: args})
		}
	}
	return nil
}

// callArgs emits a call's whole arguments if none were streamed.
func (d *responsesStream) callArgs(itemID, args string, emit Emit) error {
	n := d.find(itemID)
	if n < 0 || d.calls[n].hasArgs || args == "" {
		return nil
	}
	d.calls[n].hasArgs = true
	return d.emit(emit, Event{Kind: EventToolCallArgsDelta, Index: n, Text: args})
}

func (d *responsesStream) itemDone(typ []byte, item gjson.Result, emit Emit) error {
	var err error
	switch item.Get("type").Str {
	case "reasoning":
		if !d.sawSummary {
			item.Get("summary").ForEach(func(k, s gjson.Result) bool {
				text := s.Get("text").Str
				if k.Int() > 0 {
					text = "\n\n" + text
				}
				err = d.emit(emit, Event{Kind: EventReasoningDelta, Text: text})
				return err == nil
			})
		}
		d.carry.addReasoning(item)
	case "message":
		if !d.sawText {
			item.Get("content").ForEach(func(_, p gjson.Result) bool {
				switch p.Get("type").Str {
				case "output_text":
					err = d.emit(emit, Event{Kind: EventTextDelta, Text: p.Get("text").Str})
				case "refusal":
					err = d.emit(emit, Event{Kind: EventRefusalDelta, Text: p.Get("refusal").Str})
				}
				return err == nil
			})
		}
	case "function_call":
		itemID := item.Get("id").Str
		n := d.find(itemID)
		if n < 0 {
			return d.malformed(typ, "for a function_call never added")
		}
		if err := d.callArgs(itemID, item.Get("arguments").Str, emit); err != nil {
			return err
		}
		return d.emit(emit, Event{Kind: EventToolCallEnd, Index: n})
	}
	return err
}

// Close ends the stream: a stream that stopped before its terminal event is an error.
func (d *responsesStream) Close(emit Emit) error {
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
