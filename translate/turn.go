package translate

import "strings"

// Turn collects the events of one model turn into what a tool loop continues the
// conversation with: the assistant message (text, reasoning, refusal and tool calls, as
// the next request carries them), the finish reason, the usage and the first mid-stream
// error. It knows no dialect: the events are the core's, whichever upstream decoded them.
//
// A turn is one choice: events of a choice other than 0 are ignored (a tool loop serves no
// request with n > 1), except usage and errors, which belong to the whole response. Add
// copies every string it keeps, so the events may alias a decoder's buffers. The zero
// value is an empty turn; a Turn collects one turn in one goroutine.
type Turn struct {
	text, reasoning, refusal []byte
	calls                    []turnCall
	toolCalls                []ToolCall // built from calls by ToolCalls
	usage                    Usage
	finish                   string
	err                      *UpstreamError
}

// turnCall is one tool call being collected.
type turnCall struct {
	index    int // the Event.Index of its events
	id, name string
	args     []byte
}

// Add records one event.
func (t *Turn) Add(ev *Event) {
	switch ev.Kind {
	case EventUsage:
		t.usage = ev.Usage
		return
	case EventError:
		if t.err == nil {
			t.err = ev.Err
		}
		return
	}
	if ev.Choice != 0 {
		return
	}
	switch ev.Kind {
	case EventTextDelta:
		t.text = append(t.text, ev.Text...)
	case EventReasoningDelta:
		t.reasoning = append(t.reasoning, ev.Text...)
	case EventRefusalDelta:
		t.refusal = append(t.refusal, ev.Text...)
	case EventToolCallStart:
		t.calls = append(t.calls, turnCall{index: ev.Index, id: strings.Clone(ev.CallID), name: strings.Clone(ev.Name)})
	case EventToolCallArgsDelta:
		for i := range t.calls {
			if t.calls[i].index == ev.Index {
				t.calls[i].args = append(t.calls[i].args, ev.Text...)
				break
			}
		}
	case EventFinish:
		if t.finish == "" {
			t.finish = OwnedFinishReason(ev.FinishReason)
		}
	}
}

// OwnedFinishReason returns a copy of r, an Event's FinishReason (which may alias the
// decoder's input), that may be kept past the event: the constant for the reasons the
// decoders emit, so the common case allocates nothing.
func OwnedFinishReason(r string) string {
	switch r {
	case FinishStop:
		return FinishStop
	case FinishLength:
		return FinishLength
	case FinishToolCalls:
		return FinishToolCalls
	case FinishContentFilter:
		return FinishContentFilter
	}
	return strings.Clone(r)
}

// Usage is the last usage the turn's events carried (decoders emit cumulative figures).
func (t *Turn) Usage() Usage { return t.usage }

// Err is the first mid-stream upstream error (EventError) of the turn, or nil.
func (t *Turn) Err() *UpstreamError { return t.err }

// FinishReason is the turn's finish reason: the upstream's first, FinishStop when it gave
// none, and FinishToolCalls when the turn called tools and the upstream said stop or
// nothing.
func (t *Turn) FinishReason() string {
	switch {
	case len(t.calls) > 0 && (t.finish == "" || t.finish == FinishStop):
		return FinishToolCalls
	case t.finish == "":
		return FinishStop
	}
	return t.finish
}

// ToolCalls returns the turn's tool calls in the order they started, each with the
// argument text it collected (followed by NoArguments when that was empty or only
// whitespace); nil when it made none. Call it after the last event: the calls are built
// once, and Message carries the same slice.
func (t *Turn) ToolCalls() []ToolCall {
	if t.toolCalls == nil && len(t.calls) > 0 {
		t.toolCalls = make([]ToolCall, len(t.calls))
		for i, c := range t.calls {
			args := string(c.args)
			if NoArgumentText(c.args) {
				args += NoArguments
			}
			t.toolCalls[i] = ToolCall{ID: c.id, Name: c.name, Arguments: args}
		}
	}
	return t.toolCalls
}

// Message returns the turn as an assistant message, as the next request carries it: its
// text as one text part (none when it had no text), its reasoning and refusal text, and
// its ToolCalls. Call it after the last event.
func (t *Turn) Message() Message {
	m := Message{Role: RoleAssistant, ToolCalls: t.ToolCalls(), Reasoning: string(t.reasoning), Refusal: string(t.refusal)}
	if len(t.text) > 0 {
		m.Content = []Part{{Type: PartText, Text: string(t.text)}}
	}
	return m
}
