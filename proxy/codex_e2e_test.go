package proxy_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/agate-gateway/agate/internal/gatewaytest"
	"github.com/agate-gateway/agate/translate"
)

// Codex CLI (`codex exec`) against the gateway for a feature of the gateway's own: the
// reasoning state Codex sends back. Codex's runs of every wire, over HTTP and the
// WebSocket, are e2e/clients' tests.

// TestCodex_ReasoningRoundTrip: Codex keeps no state on the server (store: false) and asks
// for reasoning.encrypted_content; through the gateway, the recorded thinking blocks of
// Claude and thought signature of Gemini 3 reach the upstream again on Codex's next
// request, exactly, from the reasoning items Codex sent back.
func TestCodex_ReasoningRoundTrip(t *testing.T) {
	t.Parallel() // its own gateway, fake and codex process (#54)
	bin := gatewaytest.RequireCodex(t)
	tests := []struct {
		kind  string
		turn1 func(t *testing.T) []byte
		check func(t *testing.T, turn1 []byte, body string)
	}{
		{"anthropic", func(t *testing.T) []byte {
			return goldenSection(t, "anthropic", "stream-thinking-tool-use.txtar", "upstream.sse")
		}, func(t *testing.T, turn1 []byte, body string) {
			checkAnthropicBlocks(t, anthropicBlocks(t, turn1, true), body)
		}},
		{"gemini", func(t *testing.T) []byte {
			return reframe(recordedFixture(t, "gemini/vercel-chunks/google-tool-call-gemini3.chunks.txt"), false)
		}, func(t *testing.T, turn1 []byte, body string) {
			first, _, _ := strings.Cut(string(turn1), "\r\n")
			want := gjson.Get(strings.TrimPrefix(first, "data: "), "candidates.0.content.parts.0.thoughtSignature").Str
			var got []string
			gjson.Get(body, "contents.#.parts.#.thoughtSignature").ForEach(func(_, v gjson.Result) bool {
				v.ForEach(func(_, s gjson.Result) bool { got = append(got, s.Str); return true })
				return true
			})
			if want == "" || len(got) != 1 || got[0] != want {
				t.Errorf("thoughtSignatures sent %.60q, want the recorded %.40q...", got, want)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.kind, func(t *testing.T) {
			up := newReplayUpstream(t)
			turn1 := tt.turn1(t)
			answer := gatewaytest.RenderStream(tt.kind, gatewaytest.Turn{Text: "done"}, 1)
			up.push(replay{200, "text/event-stream", turn1}, replay{200, "text/event-stream", []byte(answer)})
			base := gatewaytest.StartYAML(t, fmt.Sprintf(`backends:
  up: {type: %s, base_url: %q, api_key: upstream-secret, retries: {max: 0}}
models:
  m: {backend: up, upstream_model: %s}
keys:
  client: {key: client-key, models: ["*"]}
`, tt.kind, up.srv.URL, map[string]string{"anthropic": "claude-sonnet-4-5", "gemini": "gemini-3-pro-preview"}[tt.kind]), gatewaytest.Options{}).URL
			dir := t.TempDir()
			if got := gatewaytest.RunCodex(t, bin, base, "m", dir, "what is the weather?", append([]string{"-c", `model_reasoning_effort="high"`}, gatewaytest.CodexNoWebSearch()...)...); !strings.Contains(got, "done") {
				t.Errorf("last message %q", got)
			}
			seen := up.seen()
			if len(seen) != 2 {
				t.Fatalf("upstream saw %d requests, want 2", len(seen))
			}
			tt.check(t, turn1, seen[1].body)
			if strings.Contains(seen[1].body, translate.SealedPrefix) || strings.Contains(seen[1].body, translate.CarrySep) {
				t.Errorf("turn 2 leaks the gateway's encoding upstream:\n%.1500s", seen[1].body)
			}
		})
	}
}
