package proxy_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/agate-gateway/agate/internal/gatewaytest"
	"github.com/agate-gateway/agate/proxy"
	"github.com/agate-gateway/agate/translate"
)

// Codex CLI (`codex exec`, OpenAI's coding agent, which speaks the Responses API with
// store: false and include reasoning.encrypted_content) pointed at the gateway as a custom
// model provider: a one-turn answer from the mock backend, and on fake upstreams of every
// wire a turn in which the model calls Codex's own exec_command tool and quotes its output.
// Codex 0.169 sends by default, besides its function tools, a "namespace" tool
// (multi_agent_v1, its multi-agent functions), the built-in web_search
// ({"type":"web_search","external_web_access":false} under its default sandbox, true with
// full access), prompt_cache_key and client_metadata.

// codexBinary returns the codex executable: skipped when missing, fatal under CI=true
// (.ci/run installs @openai/codex, whose platform package ships the binary).
func codexBinary(t *testing.T) string {
	return gatewaytest.Require(t, "codex", "npm install -g @openai/codex@0.169.0")
}

// codexConfig is Codex's config.toml for the gateway at base (its /v1 URL).
const codexConfig = `model_provider = "agate"

[model_providers.agate]
name = "Agate"
base_url = %q
env_key = "AGATE_KEY"
wire_api = "responses"
`

// codexNoWebSearch is the one setting a user of a translated backend adds to Codex's
// defaults: its built-in web_search is served only by a responses backend.
var codexNoWebSearch = []string{"-c", `web_search="disabled"`}

// runCodex runs `codex exec prompt` against the gateway at base with model, in dir (its
// CODEX_HOME and HOME there too), with Codex's defaults and the provider config only, plus
// extra flags; it returns the agent's last message.
func runCodex(t *testing.T, bin, base, model, dir, prompt string, extra ...string) string {
	t.Helper()
	got, out, err := execCodex(t, bin, base, model, dir, prompt, extra...)
	if err != nil {
		t.Fatalf("codex: %v\n%s", err, out)
	}
	return got
}

// execCodex is runCodex returning codex's failure and output instead of failing t.
func execCodex(t *testing.T, bin, base, model, dir, prompt string, extra ...string) (last string, out []byte, err error) {
	t.Helper()
	home := filepath.Join(dir, "codex-home")
	if err := os.MkdirAll(home, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(fmt.Sprintf(codexConfig, base+"/v1")), 0o600); err != nil {
		t.Fatal(err)
	}
	lastFile := filepath.Join(dir, "last-message.txt")
	os.Remove(lastFile)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// The sandbox is bypassed because the commands run are the fake upstream's own (cat of
	// a file in dir) and bubblewrap needs user namespaces a container may not have.
	cmd := exec.CommandContext(ctx, bin, "exec", "--skip-git-repo-check", "--ephemeral", "-m", model,
		"--dangerously-bypass-approvals-and-sandbox", "-o", lastFile)
	cmd.Args = append(append(cmd.Args, extra...), prompt)
	cmd.Dir = dir
	cmd.Env = []string{"HOME=" + dir, "CODEX_HOME=" + home, "PATH=" + os.Getenv("PATH"), "AGATE_KEY=client-key"}
	cmd.WaitDelay = 5 * time.Second // a killed codex's helpers may hold its output open
	if out, err = cmd.CombinedOutput(); err != nil {
		return "", out, err
	}
	b, err := os.ReadFile(lastFile)
	if err != nil {
		return "", out, fmt.Errorf("codex wrote no last message: %w", err)
	}
	return string(b), out, nil
}

// codexFlatClose is the upstream name of Codex's multi_agent_v1 close_agent function.
const codexFlatClose = "multi_agent_v1__close_agent"

// newCodexUpstream is a fake upstream of one wire that answers by what the request holds:
// after the note's content came back from exec_command, it quotes it; asked to read the
// note, it calls exec_command; asked to close an agent, it calls the close_agent function
// of Codex's multi_agent_v1 namespace tool by the flat name the gateway gives it, and
// once that call is in the history (the name's second occurrence) it answers; otherwise it
// greets. It records the request bodies.
func newCodexUpstream(t *testing.T, kind string) *gatewaytest.Fake {
	return gatewaytest.NewFakeFunc(t, kind, func(body string) gatewaytest.Turn {
		var turn gatewaytest.Turn
		switch {
		case strings.Contains(body, "unsupported call"):
			// Codex did not route the call to its function: end the turn (it would retry).
			turn.Text = "codex did not know the call"
		case strings.Contains(body, "close the agent") && strings.Count(body, `"`+codexFlatClose+`"`) >= 2:
			turn.Text = "agent closed"
		case strings.Contains(body, "close the agent"):
			turn.Calls = []gatewaytest.Call{{Name: codexFlatClose, Args: `{"target":"agent-7"}`}}
		case strings.Contains(body, noteContent):
			turn.Text = "the note says " + noteContent
		case strings.Contains(body, "read the note"):
			args, _ := json.Marshal(map[string]string{"cmd": "cat note.txt"})
			turn.Calls = []gatewaytest.Call{{Name: "exec_command", Args: string(args)}}
		default:
			turn.Text = "hi from " + kind
		}
		return turn
	})
}

// TestCodex_Exec: Codex with its defaults and the provider config only: on a responses
// backend as it is; on a translated backend (mock, anthropic, gemini, openai chat) with
// -c web_search="disabled" only, since its default web_search is a 400 there (a subtest
// pins that Codex shows that error). Its namespace tool, prompt_cache_key and
// client_metadata need no flag and no drop_unsupported_params; a call of a namespaced
// function makes the round trip on every translated wire.
func TestCodex_Exec(t *testing.T) {
	t.Parallel() // its own gateway, fakes and codex processes (CODEX_HOME each) (#54)
	bin := codexBinary(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "note.txt"), []byte(noteContent+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ups := gatewaytest.Fleet(func(kind string) *gatewaytest.Fake { return newCodexUpstream(t, kind) })
	base := gatewaytest.StartYAML(t, fleetConfig(ups), gatewaytest.Options{Runtime: proxy.TestRuntime}).URL
	// flags is what a user adds to Codex's defaults for a backend kind.
	flags := func(kind string) []string {
		if kind == "responses" {
			return nil
		}
		return codexNoWebSearch
	}
	// since returns the bodies u received after the first n.
	since := func(u *gatewaytest.Fake, n int) []string { return u.Bodies()[n:] }
	count := func(u *gatewaytest.Fake) int { return len(u.Bodies()) }
	t.Run("mock/one turn", func(t *testing.T) {
		if got := runCodex(t, bin, base, "m-mock", dir, "say hello", flags("mock")...); !strings.Contains(got, "say hello") {
			t.Errorf("last message %q, want the mock's echo of the prompt", got)
		}
	})
	for _, k := range gatewaytest.Kinds {
		t.Run(k+"/exec_command", func(t *testing.T) {
			u := ups[k]
			before := count(u)
			got := runCodex(t, bin, base, "m-"+k, dir, "read the note", flags(k)...)
			bodies := since(u, before)
			// The call, then the answer to its output: two upstream requests.
			if n := len(bodies); !strings.Contains(got, "the note says "+noteContent) || n != 2 {
				t.Errorf("last message %q after %d upstream requests, want the note quoted after 2", got, n)
			}
			if k == "responses" {
				return
			}
			// What a translated upstream gets of Codex's defaults: the namespace's functions
			// under their flat names, the cache key only where the API has it, never
			// client_metadata.
			for _, b := range bodies {
				if !strings.Contains(b, `"`+codexFlatClose+`"`) || strings.Contains(b, "x-codex-installation-id") ||
					strings.Contains(b, `"prompt_cache_key"`) != (k == "openai") {
					t.Errorf("upstream body:\n%.3000s", b)
				}
			}
		})
	}
	for _, k := range []string{"anthropic", "gemini", "openai"} {
		t.Run(k+"/namespace call", func(t *testing.T) {
			u := ups[k]
			before := count(u)
			got := runCodex(t, bin, base, "m-"+k, dir, "close the agent", flags(k)...)
			if n := len(since(u, before)); !strings.Contains(got, "agent closed") || n != 2 {
				t.Errorf("last message %q after %d upstream requests, want the answer after the close_agent call's output", got, n)
			}
		})
	}
	// Codex's default web_search, on a translated backend: a 400 naming it, which Codex shows.
	t.Run("anthropic/web_search by default", func(t *testing.T) {
		u := ups["anthropic"]
		before := count(u)
		_, out, err := execCodex(t, bin, base, "m-anthropic", dir, "read the note")
		if err == nil || !strings.Contains(string(out), `the built-in tool \"web_search\" is served only by a responses backend`) {
			t.Errorf("codex %v, want it to fail with the gateway's 400 naming web_search:\n%s", err, out)
		}
		if n := len(since(u, before)); n != 0 {
			t.Errorf("the upstream got %d requests", n)
		}
	})
}

// TestCodex_ReasoningRoundTrip: Codex keeps no state on the server (store: false) and asks
// for reasoning.encrypted_content; through the gateway, the recorded thinking blocks of
// Claude and thought signature of Gemini 3 reach the upstream again on Codex's next
// request, exactly, from the reasoning items Codex sent back.
func TestCodex_ReasoningRoundTrip(t *testing.T) {
	t.Parallel() // its own gateway, fake and codex process (#54)
	bin := codexBinary(t)
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
`, tt.kind, up.srv.URL, map[string]string{"anthropic": "claude-sonnet-4-5", "gemini": "gemini-3-pro-preview"}[tt.kind]), gatewaytest.Options{Runtime: proxy.TestRuntime}).URL
			dir := t.TempDir()
			if got := runCodex(t, bin, base, "m", dir, "what is the weather?", append([]string{"-c", `model_reasoning_effort="high"`}, codexNoWebSearch...)...); !strings.Contains(got, "done") {
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
