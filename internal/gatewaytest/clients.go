package gatewaytest

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// The real coding agents the end-to-end tests run against a gateway (Claude Code, Codex
// CLI), shared by e2e/clients, which holds their long runs, and proxy's external tests that
// run one for a feature of their own (the MCP endpoint, Codex's reasoning round trip).

// FleetClientYAML is FleetYAML(fakes, true), the mock and the fakes, with the key "client"
// (client-key, every model).
func FleetClientYAML(fakes map[string]*Fake) string {
	return FleetYAML(fakes, true) + "keys:\n  client: {key: client-key, models: [\"*\"]}\n"
}

// SetParallel sets -test.parallel to n unless the command line gave it. A TestMain calls it
// after flag.Parse and before m.Run, for a binary whose parallel tests mostly wait (on a
// subprocess, a fake's delay, a backoff), where Go's default of GOMAXPROCS leaves cores
// idle. It panics only if the testing flags are not registered, which testing.M does.
func SetParallel(n int) {
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if !given {
		if err := flag.Set("test.parallel", strconv.Itoa(n)); err != nil {
			panic(err)
		}
	}
}

// RequireClaude returns the claude executable (Claude Code): skipped when missing, fatal
// under CI=true (.ci/run installs @anthropic-ai/claude-code).
func RequireClaude(t testing.TB) string {
	return Require(t, "claude", "npm install -g @anthropic-ai/claude-code@2.1.330")
}

// ClaudeEnv is the whole environment of a headless claude run against the gateway at base
// (its root URL) with key, in HOME home, every model alias on model, and its telemetry,
// updates and other traffic off.
func ClaudeEnv(home, base, key, model string) []string {
	return []string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "ANTHROPIC_BASE_URL=" + base,
		"ANTHROPIC_API_KEY=" + key, "ANTHROPIC_DEFAULT_HAIKU_MODEL=" + model, "ANTHROPIC_SMALL_FAST_MODEL=" + model,
		"DISABLE_TELEMETRY=1", "DISABLE_AUTOUPDATER=1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_ERROR_REPORTING=1"}
}

// ClaudeResult is what the tests read of claude's --output-format json.
type ClaudeResult struct {
	Result   string `json:"result"`
	IsError  bool   `json:"is_error"`
	NumTurns int    `json:"num_turns"`
}

// RequireCodex returns the codex executable (Codex CLI): skipped when missing, fatal under
// CI=true (.ci/run installs @openai/codex, whose platform package ships the binary).
func RequireCodex(t testing.TB) string {
	return Require(t, "codex", "npm install -g @openai/codex@0.169.0")
}

// codexConfig is Codex's config.toml for the gateway at base (its /v1 URL).
const codexConfig = `model_provider = "agate"

[model_providers.agate]
name = "Agate"
base_url = %q
env_key = "AGATE_KEY"
wire_api = "responses"
`

// CodexNoWebSearch is the one setting a user of a translated backend adds to Codex's
// defaults: its built-in web_search is served only by a responses backend.
func CodexNoWebSearch() []string { return []string{"-c", `web_search="disabled"`} }

// RunCodex runs `codex exec prompt` against the gateway at base (its root URL) with model
// and the key client-key, in dir (its CODEX_HOME and HOME there too), with Codex's defaults
// and the provider config only, plus extra flags; it returns the agent's last message and
// fails t when codex fails.
func RunCodex(t testing.TB, bin, base, model, dir, prompt string, extra ...string) string {
	t.Helper()
	got, out, err := ExecCodex(t, bin, base, model, dir, prompt, extra...)
	if err != nil {
		t.Fatalf("codex: %v\n%s", err, out)
	}
	return got
}

// ExecCodex is RunCodex returning codex's failure and output instead of failing t. A run
// is bounded by two minutes.
func ExecCodex(t testing.TB, bin, base, model, dir, prompt string, extra ...string) (last string, out []byte, err error) {
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
