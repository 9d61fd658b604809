package proxy_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/agate-gateway/agate/internal/gatewaytest"
	"github.com/agate-gateway/agate/proxy"
)

// TestChatPassthroughContinuation_Prefill: continuation: prefill on an openai backend
// continues a chat passthrough stream by prefill (continuation_chat.go): the client's
// body with its text as a final assistant message and vLLM's continue_final_message
// true, add_generation_prompt false. The fake vLLM (choppy kind vllm) continues such a
// message and answers anew otherwise, as vLLM does; the fake OpenAI refuses the member
// it does not know with its 400, which is followed by a restart the client never hears
// of. openai-go gets the whole answer once, one role chunk, one finish and the usage of
// every attempt.
func TestChatPassthroughContinuation_Prefill(t *testing.T) {
	for _, tt := range []struct {
		name, kind, extra string
		plan              []fault
		prefills          []string // the prefill of each request after the first ("" none)
		outcomes          map[string]int
	}{
		{"vllm cut", "vllm", ", continuation: prefill", []fault{{3, "cut"}}, []string{"The quick brown"}, map[string]int{"continued": 1}},
		{"vllm error chunk", "vllm", ", continuation: prefill", []fault{{4, "error"}}, []string{"The quick brown fox"}, map[string]int{"continued": 1}},
		{"vllm stall", "vllm", ", continuation: prefill", []fault{{5, "stall"}}, []string{"The quick brown fox jumps"}, map[string]int{"continued": 1}},
		{"vllm cut late, then cut again", "vllm", ", continuation: prefill", []fault{{3, "cut"}, {4, "cut"}},
			[]string{"The quick brown", "The quick brown fox jumps over the"}, map[string]int{"continued": 1}},
		{"openai refuses the prefill", "openai", ", continuation: prefill", []fault{{3, "cut"}}, []string{"The quick brown", ""},
			map[string]int{"refused": 1, "continued": 1}},
		{"vllm by default: restart", "vllm", "", []fault{{3, "cut"}}, []string{""}, map[string]int{"continued": 1}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			up := newChoppy(t, tt.kind, tt.plan...)
			g := gatewaytest.StartYAML(t, fmt.Sprintf(`server: {listen: "127.0.0.1:0"}
backends:
  up: {type: openai, base_url: %q, api_key: upstream-secret, retries: {max: 2, base_delay: 1ms, max_delay: 2ms}, timeouts: {stream_idle: 100ms}}
models:
  m: {backend: up, upstream_model: fake-model%s}
`, up.baseURL(), tt.extra), gatewaytest.Options{Runtime: proxy.TestRuntime})
			start := time.Now()
			a := askChat(t, g)
			if a.errorText != "" || a.text != contAnswer {
				t.Fatalf("answer %q, error %q; want the whole answer once", a.text, a.errorText)
			}
			t.Logf("whole answer after %v", time.Since(start).Round(time.Millisecond))
			if a.starts != 1 || a.finishes != 1 {
				t.Errorf("%d role chunks and %d finishes; want one each", a.starts, a.finishes)
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
				flags := gjson.Get(b, "continue_final_message").Exists() || gjson.Get(b, "add_generation_prompt").Exists()
				if want != "" && (!gjson.Get(b, "continue_final_message").Bool() || gjson.Get(b, "add_generation_prompt").Raw != "false") || want == "" && flags {
					t.Errorf("request %d: %s", i+2, b)
				}
				if gjson.Get(b, "model").Str != "fake-model" || !gjson.Get(b, "stream").Bool() || !strings.Contains(b, `"say it"`) {
					t.Errorf("request %d is not the client's: %s", i+2, b)
				}
			}
			for o, n := range tt.outcomes {
				waitFor(t, "outcome "+o, func() bool { return continuations(g, o) == n })
			}
			waitFor(t, "the usage charged", func() bool { p, o := charged(g); return a.prompt == p && a.output == o })
		})
	}
}
