package proxy_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/openai/openai-go/v3"

	"github.com/agate-gateway/agate/internal/gatewaytest"
	"github.com/agate-gateway/agate/proxy"
)

// sdkToken is a ChatCompletionTokenLogprob as the SDK parsed it, reduced for comparison.
type sdkToken struct {
	Token   string
	Logprob float64
	Bytes   string // the bytes, as a string
	Top     []string
}

func sdkTokens(lp []openai.ChatCompletionTokenLogprob) []sdkToken {
	var out []sdkToken
	for _, t := range lp {
		b := make([]byte, len(t.Bytes))
		for i, v := range t.Bytes {
			b[i] = byte(v)
		}
		st := sdkToken{Token: t.Token, Logprob: t.Logprob, Bytes: string(b)}
		for _, top := range t.TopLogprobs {
			st.Top = append(st.Top, top.Token)
		}
		out = append(out, st)
	}
	return out
}

func logprobParams() openai.ChatCompletionNewParams {
	return openai.ChatCompletionNewParams{
		Model:       "client-model",
		Messages:    []openai.ChatCompletionMessageParamUnion{openai.UserMessage("say hello")},
		Logprobs:    openai.Bool(true),
		TopLogprobs: openai.Int(2),
	}
}

// TestLogprobs_GeminiThroughSDK: a client asking a Gemini backend for logprobs gets them,
// parsed by the OpenAI SDK, on the content chunks of a stream (and accumulated by its
// accumulator) and in the completion.
func TestLogprobs_GeminiThroughSDK(t *testing.T) {
	t.Parallel() // nothing shared, no clock or environment of the process (#54)
	want := []sdkToken{
		{"Hello", -0.0012, "Hello", []string{"Hello", "Hi"}},
		{",", -0.25, ",", []string{",", " there"}},
		{" wörld", -1.4, " wörld", []string{" world", " word"}},
		{"!\n", -0.031, "!\n", []string{"!\n", "."}},
	}
	g := startGatewayFor(t, "gemini")
	c := g.client()

	t.Run("stream", func(t *testing.T) {
		g.up.push(replay{200, "text/event-stream", goldenSection(t, "gemini", "logprobs.constructed.txtar", "upstream.sse")})
		s := c.Chat.Completions.NewStreaming(context.Background(), logprobParams())
		var acc openai.ChatCompletionAccumulator
		var perChunk []openai.ChatCompletionTokenLogprob
		for s.Next() {
			ch := s.Current()
			acc.AddChunk(ch)
			if len(ch.Choices) == 0 {
				continue
			}
			lp := ch.Choices[0].Logprobs
			if len(lp.Content) > 0 && ch.Choices[0].Delta.Content == "" {
				t.Errorf("logprobs on a chunk without content: %s", ch.RawJSON())
			}
			perChunk = append(perChunk, lp.Content...)
		}
		if err := s.Err(); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, sdkTokens(perChunk)); diff != "" {
			t.Errorf("chunk logprobs (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(want, sdkTokens(acc.Choices[0].Logprobs.Content)); diff != "" {
			t.Errorf("accumulated logprobs (-want +got):\n%s", diff)
		}
		seen := g.up.seen()
		if len(seen) != 1 || !strings.Contains(seen[0].body, `"responseLogprobs":true`) || !strings.Contains(seen[0].body, `"logprobs":2`) {
			t.Errorf("upstream request does not ask for logprobs: %v", seen)
		}
	})
	t.Run("json", func(t *testing.T) {
		g.up.push(replay{200, "application/json", goldenSection(t, "gemini", "logprobs.constructed.txtar", "upstream.json")})
		resp, err := c.Chat.Completions.New(context.Background(), logprobParams())
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, sdkTokens(resp.Choices[0].Logprobs.Content)); diff != "" {
			t.Errorf("completion logprobs (-want +got):\n%s", diff)
		}
	})
}

// TestLogprobs_OpenAIUpstreamThroughToolLoop: with server tools the gateway decodes and
// re-encodes an OpenAI-compatible upstream's stream instead of forwarding it; the
// upstream's logprobs must survive that.
func TestLogprobs_OpenAIUpstreamThroughToolLoop(t *testing.T) {
	t.Parallel() // nothing shared, no clock or environment of the process (#54)
	up := newReplayUpstream(t)
	y := fmt.Sprintf(`server: {listen: "127.0.0.1:0"}
backends:
  up: {type: openai, base_url: %q, api_key: upstream-secret, retries: {max: 0}}
models:
  client-model: {backend: up, upstream_model: gpt-4o-mini}
keys:
  agent: {key: agent-key, models: ["*"], tools: [clock]}
tools:
  clock: {type: builtin, name: time_now}
`, up.srv.URL)
	gw := gatewaytest.StartYAML(t, y, gatewaytest.Options{Runtime: proxy.TestRuntime, Tools: true})
	client := gatewaytest.OpenAI(gw.V1(), "agent-key")

	chunk := func(delta, logprobs, finish string) string {
		return `data: {"id":"chatcmpl-up","object":"chat.completion.chunk","created":1,"model":"gpt-4o-mini","choices":[{"index":0,"delta":` + delta + `,"logprobs":` + logprobs + `,"finish_reason":` + finish + `}]}` + "\n\n"
	}
	upstream := chunk(`{"role":"assistant","content":""}`, `{"content":[],"refusal":null}`, "null") +
		chunk(`{"content":"Hi"}`, `{"content":[{"token":"Hi","logprob":-0.01,"bytes":[72,105],"top_logprobs":[{"token":"Hi","logprob":-0.01,"bytes":[72,105]},{"token":"Hey","logprob":-4.5,"bytes":[72,101,121]}]}],"refusal":null}`, "null") +
		chunk(`{"content":"你"}`, `{"content":[{"token":"bytes:\\xe4\\xbd","logprob":-0.5,"bytes":[228,189],"top_logprobs":[]},{"token":"bytes:\\xa0","logprob":-0.25,"bytes":[160],"top_logprobs":[]}],"refusal":null}`, "null") +
		chunk(`{}`, `null`, `"stop"`) +
		`data: {"id":"chatcmpl-up","object":"chat.completion.chunk","created":1,"model":"gpt-4o-mini","choices":[],"usage":{"prompt_tokens":3,"completion_tokens":3,"total_tokens":6}}` + "\n\n" +
		"data: [DONE]\n\n"
	up.push(replay{200, "text/event-stream", []byte(upstream)})

	s := client.Chat.Completions.NewStreaming(context.Background(), logprobParams())
	var acc openai.ChatCompletionAccumulator
	for s.Next() {
		acc.AddChunk(s.Current())
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	seen := up.seen()
	if len(seen) != 1 || !strings.Contains(seen[0].body, `"name":"clock"`) {
		t.Fatalf("the request did not go through the tool loop (no server tool upstream): %v", seen)
	}
	want := []sdkToken{
		{"Hi", -0.01, "Hi", []string{"Hi", "Hey"}},
		{`bytes:\xe4\xbd`, -0.5, "\xe4\xbd", nil},
		{`bytes:\xa0`, -0.25, "\xa0", nil},
	}
	if diff := cmp.Diff(want, sdkTokens(acc.Choices[0].Logprobs.Content)); diff != "" {
		t.Errorf("logprobs through the tool loop (-want +got):\n%s", diff)
	}
	if got := acc.Choices[0].Message.Content; got != "Hi你" {
		t.Errorf("content %q", got)
	}
}
