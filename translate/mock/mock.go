package mock

import (
	"context"
	"strconv"
	"strings"

	"github.com/agate-gateway/agate/translate"
)

// Provider is the mock backend (see the package doc). Its zero value is ready: it echoes.
type Provider struct {
	script []Turn
}

// Turn is one canned answer of a scripted mock: Text, or ToolCalls.
type Turn struct {
	Text      string
	ToolCalls []ToolCall
}

// ToolCall is a call of a Turn. Arguments are JSON; "" fills them from the tool's schema
// (Arguments).
type ToolCall struct {
	Name, Arguments string
}

var _ translate.Provider = Provider{}

// New returns the mock provider.
func New() Provider { return Provider{} }

// Scripted returns a mock that answers turn i of a conversation (i = the assistant
// messages the request holds) with script[i], and past its end as New's does.
func Scripted(script []Turn) Provider { return Provider{script: script} }

// Path is "": the mock has no upstream.
func (Provider) Path(string, bool) string { return "" }

// Headers is nil: the mock has no upstream.
func (Provider) Headers(string) []translate.Header { return nil }

// AppendRequest appends nothing: the mock has no upstream request.
func (Provider) AppendRequest(dst []byte, _ *translate.Request, _ *translate.Options) ([]byte, error) {
	return dst, nil
}

// NewStreamDecoder is nil: Answer emits the events.
func (Provider) NewStreamDecoder(*translate.Options) translate.StreamDecoder { return nil }

// DecodeResponse decodes nothing: Answer emits the events.
func (Provider) DecodeResponse([]byte, translate.Emit) error { return nil }

// DecodeError is a "mock error" of status.
func (Provider) DecodeError(status int, _ []byte) *translate.UpstreamError {
	return &translate.UpstreamError{Status: status, Type: translate.ErrorType(status), Message: "mock error"}
}

// Answer emits the mock's answer to req as model (see the package doc).
func (p Provider) Answer(ctx context.Context, req *translate.Request, model string, emit translate.Emit) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := emit(&translate.Event{Kind: translate.EventStart, ID: "mock-1", Model: model}); err != nil {
		return err
	}
	prompt, turn := 0, 0
	for i := range req.Messages {
		prompt += len(strings.Fields(req.Messages[i].Text()))
		if req.Messages[i].Role == translate.RoleAssistant {
			turn++
		}
	}
	if turn < len(p.script) {
		t := &p.script[turn]
		if len(t.ToolCalls) > 0 {
			return callTools(req, t.ToolCalls, prompt, emit)
		}
		return say(ctx, t.Text, prompt, emit)
	}
	last := &req.Messages[len(req.Messages)-1]
	var answer string
	switch {
	case last.Role == translate.RoleTool:
		var b strings.Builder
		b.WriteString("Tool results:")
		for i := len(req.Messages) - 1; i >= 0 && req.Messages[i].Role == translate.RoleTool; i-- {
			b.WriteString(" ")
			b.WriteString(req.Messages[i].Text())
		}
		answer = b.String()
	default:
		text := lastUserText(req)
		if req.ToolChoice.Mode != translate.ToolChoiceNone {
			if tool := mentionedTool(req, text); tool != "" {
				return callTools(req, []ToolCall{{Name: tool}}, prompt, emit)
			}
		}
		answer = text
	}
	return say(ctx, answer, prompt, emit)
}

// callTools emits a turn that calls calls, in order, each with its arguments or, when
// it has none, arguments filled from its tool's schema in req (Arguments).
func callTools(req *translate.Request, calls []ToolCall, prompt int, emit translate.Emit) error {
	for i, c := range calls {
		args := c.Arguments
		if args == "" {
			args = Arguments(toolSchema(req, c.Name))
		}
		id := "call_mock_" + c.Name
		if i > 0 { // the same tool may be called twice in a turn
			id += "_" + strconv.Itoa(i)
		}
		evs := [...]translate.Event{
			{Kind: translate.EventToolCallStart, Index: i, CallID: id, Name: c.Name},
			{Kind: translate.EventToolCallArgsDelta, Index: i, Text: args},
			{Kind: translate.EventToolCallEnd, Index: i},
		}
		for j := range evs {
			if err := emit(&evs[j]); err != nil {
				return err
			}
		}
	}
	if err := emit(&translate.Event{Kind: translate.EventUsage, Usage: translate.Usage{PromptTokens: prompt, CompletionTokens: len(calls)}}); err != nil {
		return err
	}
	return emit(&translate.Event{Kind: translate.EventFinish, FinishReason: translate.FinishToolCalls})
}

// toolSchema returns the parameters schema of req's tool name, "" when it has none.
func toolSchema(req *translate.Request, name string) string {
	for i := range req.Tools {
		if req.Tools[i].Builtin == nil && req.Tools[i].Name == name {
			return req.Tools[i].Parameters
		}
	}
	return ""
}

// say emits answer word by word, then the usage and finish events.
func say(ctx context.Context, answer string, prompt int, emit translate.Emit) error {
	words := strings.Fields(answer)
	for i, w := range words {
		if err := ctx.Err(); err != nil {
			return err
		}
		if i > 0 {
			w = " " + w
		}
		if err := emit(&translate.Event{Kind: translate.EventTextDelta, Text: w}); err != nil {
			return err
		}
	}
	if err := emit(&translate.Event{Kind: translate.EventUsage, Usage: translate.Usage{PromptTokens: prompt, CompletionTokens: len(words)}}); err != nil {
		return err
	}
	return emit(&translate.Event{Kind: translate.EventFinish, FinishReason: translate.FinishStop})
}

func lastUserText(req *translate.Request) string {
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if req.Messages[i].Role == translate.RoleUser {
			return req.Messages[i].Text()
		}
	}
	return ""
}

// mentionedTool returns the first tool (in request order) whose name appears in text.
func mentionedTool(req *translate.Request, text string) string {
	for _, t := range req.Tools {
		if t.Builtin == nil && strings.Contains(text, t.Name) {
			return t.Name
		}
	}
	return ""
}
