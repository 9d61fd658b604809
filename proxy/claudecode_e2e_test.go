package proxy_test

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
	"github.com/agate-gateway/agate/proxy"
)

// Claude Code headless (`claude -p … --output-format json`) with ANTHROPIC_BASE_URL at the
// gateway, through the mock backend and fake upstreams of every wire: a one-turn answer,
// and a turn in which the model calls Claude Code's own Read tool and gets its result.

// claudeBinary returns the claude executable: skipped when missing, fatal under CI=true
// (.ci/run installs @anthropic-ai/claude-code).
func claudeBinary(t *testing.T) string {
	return gatewaytest.Require(t, "claude", "npm install -g @anthropic-ai/claude-code@2.1.330")
}

// claudeResult is what the test reads of --output-format json.
type claudeResult struct {
	Result   string `json:"result"`
	IsError  bool   `json:"is_error"`
	NumTurns int    `json:"num_turns"`
}

// runClaude runs one headless prompt against the gateway at base with model, in a
// throw-away HOME and working directory.
func runClaude(t *testing.T, bin, base, model, dir, prompt string) claudeResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "-p", prompt, "--model", model, "--output-format", "json",
		"--allowedTools", "Read", "--max-turns", "4")
	cmd.Dir = dir
	cmd.Env = []string{"HOME=" + dir, "PATH=" + os.Getenv("PATH"), "ANTHROPIC_BASE_URL=" + base,
		"ANTHROPIC_API_KEY=client-key", "ANTHROPIC_DEFAULT_HAIKU_MODEL=" + model, "ANTHROPIC_SMALL_FAST_MODEL=" + model,
		"DISABLE_TELEMETRY=1", "DISABLE_AUTOUPDATER=1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_ERROR_REPORTING=1"}
	out, err := cmd.Output()
	if err != nil {
		stderr := ""
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("claude: %v\nstdout %s\nstderr %s", err, out, stderr)
	}
	var r claudeResult
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
	bin := claudeBinary(t)
	dir := t.TempDir()
	note := filepath.Join(dir, "note.txt")
	if err := os.WriteFile(note, []byte(noteContent+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	fakes := gatewaytest.Fleet(func(kind string) *gatewaytest.Fake { return newCodeUpstream(t, kind, note) })
	base := gatewaytest.StartYAML(t, fleetConfig(fakes), gatewaytest.Options{Runtime: proxy.TestRuntime}).URL
	for _, wire := range wires {
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
