package openaichat

import (
	"strconv"
	"strings"

	"github.com/agate-gateway/agate/internal/jsonx"
	"github.com/agate-gateway/agate/translate"
)

// Assembler collects a response's events into complete messages, one per choice. It is
// what non-streaming clients and the tool loop consume. Not safe for concurrent use.
// The response's id and model are not kept: the client's answer carries the gateway's.
type Assembler struct {
	Choices []AssembledChoice
	// Usage is the last usage seen.
	Usage translate.Usage
	// Err is the first mid-stream error seen.
	Err *translate.UpstreamError
}

// AssembledChoice is one choice's complete output.
type AssembledChoice struct {
	Text      []byte
	Reasoning []byte
	Refusal   []byte
	ToolCalls []translate.ToolCall
	// Logprobs are the content token log probabilities, in order; nil when the upstream
	// sent none.
	Logprobs []translate.TokenLogprob
	// FinishReason is normalised: tool_calls when calls were made and the upstream said stop.
	FinishReason string
	keys         []int
}

// Add records one event. It copies every string it keeps.
func (a *Assembler) Add(ev *translate.Event) error {
	switch ev.Kind {
	case translate.EventStart:
		return nil
	case translate.EventUsage:
		a.Usage = ev.Usage
		return nil
	case translate.EventError:
		if a.Err == nil {
			a.Err = ev.Err
		}
		return nil
	}
	for len(a.Choices) <= ev.Choice {
		if len(a.Choices) < cap(a.Choices) {
			a.Choices = a.Choices[:len(a.Choices)+1] // emptied by Reset, buffers kept
		} else {
			a.Choices = append(a.Choices, AssembledChoice{})
		}
	}
	c := &a.Choices[ev.Choice]
	switch ev.Kind {
	case translate.EventTextDelta:
		c.Text = append(c.Text, ev.Text...)
		if len(ev.Logprobs) > 0 {
			c.Logprobs = appendLogprobsCopy(c.Logprobs, ev.Logprobs)
		}
	case translate.EventLogprobs:
		c.Logprobs = appendLogprobsCopy(c.Logprobs, ev.Logprobs)
	case translate.EventReasoningDelta:
		c.Reasoning = append(c.Reasoning, ev.Text...)
	case translate.EventRefusalDelta:
		c.Refusal = append(c.Refusal, ev.Text...)
	case translate.EventToolCallStart:
		c.keys = append(c.keys, ev.Index)
		c.ToolCalls = append(c.ToolCalls, translate.ToolCall{ID: strings.Clone(ev.CallID), Name: strings.Clone(ev.Name)})
	case translate.EventToolCallArgsDelta:
		for i, k := range c.keys {
			if k == ev.Index {
				// "" + s would alias s, which belongs to the decoder: always copy.
				c.ToolCalls[i].Arguments = string(append([]byte(c.ToolCalls[i].Arguments), ev.Text...))
				break
			}
		}
	case translate.EventToolCallEnd:
	case translate.EventFinish:
		if c.FinishReason == "" {
			c.FinishReason = ownedReason(ev.FinishReason)
		}
	}
	return nil
}

// ownedReason returns a copy of r, which the decoder owns: a constant for the reasons
// the decoders emit, so the common case allocates nothing.
func ownedReason(r string) string {
	for _, known := range [...]string{"stop", "length", "tool_calls", "content_filter", "function_call"} {
		if r == known {
			return known
		}
	}
	return strings.Clone(r)
}

// maxKeptBuffer bounds a text buffer Reset keeps for reuse.
const maxKeptBuffer = 64 << 10

// Reset empties a for reuse: the next response is assembled into the text, reasoning and
// refusal buffers of this one (each kept up to 64 KiB), so nothing Message or the
// Choices returned may be used after Reset. Everything else is dropped.
func (a *Assembler) Reset() {
	keep := func(b []byte) []byte {
		if cap(b) > maxKeptBuffer {
			return nil
		}
		return b[:0]
	}
	chs := a.Choices[:cap(a.Choices)]
	for i := range chs {
		c := &chs[i]
		*c = AssembledChoice{Text: keep(c.Text), Reasoning: keep(c.Reasoning), Refusal: keep(c.Refusal)}
	}
	*a = Assembler{Choices: chs[:0]}
}

// appendLogprobsCopy appends deep copies of lp, which may alias a decoder's buffers, to dst.
func appendLogprobsCopy(dst, lp []translate.TokenLogprob) []translate.TokenLogprob {
	for _, t := range lp {
		c := translate.TokenLogprob{Token: strings.Clone(t.Token), Logprob: t.Logprob, Bytes: cloneBytes(t.Bytes)}
		if t.Top != nil {
			c.Top = make([]translate.TopLogprob, len(t.Top))
			for i, top := range t.Top {
				c.Top[i] = translate.TopLogprob{Token: strings.Clone(top.Token), Logprob: top.Logprob, Bytes: cloneBytes(top.Bytes)}
			}
		}
		dst = append(dst, c)
	}
	return dst
}

func cloneBytes(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append([]byte{}, b...)
}

// Finish normalises the collected choices: every call has arguments (translate.NoArguments after none) and
// every choice a finish reason. Call it once after the last event.
func (a *Assembler) Finish() {
	if len(a.Choices) == 0 {
		a.Choices = append(a.Choices, AssembledChoice{})
	}
	for i := range a.Choices {
		c := &a.Choices[i]
		for j := range c.ToolCalls {
			if translate.NoArgumentText(c.ToolCalls[j].Arguments) {
				c.ToolCalls[j].Arguments += translate.NoArguments
			}
		}
		c.FinishReason = finishReason(c.FinishReason, len(c.ToolCalls) > 0)
	}
}

// Message returns choice i as an assistant message, as the next request would carry it.
func (a *Assembler) Message(i int) translate.Message {
	c := &a.Choices[i]
	m := translate.Message{Role: translate.RoleAssistant, ToolCalls: c.ToolCalls, Reasoning: string(c.Reasoning), Refusal: string(c.Refusal)}
	if len(c.Text) > 0 {
		m.Content = []translate.Part{{Type: translate.PartText, Text: string(c.Text)}}
	}
	return m
}

// sizeHint is about the length of the completion AppendCompletion writes, so that a
// fresh buffer is allocated once: the choices' text and arguments plus the fixed members.
func (a *Assembler) sizeHint() int {
	n := 512
	for i := range a.Choices {
		c := &a.Choices[i]
		n += 256 + len(c.Text) + len(c.Refusal) + len(c.Reasoning)
		for _, tc := range c.ToolCalls {
			n += 96 + len(tc.ID) + len(tc.Name) + len(tc.Arguments)
		}
	}
	return n + n/8 // escapes
}

// AppendCompletion appends the chat.completion JSON for the assembled response, with the
// client-facing id, model and creation time. Call Finish first.
func (a *Assembler) AppendCompletion(dst []byte, id, model string, created int64) []byte {
	if dst == nil {
		dst = make([]byte, 0, a.sizeHint())
	}
	dst = append(dst, `{"id":`...)
	dst = jsonx.AppendString(dst, id)
	dst = append(dst, `,"object":"chat.completion","created":`...)
	dst = strconv.AppendInt(dst, created, 10)
	dst = append(dst, `,"model":`...)
	dst = jsonx.AppendString(dst, model)
	dst = append(dst, `,"choices":[`...)
	for i := range a.Choices {
		c := &a.Choices[i]
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"index":`...)
		dst = jsonx.AppendInt(dst, i)
		dst = append(dst, `,"message":{"role":"assistant","content":`...)
		if len(c.Text) == 0 && (len(c.ToolCalls) > 0 || len(c.Refusal) > 0) {
			dst = append(dst, "null"...)
		} else {
			dst = jsonx.AppendString(dst, jsonx.View(c.Text))
		}
		dst = append(dst, `,"refusal":`...)
		if len(c.Refusal) == 0 {
			dst = append(dst, "null"...)
		} else {
			dst = jsonx.AppendString(dst, jsonx.View(c.Refusal))
		}
		if len(c.Reasoning) > 0 {
			dst = append(dst, `,"reasoning_content":`...)
			dst = jsonx.AppendString(dst, jsonx.View(c.Reasoning))
		}
		if len(c.ToolCalls) > 0 {
			dst = append(dst, `,"tool_calls":`...)
			dst = translate.AppendToolCalls(dst, c.ToolCalls)
		}
		dst = append(dst, `},"logprobs":`...)
		dst = appendLogprobs(dst, c.Logprobs)
		dst = append(dst, `,"finish_reason":`...)
		dst = jsonx.AppendString(dst, c.FinishReason)
		dst = append(dst, '}')
	}
	dst = append(dst, `],"usage":`...)
	dst = AppendUsage(dst, a.Usage)
	return append(dst, '}')
}
