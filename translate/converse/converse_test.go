package converse

import (
	"strings"
	"testing"

	"github.com/agate-gateway/agate/translate"
	"github.com/agate-gateway/agate/translate/internal/goldentest"
)

// TestReasoningRoundTrip: the reasoningContent blocks before a toolUse come back, signature
// and all, in front of that toolUse when a client that keeps only the call's id sends
// the history back.
func TestReasoningRoundTrip(t *testing.T) {
	body := `{"output":{"message":{"role":"assistant","content":[
		{"reasoningContent":{"reasoningText":{"text":"think","signature":"c2ln"}}},
		{"reasoningContent":{"redactedContent":"cmVk"}},
		{"toolUse":{"toolUseId":"tooluse_1","name":"f","input":{"a":1}}}]}},
		"stopReason":"tool_use","usage":{"inputTokens":5,"outputTokens":7,"cacheReadInputTokens":3,"cacheWriteInputTokens":2}}`
	var callID string
	var blocks []translate.ThinkingBlock
	var usage translate.Usage
	err := New().DecodeResponse([]byte(body), func(ev *translate.Event) error {
		switch ev.Kind {
		case translate.EventToolCallStart:
			callID = ev.CallID
		case translate.EventReasoningBlock:
			blocks = append(blocks, *ev.Block)
		case translate.EventUsage:
			usage = ev.Usage
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := (translate.Usage{PromptTokens: 10, CompletionTokens: 7, CachedTokens: 3, CacheCreationTokens: 2}); usage != want {
		t.Errorf("usage %+v, want %+v", usage, want)
	}
	if len(blocks) != 2 || blocks[0].Signature != "c2ln" || blocks[1].Data != "cmVk" || blocks[0].Dialect != Dialect {
		t.Errorf("blocks %+v", blocks)
	}
	if !strings.HasPrefix(callID, "tooluse_1"+translate.CarrySep) {
		t.Fatalf("call id %q carries no state", callID)
	}
	req := &translate.Request{Messages: []translate.Message{
		{Role: translate.RoleUser, Content: []translate.Part{{Type: translate.PartText, Text: "go"}}},
		{Role: translate.RoleAssistant, ToolCalls: []translate.ToolCall{{ID: callID, Name: "f", Arguments: `{"a":1}`}}},
		{Role: translate.RoleTool, ToolCallID: callID, Content: []translate.Part{{Type: translate.PartText, Text: "ok"}}},
	}, Tools: []translate.Tool{{Name: "f"}}}
	got, err := New().AppendRequest(nil, req, &translate.Options{UpstreamModel: "m"})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"role":"assistant","content":[{"reasoningContent":{"reasoningText":{"text":"think","signature":"c2ln"}}},{"reasoningContent":{"redactedContent":"cmVk"}},{"toolUse":{"toolUseId":"tooluse_1","name":"f","input":{"a":1}}}]}`
	if !strings.Contains(string(got), want) {
		t.Errorf("request\n%s\nwant in it\n%s", got, want)
	}
	if !strings.Contains(string(got), `{"toolResult":{"toolUseId":"tooluse_1",`) {
		t.Errorf("tool result id not plain: %s", got)
	}
}

// TestRefusesWhatConverseCannotTake: parameters Converse has no place for are a 400
// naming them, or dropped when the backend drops unsupported parameters.
func TestRefusesWhatConverseCannotTake(t *testing.T) {
	seed := int64(1)
	for _, c := range []struct {
		name string
		req  translate.Request
	}{
		{"seed", translate.Request{Seed: &seed}},
		{"n", translate.Request{N: 2}},
		{"logprobs", translate.Request{Logprobs: true}},
		{"response_format", translate.Request{ResponseFormat: translate.ResponseFormat{Type: translate.FormatJSONObject}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.req.Messages = []translate.Message{{Role: translate.RoleUser, Content: []translate.Part{{Type: translate.PartText, Text: "hi"}}}}
			_, err := New().AppendRequest(nil, &c.req, &translate.Options{})
			var pe *translate.ParamError
			if !asParam(err, &pe) || pe.Param != c.name {
				t.Fatalf("error %v, want a ParamError naming %s", err, c.name)
			}
			var dropped []string
			if _, err := New().AppendRequest(nil, &c.req, &translate.Options{DropUnsupported: true, Dropped: func(p string) { dropped = append(dropped, p) }}); err != nil || len(dropped) != 1 {
				t.Fatalf("with drop: %v, dropped %v", err, dropped)
			}
		})
	}
}

func asParam(err error, pe **translate.ParamError) bool {
	p, ok := err.(*translate.ParamError)
	*pe = p
	return ok
}

// TestEscapeModel: model ids are one path segment, escaped as the AWS SDKs escape them.
func TestEscapeModel(t *testing.T) {
	for in, want := range map[string]string{
		"amazon.nova-lite-v1:0":                        "amazon.nova-lite-v1%3A0",
		"us.anthropic.claude-3-7-sonnet-20250219-v1:0": "us.anthropic.claude-3-7-sonnet-20250219-v1%3A0",
		"arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.amazon.nova-pro-v1:0": "arn%3Aaws%3Abedrock%3Aus-east-1%3A123456789012%3Ainference-profile%2Fus.amazon.nova-pro-v1%3A0",
	} {
		if got := EscapeModel(in); got != want {
			t.Errorf("EscapeModel(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestContextExceeded: Bedrock's recorded refusals of a prompt over the context window
// (Claude and Nova, through Converse) are context errors, not retryable; its other
// recorded 400s are not.
func TestContextExceeded(t *testing.T) {
	p := New()
	for _, tt := range []struct {
		transcript string
		want       bool
	}{
		{"error-400-input-too-long-claude.pydantic-ai", true},
		{"error-400-input-tokens-exceeded-nova.pydantic-ai", true},
		{"error-400-stream-model-not-found.pydantic-ai", false},
		{"error-400-validation.vercel", false},
	} {
		t.Run(tt.transcript, func(t *testing.T) {
			e := p.DecodeError(400, goldentest.Transcript(t, tt.transcript, "upstream.json"))
			if got := translate.ContextExceeded(p, e); got != tt.want {
				t.Fatalf("ContextExceeded(%+v) = %v, want %v", e, got, tt.want)
			}
			if e.Retryable {
				t.Fatalf("a 400 is retryable: %+v", e)
			}
		})
	}
}
