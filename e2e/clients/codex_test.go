package clients

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agate-gateway/agate/internal/gatewaytest"
)

// Codex CLI (`codex exec`, OpenAI's coding agent, which speaks the Responses API with
// store: false and include reasoning.encrypted_content) pointed at the gateway as a custom
// model provider: a one-turn answer from the mock backend, and on fake upstreams of every
// wire a turn in which the model calls Codex's own exec_command tool and quotes its output.
// Codex 0.169 sends by default, besides its function tools, a "namespace" tool
// (multi_agent_v1, its multi-agent functions), the built-in web_search
// ({"type":"web_search","external_web_access":false} under its default sandbox, true with
// full access), prompt_cache_key and client_metadata.

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
	bin := gatewaytest.RequireCodex(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "note.txt"), []byte(noteContent+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ups := gatewaytest.Fleet(func(kind string) *gatewaytest.Fake { return newCodexUpstream(t, kind) })
	base := gatewaytest.StartYAML(t, gatewaytest.FleetClientYAML(ups), gatewaytest.Options{}).URL
	// flags is what a user adds to Codex's defaults for a backend kind.
	flags := func(kind string) []string {
		if kind == "responses" {
			return nil
		}
		return gatewaytest.CodexNoWebSearch()
	}
	// since returns the bodies u received after the first n.
	since := func(u *gatewaytest.Fake, n int) []string { return u.Bodies()[n:] }
	count := func(u *gatewaytest.Fake) int { return len(u.Bodies()) }
	t.Run("mock/one turn", func(t *testing.T) {
		if got := gatewaytest.RunCodex(t, bin, base, "m-mock", dir, "say hello", flags("mock")...); !strings.Contains(got, "say hello") {
			t.Errorf("last message %q, want the mock's echo of the prompt", got)
		}
	})
	for _, k := range gatewaytest.Kinds {
		t.Run(k+"/exec_command", func(t *testing.T) {
			u := ups[k]
			before := count(u)
			got := gatewaytest.RunCodex(t, bin, base, "m-"+k, dir, "read the note", flags(k)...)
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
			got := gatewaytest.RunCodex(t, bin, base, "m-"+k, dir, "close the agent", flags(k)...)
			if n := len(since(u, before)); !strings.Contains(got, "agent closed") || n != 2 {
				t.Errorf("last message %q after %d upstream requests, want the answer after the close_agent call's output", got, n)
			}
		})
	}
	// Codex's default web_search, on a translated backend: a 400 naming it, which Codex shows.
	t.Run("anthropic/web_search by default", func(t *testing.T) {
		u := ups["anthropic"]
		before := count(u)
		_, out, err := gatewaytest.ExecCodex(t, bin, base, "m-anthropic", dir, "read the note")
		if err == nil || !strings.Contains(string(out), `the built-in tool \"web_search\" is served only by a responses backend`) {
			t.Errorf("codex %v, want it to fail with the gateway's 400 naming web_search:\n%s", err, out)
		}
		if n := len(since(u, before)); n != 0 {
			t.Errorf("the upstream got %d requests", n)
		}
	})
}
