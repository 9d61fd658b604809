package proxy

import (
	"github.com/tidwall/sjson"

	"github.com/agate-gateway/agate/internal/jsonx"
	"github.com/agate-gateway/agate/translate"
	"github.com/agate-gateway/agate/translate/responsesin"
)

// This file continues a Responses passthrough stream (a /v1/responses client on responses
// backends, azure's with api: responses included) that failed after part of its answer
// reached the client, over continueTurn's loop, as the chat passthrough is
// (continuation_passthrough.go): always a restart, whatever the route's mode (a prefill
// would mean editing the client's input items). The client's text is followed as its
// length and FNV-1a hash (resume.fwd); the new answer's text is hashed up to that length
// and compared, and what follows is relayed.
//
// The client sees one response: the new answer's response.created and .in_progress are
// swallowed, and so are the items it repeats (a reasoning item, the message whose text
// the client has) until its text passes the client's; from there its events go on in the
// client's open message and output_text part (their output_index, content_index and
// item_id the client's), and later items are numbered after the client's. Every event
// keeps the sequence_number that follows the client's last (responsesin.Sequencer). The
// response.completed carries the usage of every attempt summed; it is the new answer's
// Response otherwise (its id is the one the upstream stored).
//
// Not continued, the stream ending with the failure: after a function call or another
// tool item, a refusal, or the terminal event reached the client; when reasoning but no
// text reached it. A new answer whose text differs, or whose text passes the client's
// where the client's output_text was already done (output_text.done reached it: its text
// is final), ends the stream with the Responses stream's error event, code
// continuation_diverged. A new answer whose text ends where the client's done text ends
// goes on: the client gets the closing events of its message it lacks
// (content_part.done, output_item.done) once, then the rest.

// respFollow is what a forwarded Responses stream showed the client, and where the
// running attempt's items go.
type respFollow struct {
	// items is how many output items the client had added; open is its open item's
	// output_index (-1: none), a message when msg, with id itemID; part is the content_index
	// of the message's open output_text part (-1: none), parts how many it had added.
	items, open int
	msg         bool
	itemID      []byte
	part, parts int
	// textDone is set once the client's open output_text part's output_text.done reached
	// it: its text is final.
	textDone bool
	// The running attempt: its current item is a message (atMsg) that goes to the
	// client's item to (-1: swallowed, a repeat), its current part to toPart; joined
	// is set once its message goes on in the client's open one.
	atMsg  bool
	to     int
	toPart int
	joined bool
	// respID is the id of the Response the client's stream began with. Both ids are
	// kept in room when they fit.
	respID           []byte
	respRoom, idRoom [64]byte
	// summed is set when the event being forwarded carries the usage of every attempt.
	summed bool
	sc     jsonx.Scanner
}

// begin starts an attempt's stream.
func (fl *respFollow) begin(active bool) {
	if !active {
		*fl = respFollow{open: -1, part: -1, sc: fl.sc}
		fl.respID, fl.itemID = fl.respRoom[:0], fl.idRoom[:0]
	}
	fl.atMsg, fl.to, fl.toPart, fl.joined, fl.summed = false, -1, -1, false, false
}

// respMembers are the members of an event follow reads.
var respMembers = [...]string{"type", "output_index", "content_index", "delta", "item"}

// follow decides about the data of an upstream event of a Responses passthrough that may
// be continued (resume.on): it returns the data as the client is to get it, skip when the
// client is to get nothing of it, or the error that ends the attempt (errDiverged). When
// flat, fe is what responsesin.ReadFlatEvent read of data (a flat event: its members are
// no objects, so it has no item and no response), which follow then does not read again.
func (f *responsesForward) follow(data []byte, fe *responsesin.FlatEvent, flat bool) (_ []byte, skip bool, err error) {
	fl := &f.fol
	k := &f.c.call.resume
	fw := &k.fwd
	fl.summed = false
	sc := &fl.sc
	var m [len(respMembers)]jsonx.Value
	var root jsonx.Value
	var typ, text string
	oi, ci := int64(-1), int64(-1) // -1: the event names none
	if flat {
		typ, oi, ci, text = fe.Type, fe.OutputIndex, fe.ContentIndex, fe.Delta
	} else {
		sc.Reset(jsonx.View(data))
		var ok bool
		if root, ok = sc.RootMembers(respMembers[:], m[:]); !ok {
			return data, false, nil // the forwarder skips it
		}
		typ = m[0].Str
		if m[1].Kind == jsonx.Number {
			oi = m[1].Int()
		}
		if m[2].Kind == jsonx.Number {
			ci = m[2].Int()
		}
		if m[3].Kind == jsonx.String {
			text = m[3].Str
		}
	}
	// The members of the event's item and response (none in a flat event).
	itemMember := func(name string) string {
		if flat {
			return ""
		}
		return sc.Get(m[4], name).Str
	}
	if err := f.continuesError(f.c.call.at, typ, data); err != nil {
		return data, true, holdEvent(err, nil, data) // continued, or else forwarded
	}
	repeating := k.active && fw.seen < fw.n
	switch typ {
	case "response.created", "response.in_progress", "response.queued":
		if !k.active && len(fl.respID) == 0 && !flat {
			fl.respID = append(fl.respID, sc.Path(root, "response", "id").Str...)
		}
		return data, k.active, nil // a continuation's: the client's response began before
	case "response.output_item.added":
		item := itemMember("type")
		fl.atMsg, fl.to, fl.toPart = item == "message", -1, -1
		if repeating {
			if item == "message" || item == "reasoning" {
				return data, true, nil // repeated, or the new answer's reasoning: the client has its own
			}
			return data, true, errDiverged // a call where the client's text was
		}
		if k.active && fl.msg && fl.part >= 0 && item == "message" {
			fl.to, fl.joined = fl.open, true
			return data, true, nil // goes on in the client's open message
		}
		fl.to = fl.items
		fl.open, fl.msg, fl.part, fl.parts = fl.items, item == "message", -1, 0
		fl.itemID = append(fl.itemID[:0], itemMember("id")...)
		fl.items++
		switch item {
		case "message", "reasoning":
		case "function_call", "custom_tool_call":
			k.blocked = "tool_call"
		default:
			k.blocked = "builtin_item"
		}
		return f.moved(data, oi, -1), false, nil
	case "response.content_part.added":
		if fl.to < 0 {
			return data, true, nil // a swallowed item's
		}
		if fl.joined && fl.toPart < 0 && fl.part >= 0 {
			fl.toPart = fl.part
			return data, true, nil // the client's open part goes on
		}
		fl.part, fl.toPart, fl.textDone = fl.parts, fl.parts, false
		fl.parts++
		return f.moved(data, oi, ci), false, nil
	case "response.output_text.delta":
		if repeating {
			need := fw.n - fw.seen
			head := text[:min(need, len(text))]
			fw.seen, fw.seenSum = fw.seen+len(head), fnvAdd(fw.seenSum, head)
			if fw.seen == fw.n && fw.seenSum != fw.sum {
				return data, true, errDiverged
			}
			text = text[len(head):]
			if text == "" {
				return data, true, nil // repeated: the client has it
			}
			if !fl.joinHere() {
				return data, true, errDiverged // the client's part is done: nowhere to go on
			}
			fw.n, fw.sum = fw.n+len(text), fnvAdd(fw.sum, text)
			fw.seen, fw.seenSum = fw.n, fw.sum
			d, err := sjson.SetBytes(f.moved(data, oi, ci), "delta", text)
			if err != nil {
				return data, true, errDiverged
			}
			return d, false, nil
		}
		if fl.to < 0 && k.active && !fl.joinHere() {
			return data, true, errDiverged
		}
		fw.n, fw.sum = fw.n+len(text), fnvAdd(fw.sum, text)
		fw.seen, fw.seenSum = fw.n, fw.sum
		return f.moved(data, oi, ci), false, nil
	case "response.output_text.done", "response.content_part.done", "response.output_item.done":
		if k.active && !repeating && fw.n > 0 && fl.atMsg && fl.msg && fl.open >= 0 && (fl.to < 0 || fl.joined) {
			// The new answer's message, which repeated the client's open one, closes: the
			// client gets the closing events it lacks, in its own message and part.
			if typ == "response.output_text.done" && (fl.textDone || fl.part < 0) || typ == "response.content_part.done" && fl.part < 0 {
				return data, true, nil // the client has it
			}
			fl.to, fl.joined = fl.open, true
			if fl.part >= 0 {
				fl.toPart = fl.part
			}
		} else if fl.to < 0 {
			return data, true, nil // a swallowed item's
		}
		switch typ {
		case "response.output_text.done":
			fl.textDone = true
		case "response.content_part.done":
			fl.part, fl.textDone = -1, false
		case "response.output_item.done":
			fl.open, fl.to = -1, -1
		}
		return f.moved(data, oi, ci), false, nil
	case "response.completed", "response.incomplete", "response.failed":
		if repeating {
			return data, true, errDiverged // the new answer ended before repeating the client's text
		}
		k.blocked = "finished"
		if k.active {
			data = f.summedUsage(data)
			if d, err := sjson.SetBytes(data, "response.id", string(fl.respID)); err == nil && len(fl.respID) > 0 {
				data = d // the client's stream began with it
			}
		}
		return data, false, nil
	case "error":
		k.blocked = "finished"
		return data, false, nil
	case "response.refusal.delta":
		k.blocked = "refusal"
	case "response.function_call_arguments.delta", "response.custom_tool_call_input.delta":
		k.blocked = "tool_call"
	case "response.reasoning_summary_text.delta", "response.reasoning_text.delta":
		k.reasoning = k.reasoning || fw.n == 0
	}
	if fl.to < 0 && k.active {
		return data, true, nil // an event of a swallowed item
	}
	return f.moved(data, oi, ci), false, nil
}

// joinHere makes the attempt's current message go on in the client's open output_text
// part, when the client has one; false when it has none.
func (fl *respFollow) joinHere() bool {
	if !fl.atMsg || !fl.msg || fl.part < 0 || fl.textDone {
		return false
	}
	fl.to, fl.toPart, fl.joined = fl.open, fl.part, true
	return true
}

// moved returns data, an event of the attempt's item at output_index oi (its part ci;
// -1 when it names none), with the client's output_index, content_index and item id for
// them, when they differ (a continuation's).
func (f *responsesForward) moved(data []byte, oi, ci int64) []byte {
	fl := &f.fol
	if !f.c.call.resume.active || fl.to < 0 {
		return data
	}
	set := func(path string, v any) {
		if d, err := sjson.SetBytes(data, path, v); err == nil {
			data = d
		}
	}
	if oi >= 0 && int64(fl.to) != oi {
		set("output_index", fl.to)
	}
	if ci >= 0 && fl.toPart >= 0 && int64(fl.toPart) != ci {
		set("content_index", fl.toPart)
	}
	if fl.joined && fl.to == fl.open && len(fl.itemID) > 0 {
		sc := &fl.sc
		sc.Reset(jsonx.View(data))
		var m [2]jsonx.Value
		if _, ok := sc.RootMembers([]string{"item_id", "item"}, m[:]); ok {
			if m[0].Kind == jsonx.String && m[0].Str != string(fl.itemID) {
				set("item_id", string(fl.itemID))
			}
			if id := sc.Get(m[1], "id"); id.Kind == jsonx.String && id.Str != string(fl.itemID) {
				set("item.id", string(fl.itemID))
			}
		}
	}
	return data
}

// summedUsage returns a continuation's terminal event with its Response's usage the sum of
// every attempt's (summed is then set: ownUsage takes the earlier ones' off again for the
// meter).
func (f *responsesForward) summedUsage(data []byte) []byte {
	u := responsesin.ReadEventResponse(data).Usage
	if u == (translate.Usage{}) {
		return data // no usage to add to
	}
	u.Add(f.c.call.resume.prior)
	for _, v := range [...]struct {
		path string
		n    int
	}{
		{"response.usage.input_tokens", u.PromptTokens},
		{"response.usage.input_tokens_details.cached_tokens", u.CachedTokens},
		{"response.usage.output_tokens", u.CompletionTokens},
		{"response.usage.output_tokens_details.reasoning_tokens", u.ReasoningTokens},
		{"response.usage.total_tokens", u.PromptTokens + u.CompletionTokens},
	} {
		if d, err := sjson.SetBytes(data, v.path, v.n); err == nil {
			data = d
		}
	}
	f.fol.summed = true
	return data
}

// ownUsage returns u, the usage the client's event carries, less the earlier attempts'
// when it carries their sum (summedUsage): the running attempt's, for the meter.
func (f *responsesForward) ownUsage(u translate.Usage) translate.Usage {
	if f.fol.summed {
		return usageSince(u, f.c.call.resume.prior)
	}
	return u
}

// continuesError returns the upstream failure an error event or response.failed (typ and
// data) reports, when the continuation may take it up (rather than it being forwarded
// as it came): the client saw part of an answer before, and it is of a kind that may be
// continued; else nil.
func (f *responsesForward) continuesError(r *route, typ string, data []byte) error {
	c := f.c.call
	if typ != "error" && typ != "response.failed" || !c.resume.on || !(c.sent || c.resume.active) || !c.resume.continuable() {
		return nil
	}
	err := r.backend.provider.NewStreamDecoder(nil).Event([]byte(typ), data, func(*translate.Event) error { return nil })
	if err == nil || !upstreamContinuable(err) {
		return nil
	}
	return err
}

// appendHeld appends a held upstream error event as event forwards one (eventHolder),
// numbered after the events the client has.
func (f *responsesForward) appendHeld(dst []byte, h *heldEvent) []byte {
	out, _, _ := f.fw.Event(dst, h.data)
	return out
}
