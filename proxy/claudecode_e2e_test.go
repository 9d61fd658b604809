package proxy_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// Claude Code headless (`claude -p … --output-format json`) with ANTHROPIC_BASE_URL at the
// gateway, through the mock backend and fake upstreams of every wire: a one-turn answer,
// and a turn in which the model calls Claude Code's own Read tool and gets its result.

// claudeBinary returns the claude executable: skipped when missing, fatal under CI=true
// (.ci/run installs @anthropic-ai/claude-code).
func claudeBinary(t *testing.T) string {
	if p, err := exec.LookPath("claude"); err == nil {
		return p
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("claude is not on PATH; .ci/run installs @anthropic-ai/claude-code")
	}
	t.Skip("claude not installed (npm install -g @anthropic-ai/claude-code@2.1.330)")
	return ""
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

// codeUpstream is a fake upstream of one wire that answers by what the request holds:
// after the note's content came back from Read, it quotes it; asked to read the note, it
// calls Read; otherwise it greets.
type codeUpstream struct {
	kind, note string
	srv        *httptest.Server
	mu         sync.Mutex
	n          int
}

const noteContent = "NOTE-4242"

func newCodeUpstream(t *testing.T, kind, note string) *codeUpstream {
	u := &codeUpstream{kind: kind, note: note}
	u.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		u.mu.Lock()
		n := u.n
		u.n++
		u.mu.Unlock()
		var turn fakeTurn
		switch {
		case strings.Contains(string(body), noteContent):
			turn.Text = "the note says " + noteContent
		case strings.Contains(string(body), "read the note"):
			args, _ := json.Marshal(map[string]string{"file_path": u.note})
			turn.Calls = []fakeCall{{Name: "Read", Args: string(args)}}
		default:
			turn.Text = "hi from " + kind
		}
		w.Header().Set("Content-Type", "text/event-stream")
		var out strings.Builder
		switch kind {
		case "anthropic":
			renderAnthropic(&out, turn, n)
		case "gemini":
			renderGemini(&out, turn, n)
		case "responses":
			renderResponses(&out, turn, n)
		case "openai":
			renderOpenAI(&out, turn, n)
		}
		io.WriteString(w, out.String())
	}))
	t.Cleanup(u.srv.Close)
	return u
}

func TestClaudeCode_Headless(t *testing.T) {
	bin := claudeBinary(t)
	dir := t.TempDir()
	note := filepath.Join(dir, "note.txt")
	if err := os.WriteFile(note, []byte(noteContent+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var y strings.Builder
	y.WriteString("backends:\n  offline: {type: mock}\n")
	for _, k := range backendKinds {
		u := newCodeUpstream(t, k, note)
		base := u.srv.URL
		if k == "responses" || k == "openai" {
			base += "/v1"
		}
		fmt.Fprintf(&y, "  %s: {type: %s, base_url: %q, api_key: upstream-secret, retries: {max: 0}}\n", k, k, base)
	}
	y.WriteString("models:\n  m-mock: {backend: offline}\n")
	for _, k := range backendKinds {
		fmt.Fprintf(&y, "  m-%s: {backend: %s, upstream_model: fake-model}\n", k, k)
	}
	y.WriteString("keys:\n  client: {key: client-key, models: [\"*\"]}\n")
	base := serveGateway(t, y.String())
	for _, wire := range wires {
		t.Run(wire+"/one turn", func(t *testing.T) {
			r := runClaude(t, bin, base, "m-"+wire, dir, "say hi")
			want := "hi from " + wire
			if wire == "mock" {
				want = "say hi" // the mock echoes the prompt
			}
			if r.IsError || !strings.Contains(r.Result, want) {
				t.Errorf("result %+v, want it to hold %q", r, want)
			}
		})
		if wire == "mock" {
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
		t.Run(wire+"/Read tool", func(t *testing.T) {
			r := runClaude(t, bin, base, "m-"+wire, dir, "read the note")
			if r.IsError || !strings.Contains(r.Result, "the note says "+noteContent) || r.NumTurns < 2 {
				t.Errorf("result %+v", r)
			}
		})
	}
}
