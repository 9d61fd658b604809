package mock

import (
	"context"
	"strings"

	"github.com/agate-gateway/agate/translate"
)

// Provider is the mock backend (see the package doc). Its zero value is ready.
type Provider struct{}

var _ translate.Provider = Provider{}

// New returns the mock provider.
func New() Provider { return Provider{} }

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
func (Provider) Answer(ctx context.Context, req *translate.Request, model string, emit translate.Emit) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := emit(&translate.Event{Kind: translate.EventStart, ID: "mock-1", Model: model}); err != nil {
		return err
	}
	prompt := 0
	for i := range req.Messages {
		prompt += len(strings.Fields(req.Messages[i].Text()))
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
				evs := []translate.Event{
					{Kind: translate.EventToolCallStart, Index: 0, CallID: "call_mock_" + tool, Name: tool},
					{Kind: translate.EventToolCallArgsDelta, Index: 0, Text: "{}"},
					{Kind: translate.EventToolCallEnd, Index: 0},
					{Kind: translate.EventUsage, Usage: translate.Usage{PromptTokens: prompt, CompletionTokens: 1}},
					{Kind: translate.EventFinish, FinishReason: translate.FinishToolCalls},
				}
				for i := range evs {
					if err := emit(&evs[i]); err != nil {
						return err
					}
				}
				return nil
			}
		}
		answer = text
	}
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
