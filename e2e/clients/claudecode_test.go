package clients

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agate-gateway/agate/internal/gatewaytest"
)

// Claude Code headless (`claude -p … --output-format json`) with ANTHROPIC_BASE_URL at the
// gateway, through the mock backend and fake upstreams of every wire: a one-turn answer,
// and a turn in which the model calls Claude Code's own Read tool and gets its result.

// runClaude runs one headless prompt against the gateway at base with model, in a
// throw-away HOME and working directory.
func runClaude(t *testing.T, bin, base, model, dir, prompt string) gatewaytest.ClaudeResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "-p", prompt, "--model", model, "--output-format", "json",
		"--allowedTools", "Read", "--max-turns", "4")
	cmd.Dir = dir
	cmd.Env = gatewaytest.ClaudeEnv(dir, base, "client-key", model)
	out, err := cmd.Output()
	if err != nil {
		stderr := ""
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("claude: %v\nstdout %s\nstderr %s", err, out, stderr)
	}
	var r gatewaytest.ClaudeResult
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("claude output: %v\n%s", err, out)
	}
	return r
}

const noteContent = "NOTE-4242"

// newCodeUpstream is a fake upstream of one wire that answers by what the request holds:
// after the note's content came back from Read, it quotes it; asked to read the note, it
// calls Read; otherwise it greets.
func newCodeUpstream(t *testing.T, kind, note string) *gatewaytest.Fake {
	return gatewaytest.NewFakeFunc(t, kind, func(body string) gatewaytest.Turn {
		var turn gatewaytest.Turn
		switch {
		case strings.Contains(body, noteContent):
			turn.Text = "the note says " + noteContent
		case strings.Contains(body, "read the note"):
			args, _ := json.Marshal(map[string]string{"file_path": note})
			turn.Calls = []gatewaytest.Call{{Name: "Read", Args: string(args)}}
		default:
			turn.Text = "hi from " + kind
		}
		return turn
	})
}

func TestClaudeCode_Headless(t *testing.T) {
	t.Parallel() // its own gateway, fakes and claude processes (HOME each) (#54)
	bin := gatewaytest.RequireClaude(t)
	dir := t.TempDir()
	note := filepath.Join(dir, "note.txt")
	if err := os.WriteFile(note, []byte(noteContent+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	fakes := gatewaytest.Fleet(func(kind string) *gatewaytest.Fake { return newCodeUpstream(t, kind, note) })
	base := gatewaytest.StartYAML(t, gatewaytest.FleetClientYAML(fakes), gatewaytest.Options{}).URL
	for _, wire := range append([]string{"mock"}, gatewaytest.Kinds...) {
		if wire == "mock" {
			t.Run("mock/one turn", func(t *testing.T) {
				r := runClaude(t, bin, base, "m-mock", dir, "say hi")
				if want := "say hi"; r.IsError || !strings.Contains(r.Result, want) { // the mock echoes the prompt
					t.Errorf("result %+v, want it to hold %q", r, want)
				}
			})
			// The mock calls a tool the prompt names, with arguments {}: Claude Code's Read
			// answers with an is_error tool_result, which the mock quotes.
			t.Run("mock/Read tool", func(t *testing.T) {
				r := runClaude(t, bin, base, "m-mock", dir, "call Read")
				if !strings.Contains(r.Result, "Tool results:") || r.NumTurns < 2 {
					t.Errorf("result %+v", r)
				}
			})
			continue
		}
		// On a provider's wire the Read run ends in a plain text answer from that wire (the
		// fake's quote of the note): a separate one-turn run there only repeated it, with one
		// more claude process of about 1.7 s of CPU (#54).
		t.Run(wire+"/Read tool", func(t *testing.T) {
			r := runClaude(t, bin, base, "m-"+wire, dir, "read the note")
			if r.IsError || !strings.Contains(r.Result, "the note says "+noteContent) || r.NumTurns < 2 {
				t.Errorf("result %+v", r)
			}
		})
	}
}
