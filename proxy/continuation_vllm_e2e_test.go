package proxy_test

import (
	"fmt"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/agate-gateway/agate/internal/gatewaytest"
	"github.com/agate-gateway/agate/proxy"
)

// TestTranslatedContinuation_VLLMPrefill: continuation: prefill on an openai backend
// continues a translated stream (a Messages or Responses client's) as the chat
// passthrough does (continuation_chat.go): the request with the client's text as a final
// assistant message and vLLM's "continue_final_message": true, "add_generation_prompt":
// false. The fake vLLM (choppy kind vllm) continues such a message only with both
// members, and answers anew otherwise, which the client would see twice; the fake OpenAI
// refuses the member it does not know with its 400, which is followed by a restart the
// client never hears of. The SDK client gets the whole answer once, one start, one
// finish and the usage of every attempt.
func TestTranslatedContinuation_VLLMPrefill(t *testing.T) {
	for _, tt := range []struct {
		name, client, kind string
		plan               []fault
		prefills           []string // the prefill of each request after the first ("" none: a restart)
		outcomes           map[string]int
	}{
		{"messages, vllm cut", "messages", "vllm", []fault{{3, "cut"}}, []string{"The quick brown"}, map[string]int{"continued": 1}},
		{"messages, vllm stall", "messages", "vllm", []fault{{5, "stall"}}, []string{"The quick brown fox jumps"}, map[string]int{"continued": 1}},
		{"messages, vllm cut twice", "messages", "vllm", []fault{{3, "cut"}, {4, "cut"}},
			[]string{"The quick brown", "The quick brown fox jumps over the"}, map[string]int{"continued": 1}},
		{"messages, openai refuses the prefill", "messages", "openai", []fault{{3, "cut"}}, []string{"The quick brown", ""},
			map[string]int{"refused": 1, "continued": 1}},
		{"responses, vllm error chunk", "responses", "vllm", []fault{{4, "error"}}, []string{"The quick brown fox"}, map[string]int{"continued": 1}},
		{"responses, openai refuses the prefill", "responses", "openai", []fault{{3, "cut"}}, []string{"The quick brown", ""},
			map[string]int{"refused": 1, "continued": 1}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			up := newChoppy(t, tt.kind, tt.plan...)
			g := gatewaytest.StartYAML(t, fmt.Sprintf(`server: {listen: "127.0.0.1:0"}
backends:
  up: {type: openai, base_url: %q, api_key: upstream-secret, retries: {max: 2, base_delay: 1ms, max_delay: 2ms}, timeouts: {stream_idle: 100ms}}
models:
  m: {backend: up, upstream_model: fake-model, continuation: prefill}
`, up.baseURL()), gatewaytest.Options{Runtime: proxy.TestRuntime})
			a := askers[tt.client](t, g)
			if a.errorText != "" || a.text != contAnswer {
				t.Fatalf("answer %q, error %q; want the whole answer once", a.text, a.errorText)
			}
			if a.starts != 1 || a.finishes != 1 {
				t.Errorf("%d starts and %d finishes; want one each", a.starts, a.finishes)
			}
			bodies := up.requests()
			if len(bodies) != 1+len(tt.prefills) {
				t.Fatalf("%d upstream requests; want %d", len(bodies), 1+len(tt.prefills))
			}
			for i, want := range tt.prefills {
				b := bodies[i+1]
				last := gjson.Get(b, "messages.@reverse.0")
				got := ""
				if last.Get("role").Str == "assistant" {
					got = last.Get("content").Str
				}
				if got != want {
					t.Errorf("request %d: prefill %q; want %q", i+2, got, want)
				}
				cont, gen := gjson.Get(b, "continue_final_message"), gjson.Get(b, "add_generation_prompt")
				if want != "" && (cont.Raw != "true" || gen.Raw != "false") || want == "" && (cont.Exists() || gen.Exists()) {
					t.Errorf("request %d: continue_final_message %s, add_generation_prompt %s: %s", i+2, cont.Raw, gen.Raw, b)
				}
				if gjson.Get(b, "model").Str != "fake-model" || !gjson.Get(b, "stream").Bool() ||
					gjson.Get(b, "messages.0.content").Str != "say it" && gjson.Get(b, "messages.0.content.0.text").Str != "say it" {
					t.Errorf("request %d is not the client's: %s", i+2, b)
				}
			}
			if first := bodies[0]; gjson.Get(first, "continue_final_message").Exists() || gjson.Get(first, "add_generation_prompt").Exists() {
				t.Errorf("the first request asks to continue: %s", first)
			}
			for o, n := range tt.outcomes {
				waitFor(t, "outcome "+o, func() bool { return continuations(g, o) == n })
			}
			waitFor(t, "the usage charged", func() bool { p, o := charged(g); return a.prompt == p && a.output == o })
		})
	}
}
