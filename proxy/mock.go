package proxy

import (
	"context"
	"strings"

	"github.com/agate-gateway/agate/translate"
)

// localProvider is a provider that answers in process, without an upstream exchange: its
// Answer replaces the round trip, and its translate.Provider methods are never asked to
// phrase or decode anything.
type localProvider interface {
	translate.Provider
	// Answer emits the events of the turn for req, as a decoder would.
	Answer(ctx context.Context, req *translate.Request, upstreamModel string, emit translate.Emit) error
}

// mockProvider is the offline mock backend: deterministic, no network. It echoes the last
// user message word by word. When the request carries tools and the last user message
// names one, it calls that tool instead (arguments "{}"); when the conversation ends with
// tool results, it answers with what the tools returned. Usage counts words.
type mockProvider struct{}

var _ localProvider = mockProvider{}

func (mockProvider) Path(string, bool) string { return "" }
func (mockProvider) Headers(string) []translate.Header {
	return nil
}
func (mockProvider) AppendRequest(dst []byte, _ *translate.Request, _ *translate.Options) ([]byte, error) {
	return dst, nil
}
func (mockProvider) NewStreamDecoder(*translate.Options) translate.StreamDecoder { return nil }
func (mockProvider) DecodeResponse([]byte, translate.Emit) error                 { return nil }
func (mockProvider) DecodeError(status int, body []byte) *translate.UpstreamError {
	return &translate.UpstreamError{Status: status, Type: translate.ErrorType(status), Message: "mock error"}
}

// Answer runs the mock (see mockProvider).
func (mockProvider) Answer(ctx context.Context, req *translate.Request, model string, emit translate.Emit) error {
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
