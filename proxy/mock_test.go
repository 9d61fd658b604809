package proxy

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"

	"github.com/agate-gateway/agate/config"
)

// exampleGateway serves ../config.example.yaml as shipped (open mode, offline "demo").
func exampleGateway(t *testing.T) *gateway {
	t.Helper()
	cfg, err := config.Load("../config.example.yaml", nil)
	if err != nil {
		t.Fatalf("loading config.example.yaml: %v", err)
	}
	return startGatewayConfig(t, cfg, gatewayOptions{})
}

// TestMock_Quickstart runs the README quickstart requests against config.example.yaml.
func TestMock_Quickstart(t *testing.T) {
	t.Parallel() // nothing shared, no clock or environment of the process (#54)
	g := exampleGateway(t)

	t.Run("curl non-stream", func(t *testing.T) {
		r := g.chat("", `{"model":"demo","messages":[{"role":"user","content":"hello from agate"}]}`)
		if r.status != 200 {
			t.Fatalf("status %d: %s", r.status, r.body)
		}
		var c openai.ChatCompletion
		if err := json.Unmarshal(r.body, &c); err != nil {
			t.Fatal(err)
		}
		got := viewCompletion(&c)
		if !strings.HasPrefix(got.ID, "chatcmpl-") || got.Created == 0 {
			t.Errorf("id %q created %d", got.ID, got.Created)
		}
		got.ID, got.Created = "", 0
		want := completionView{Object: "chat.completion", Model: "demo",
			Choices: []choiceView{{Role: "assistant", Content: "hello from agate", FinishReason: "stop"}},
			Usage:   &usageView{Prompt: 3, Completion: 3, Total: 6}}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("completion (-want +got):\n%s", diff)
		}
	})

	t.Run("curl stream", func(t *testing.T) {
		r := g.chat("", `{"model":"demo","stream":true,"stream_options":{"include_usage":true},
       "messages":[{"role":"user","content":"hello from agate"}]}`)
		if r.status != 200 {
			t.Fatalf("status %d: %s", r.status, r.body)
		}
		checkChunkInvariants(t, r.body, "demo", true)
	})

	t.Run("sdk", func(t *testing.T) {
		client := g.client("unused-in-open-mode")
		c, err := client.Chat.Completions.New(context.Background(), userParams("demo", "hi there"))
		if err != nil {
			t.Fatal(err)
		}
		if got := c.Choices[0].Message.Content; got != "hi there" {
			t.Errorf("content = %q, want the echo %q", got, "hi there")
		}

		params := userParams("demo", "hello from agate")
		params.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
		s := client.Chat.Completions.NewStreaming(context.Background(), params)
		acc := openai.ChatCompletionAccumulator{}
		var deltas []string
		for s.Next() {
			ch := s.Current()
			acc.AddChunk(ch)
			if len(ch.Choices) > 0 && ch.Choices[0].Delta.Content != "" {
				deltas = append(deltas, ch.Choices[0].Delta.Content)
			}
		}
		if err := s.Err(); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]string{"hello", " from", " agate"}, deltas); diff != "" {
			t.Errorf("word-by-word deltas (-want +got):\n%s", diff)
		}
		got := viewCompletion(&acc.ChatCompletion)
		got.ID, got.Created, got.Object = "", 0, ""
		got.Usage = viewUsage(acc.Usage) // the accumulator copies usage without its JSON metadata
		want := completionView{Model: "demo",
			Choices: []choiceView{{Role: "assistant", Content: "hello from agate", FinishReason: "stop"}},
			Usage:   &usageView{Prompt: 3, Completion: 3, Total: 6}}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("accumulated stream (-want +got):\n%s", diff)
		}
	})
}

// TestMock_ToolCall: when the request carries tools and the user names one, the mock
// calls it, with arguments "{}".
func TestMock_ToolCall(t *testing.T) {
	t.Parallel() // nothing shared, no clock or environment of the process (#54)
	g := exampleGateway(t)
	client := g.client("")
	weather := openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{Name: "get_weather"})
	params := userParams("demo", "please call get_weather for Paris", secretTool(), weather)

	c, err := client.Chat.Completions.New(context.Background(), params)
	if err != nil {
		t.Fatal(err)
	}
	got := viewCompletion(c)
	got.ID, got.Created, got.Object, got.Usage = "", 0, "", nil
	want := completionView{Model: "demo", Choices: []choiceView{{Role: "assistant", FinishReason: "tool_calls",
		ToolCalls: []toolCallView{{ID: "call_mock_get_weather", Type: "function", Name: "get_weather", Arguments: "{}"}}}}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("non-stream tool call (-want +got):\n%s", diff)
	}

	s := client.Chat.Completions.NewStreaming(context.Background(), params)
	acc := openai.ChatCompletionAccumulator{}
	for s.Next() {
		acc.AddChunk(s.Current())
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	got = viewCompletion(&acc.ChatCompletion)
	got.ID, got.Created, got.Object, got.Usage = "", 0, "", nil
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("streamed tool call (-want +got):\n%s", diff)
	}

	r := g.chat("", rawBody(t, params, true))
	checkChunkInvariants(t, r.body, "demo", false)

	// tool_choice none: the mock answers in text even though a tool is named.
	params.ToolChoice = openai.ChatCompletionToolChoiceOptionUnionParam{OfAuto: openai.String("none")}
	c, err = client.Chat.Completions.New(context.Background(), params)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Choices[0].Message.ToolCalls) != 0 || c.Choices[0].FinishReason != "stop" {
		t.Errorf("tool_choice none: got %s", c.RawJSON())
	}
}
