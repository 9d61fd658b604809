package telemetry

import (
	"encoding/json"
	"strings"

	"go.opentelemetry.io/otel/attribute"

	"github.com/agate-gateway/agate/translate"
)

// Content capture (telemetry.capture_content): messages are recorded as the GenAI
// conventions' JSON: gen_ai.system_instructions holds the system and developer text,
// gen_ai.input.messages the other messages and gen_ai.output.messages the answer, each
// message {"role", "parts": [...]} with parts of type text, tool_call and
// tool_call_response. Images and files are recorded by type only.

type capturedMessage struct {
	Role         string         `json:"role"`
	Parts        []capturedPart `json:"parts"`
	FinishReason string         `json:"finish_reason,omitempty"`
}

type capturedPart struct {
	Type      string `json:"type"`
	Content   string `json:"content,omitempty"`
	ID        string `json:"id,omitempty"`
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments,omitempty"`
	Response  string `json:"response,omitempty"`
}

// inputMessages returns the captured instructions and input messages of req.
func inputMessages(req *translate.Request) []attribute.KeyValue {
	var system []capturedPart
	var msgs []capturedMessage
	for i := range req.Messages {
		m := &req.Messages[i]
		var parts []capturedPart
		for _, p := range m.Content {
			switch p.Type {
			case translate.PartText, translate.PartRefusal:
				if m.Role == translate.RoleTool {
					parts = append(parts, capturedPart{Type: "tool_call_response", ID: m.ToolCallID, Response: p.Text})
				} else {
					parts = append(parts, capturedPart{Type: "text", Content: p.Text})
				}
			case translate.PartImage:
				parts = append(parts, capturedPart{Type: "image"})
			default:
				parts = append(parts, capturedPart{Type: "file"})
			}
		}
		for _, tc := range m.ToolCalls {
			parts = append(parts, capturedPart{Type: "tool_call", ID: tc.ID, Name: tc.Name, Arguments: tc.Arguments})
		}
		if m.Role == translate.RoleSystem || m.Role == translate.RoleDeveloper {
			system = append(system, parts...)
			continue
		}
		msgs = append(msgs, capturedMessage{Role: m.Role, Parts: parts})
	}
	attrs := []attribute.KeyValue{attrInputMessages.String(marshal(msgs))}
	if len(system) > 0 {
		attrs = append(attrs, attrSystemInstr.String(marshal(system)))
	}
	return attrs
}

// outputCapture assembles the content of an answer's events.
type outputCapture struct {
	text  strings.Builder
	calls []capturedPart
	args  map[int]*strings.Builder
	index map[int]int // tool call index -> position in calls
}

func (o *outputCapture) add(ev *translate.Event) {
	if ev.Choice != 0 {
		return // the first choice only
	}
	switch ev.Kind {
	case translate.EventTextDelta, translate.EventRefusalDelta:
		o.text.WriteString(ev.Text)
	case translate.EventToolCallStart:
		if o.index == nil {
			o.index, o.args = map[int]int{}, map[int]*strings.Builder{}
		}
		o.index[ev.Index] = len(o.calls)
		o.args[ev.Index] = &strings.Builder{}
		o.calls = append(o.calls, capturedPart{Type: "tool_call", ID: strings.Clone(ev.CallID), Name: strings.Clone(ev.Name)})
	case translate.EventToolCallArgsDelta:
		if b, ok := o.args[ev.Index]; ok {
			b.WriteString(ev.Text)
		}
	}
}

func (o *outputCapture) json(finish []string) string {
	var parts []capturedPart
	if o.text.Len() > 0 {
		parts = append(parts, capturedPart{Type: "text", Content: o.text.String()})
	}
	for idx, i := range o.index {
		o.calls[i].Arguments = o.args[idx].String()
	}
	parts = append(parts, o.calls...)
	m := capturedMessage{Role: "assistant", Parts: parts}
	if len(finish) > 0 {
		m.FinishReason = finish[0]
	}
	return marshal([]capturedMessage{m})
}

func marshal(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return ""
	}
	return string(b)
}
