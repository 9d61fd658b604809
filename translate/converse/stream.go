package converse

import (
	"github.com/agate-gateway/agate/internal/jsonx"
	"github.com/agate-gateway/agate/translate"
)

// kind is the kind of an open content block of a stream.
type kind uint8

const (
	noBlock kind = iota
	textBlock
	reasoningBlock
	redactedBlock
	toolBlock
)

// stream decodes one ConverseStream answer, fed one event frame at a time (its
// :event-type and JSON payload): messageStart, contentBlockStart (a toolUse's id and
// name), contentBlockDelta (text, toolUse input, reasoningContent text, signature or
// redactedContent; a citation, or a delta of a kind newer than this decoder, is
// skipped), contentBlockStop, messageStop (stopReason) and metadata (usage), in
// that order, though a text or reasoning block may start with its first delta. It is not
// safe for concurrent use.
type stream struct {
	started, stopped, closed bool
	finish                   string
	usage                    translate.Usage
	haveUsage                bool
	// open is the kind of the open block and index its contentBlockIndex.
	open  kind
	index int64
	// text and signature collect an open reasoning block's text and signature (for its
	// EventReasoningBlock), raw its reasoningContent as Converse spells it whole.
	text, signature, raw []byte
	b                    blocks
	ev                   translate.Event
	sc                   jsonx.Scanner
	err                  *translate.UpstreamError
}

func (d *stream) fail(err *translate.UpstreamError) error {
	d.err = err
	return err
}

func (d *stream) emit(emit translate.Emit, k translate.EventKind, text string) error {
	d.ev = translate.Event{Kind: k, Text: text, Index: d.b.calls - 1}
	return emit(&d.ev)
}

// Event decodes one event frame.
func (d *stream) Event(typ, data []byte, emit translate.Emit) error {
	if d.err != nil {
		return d.err
	}
	if d.closed {
		return nil
	}
	if !d.started {
		d.started = true
		d.ev = translate.Event{Kind: translate.EventStart}
		if err := emit(&d.ev); err != nil {
			return err
		}
	}
	sc := &d.sc
	sc.Reset(jsonx.View(data))
	switch string(typ) {
	case "contentBlockDelta":
		var m [2]jsonx.Value
		if _, ok := sc.RootMembers([]string{"contentBlockIndex", "delta"}, m[:]); !ok {
			return unreadable("a contentBlockDelta event", data)
		}
		if m[1].Kind != jsonx.Object {
			return d.fail(malformed("a contentBlockDelta event", data))
		}
		return d.delta(m[0].Int(), m[1], emit, data)
	case "contentBlockStart":
		var m [2]jsonx.Value
		if _, ok := sc.RootMembers([]string{"contentBlockIndex", "start"}, m[:]); !ok {
			return unreadable("a contentBlockStart event", data)
		}
		if err := d.stop(emit); err != nil {
			return err
		}
		var t [2]jsonx.Value
		tu := sc.Get(m[1], "toolUse")
		if tu.Kind != jsonx.Object {
			return nil // a text or reasoning block's start says nothing its deltas do not
		}
		sc.Members(tu, []string{"toolUseId", "name"}, t[:])
		if t[0].Kind != jsonx.String || t[1].Kind != jsonx.String {
			return d.fail(malformed("a toolUse start without toolUseId or name", data))
		}
		d.open, d.index = toolBlock, m[0].Int()
		return d.b.toolStart(t[0].Str, t[1].Str, emit)
	case "contentBlockStop":
		if _, ok := sc.Root(); !ok {
			return unreadable("a contentBlockStop event", data)
		}
		return d.stop(emit)
	case "messageStart":
		if _, ok := sc.Root(); !ok {
			return unreadable("a messageStart event", data)
		}
		return nil
	case "messageStop":
		var m [1]jsonx.Value
		if _, ok := sc.RootMembers([]string{"stopReason"}, m[:]); !ok {
			return unreadable("a messageStop event", data)
		}
		if err := d.stop(emit); err != nil {
			return err
		}
		d.stopped, d.finish = true, finishReason(m[0].Str)
		return nil
	case "metadata":
		v, ok := sc.IndexRoot()
		if !ok {
			return unreadable("a metadata event", data)
		}
		if u := sc.Get(v, "usage"); u.Kind == jsonx.Object {
			d.usage, d.haveUsage = readUsage(sc, u), true
		}
		return nil
	}
	return d.fail(malformed("an event of unknown type "+clip(string(typ), 40), nil))
}

// unreadable is the error of one event whose JSON cannot be read at all (the frame's
// checksums held, so Bedrock sent it so): the decoder's state is left as it was, and the
// caller may skip the event and feed the next (translate.ErrMalformedEvent), as the
// other dialects' decoders let it.
func unreadable(what string, data []byte) error {
	return translate.MalformedEvent(malformed(what, data))
}

// delta decodes a contentBlockDelta's delta of block index.
func (d *stream) delta(index int64, delta jsonx.Value, emit translate.Emit, data []byte) error {
	sc := &d.sc
	var m [3]jsonx.Value
	sc.Members(delta, []string{"text", "toolUse", "reasoningContent"}, m[:])
	if d.open != noBlock && index != d.index {
		if err := d.stop(emit); err != nil {
			return err
		}
	}
	switch {
	case m[0].Kind == jsonx.String:
		d.open, d.index = textBlock, index
		return d.emit(emit, translate.EventTextDelta, m[0].Str)
	case m[1].Kind == jsonx.Object:
		if d.open != toolBlock {
			return d.fail(malformed("a toolUse delta outside a toolUse block", data))
		}
		in := sc.Get(m[1], "input")
		if in.Kind != jsonx.String {
			return d.fail(malformed("a toolUse delta without input", data))
		}
		return d.emit(emit, translate.EventToolCallArgsDelta, in.Str)
	case m[2].Kind == jsonx.Object:
		var r [3]jsonx.Value
		sc.Members(m[2], []string{"text", "signature", "redactedContent"}, r[:])
		if d.open != reasoningBlock && d.open != redactedBlock {
			d.open, d.index = reasoningBlock, index
			d.text, d.signature, d.raw = d.text[:0], d.signature[:0], d.raw[:0]
		}
		switch {
		case r[0].Kind == jsonx.String:
			d.text = append(d.text, r[0].Str...)
			return d.emit(emit, translate.EventReasoningDelta, r[0].Str)
		case r[1].Kind == jsonx.String:
			d.signature = append(d.signature, r[1].Str...)
		case r[2].Kind == jsonx.String:
			d.open = redactedBlock
			d.text = append(d.text, r[2].Str...)
		}
		return nil
	}
	// A delta of another kind (a citation of the request's documents, a kind newer than
	// this decoder) is well-formed and has no place in the client's answer.
	return nil
}

// stop ends the open block: a reasoning block is emitted whole, a tool call ended.
func (d *stream) stop(emit translate.Emit) error {
	open := d.open
	d.open = noBlock
	switch open {
	case toolBlock:
		d.ev = translate.Event{Kind: translate.EventToolCallEnd, Index: d.b.calls - 1}
		return emit(&d.ev)
	case reasoningBlock:
		d.raw = append(d.raw[:0], `{"reasoningText":{"text":`...)
		d.raw = jsonx.AppendString(d.raw, jsonx.View(d.text))
		if len(d.signature) > 0 {
			d.raw = append(d.raw, `,"signature":`...)
			d.raw = jsonx.AppendString(d.raw, jsonx.View(d.signature))
		}
		d.raw = append(d.raw, "}}"...)
		return d.b.thinking(jsonx.View(d.text), jsonx.View(d.signature), jsonx.View(d.raw), emit)
	case redactedBlock:
		d.raw = append(d.raw[:0], `{"redactedContent":`...)
		d.raw = jsonx.AppendString(d.raw, jsonx.View(d.text))
		d.raw = append(d.raw, '}')
		return d.b.redacted(jsonx.View(d.text), jsonx.View(d.raw), emit)
	}
	return nil
}

// Close emits the usage and the finish reason; a stream that ended before messageStop
// is an upstream error.
func (d *stream) Close(emit translate.Emit) error {
	if d.err != nil {
		return d.err
	}
	if d.closed {
		return nil
	}
	d.closed = true
	if !d.stopped {
		return &translate.UpstreamError{Status: 502, Type: "api_error", Message: "the bedrock stream ended before its messageStop event"}
	}
	d.ev = translate.Event{Kind: translate.EventUsage, Usage: d.usage}
	if err := emit(&d.ev); err != nil {
		return err
	}
	d.ev = translate.Event{Kind: translate.EventFinish, FinishReason: d.finish}
	return emit(&d.ev)
}

var _ translate.UsageReporter = (*stream)(nil)

// UsageSoFar returns the metadata event's usage, which covers the whole answer; it comes
// after messageStop, so a stream cut before it has none.
func (d *stream) UsageSoFar() (translate.Usage, bool) { return d.usage, d.haveUsage }
