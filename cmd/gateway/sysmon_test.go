package main

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestTunedEnv(t *testing.T) {
	tests := []struct {
		name    string
		env     []string
		want    []string
		changed bool
	}{
		{name: "no GODEBUG: added",
			env:  []string{"PATH=/bin", "HOME=/root"},
			want: []string{"PATH=/bin", "HOME=/root", "GODEBUG=" + sysmonSetting}, changed: true},
		{name: "other settings kept, in order",
			env:  []string{"GODEBUG=http2client=0,madvdontneed=1", "PATH=/bin"},
			want: []string{"PATH=/bin", "GODEBUG=http2client=0,madvdontneed=1," + sysmonSetting}, changed: true},
		{name: "an empty GODEBUG replaced",
			env:  []string{"GODEBUG=", "PATH=/bin"},
			want: []string{"PATH=/bin", "GODEBUG=" + sysmonSetting}, changed: true},
		{name: "the operator's schedtrace wins: the runtime's default",
			env:  []string{"GODEBUG=schedtrace=0"},
			want: []string{"GODEBUG=schedtrace=0"}},
		{name: "the operator's schedtrace among others",
			env:  []string{"GODEBUG=gctrace=1, schedtrace=1000"},
			want: []string{"GODEBUG=gctrace=1, schedtrace=1000"}},
		{name: "already tuned (after the exec): unchanged",
			env:  []string{"PATH=/bin", "GODEBUG=" + sysmonSetting},
			want: []string{"PATH=/bin", "GODEBUG=" + sysmonSetting}},
		{name: "the first GODEBUG is the one in force",
			env:  []string{"GODEBUG=gctrace=1", "PATH=/bin", "GODEBUG=schedtrace=0"},
			want: []string{"PATH=/bin", "GODEBUG=gctrace=1," + sysmonSetting}, changed: true},
		{name: "the first GODEBUG sets schedtrace",
			env:  []string{"GODEBUG=schedtrace=0", "GODEBUG=gctrace=1"},
			want: []string{"GODEBUG=schedtrace=0", "GODEBUG=gctrace=1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, changed := tunedEnv(slices.Clone(tt.env))
			if changed != tt.changed || !slices.Equal(got, tt.want) {
				t.Errorf("tunedEnv(%q) = %q, %v; want %q, %v", tt.env, got, changed, tt.want, tt.changed)
			}
		})
	}
}

func TestRuntimeTuning(t *testing.T) {
	tests := []struct {
		name    string
		args    []string // the command line, parsed by gatewayFlags
		env     []string
		want    string
		wantErr string
	}{
		{name: "default: awake", args: []string{"-config", "c.yaml"}, want: tuningAwake},
		{name: "env", env: []string{"GATEWAY_RUNTIME_TUNING=schedtrace"}, want: tuningSchedtrace},
		{name: "env off", env: []string{"GATEWAY_RUNTIME_TUNING=off"}, want: tuningOff},
		{name: "env awake", env: []string{"GATEWAY_RUNTIME_TUNING=awake"}, want: tuningAwake},
		{name: "the last env wins", env: []string{"GATEWAY_RUNTIME_TUNING=schedtrace", "GATEWAY_RUNTIME_TUNING=off"}, want: tuningOff},
		{name: "flag with =", args: []string{"-runtime-tuning=schedtrace"}, want: tuningSchedtrace},
		{name: "flag, two dashes, separate value", args: []string{"-config", "c.yaml", "--runtime-tuning", "schedtrace"}, want: tuningSchedtrace},
		{name: "the flag overrides the env", args: []string{"-runtime-tuning=off"}, env: []string{"GATEWAY_RUNTIME_TUNING=schedtrace"}, want: tuningOff},
		{name: "after --: not a flag", args: []string{"--", "-runtime-tuning=schedtrace"}, want: tuningAwake},
		{name: "unknown value from the flag", args: []string{"-runtime-tuning=fast"}, wantErr: `-runtime-tuning: unknown runtime tuning "fast" (want awake, off or schedtrace)`},
		{name: "unknown value from the env", env: []string{"GATEWAY_RUNTIME_TUNING=awoken"}, wantErr: `GATEWAY_RUNTIME_TUNING: unknown runtime tuning "awoken" (want awake, off or schedtrace)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs, flags := gatewayFlags(tt.env, io.Discard)
			if err := fs.Parse(tt.args); err != nil {
				t.Fatal(err)
			}
			got, err := runtimeTuning(*flags.runtimeTuning, tt.env)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("runtimeTuning for %q, %q = %q, %v; want error %q", tt.args, tt.env, got, err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("runtimeTuning for %q, %q = %q, %v; want %q", tt.args, tt.env, got, err, tt.want)
			}
		})
	}
}

// TestSchedtraceQuiet: the re-exec is made only when the runtime's first scheduler trace
// line (due once the host's uptime reaches schedtrace's interval) is far away.
func TestSchedtraceQuiet(t *testing.T) {
	for _, tt := range []struct {
		uptime time.Duration
		want   bool
	}{
		{0, false}, // the clock could not be read
		{7 * time.Hour, true},
		{schedtraceMax - schedtraceQuietMargin - time.Millisecond, true},
		{schedtraceMax - schedtraceQuietMargin, false},
		{schedtraceMax, false},
		{40 * 24 * time.Hour, false},
	} {
		if got := schedtraceQuiet(tt.uptime); got != tt.want {
			t.Errorf("schedtraceQuiet(%v) = %v, want %v", tt.uptime, got, tt.want)
		}
	}
}

// gatewayConfig writes the offline configuration the process tests run.
func gatewayConfig(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config.yaml")
	cfg := `
server: {listen: "127.0.0.1:0", shutdown_timeout: 5s}
backends: {offline: {type: mock}}
models: {demo: {backend: offline}}
keys: {alice: {key: "${ALICE_KEY}", models: ["*"]}}
`
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// procStrings reads /proc/<pid>/<name> (cmdline, environ) as its NUL-separated strings.
func procStrings(t *testing.T, pid int, name string) []string {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(b), "\x00"), "\x00")
}

// startLine returns the runtime_tuning field of the gateway's "agate listening" line, and
// fails the test on any line of its output that is not a JSON object.
func startLine(t *testing.T, r *replica) string {
	t.Helper()
	field := ""
	for _, line := range strings.Split(strings.TrimSpace(r.logs.String()), "\n") {
		var rec struct {
			Msg           string
			RuntimeTuning *string `json:"runtime_tuning"`
		}
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Errorf("a line that is not the log format: %q", line)
			continue
		}
		if rec.Msg == "agate listening" && rec.RuntimeTuning != nil {
			field = *rec.RuntimeTuning
		}
	}
	return field
}

// TestReexecTuned: the gateway binary is not re-executed unless asked for the schedtrace
// tuning (flag or env); then it runs, under the PID it was started with and
// with the arguments it was given, with sysmonSetting added to its GODEBUG and nothing else
// of its environment changed, unless the operator set schedtrace. The start line names the
// tuning in force, every line on stderr is JSON, and it serves either way.
func TestReexecTuned(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the gateway binary")
	}
	if runtime.GOOS != "linux" {
		t.Skip("reads the process's arguments and environment from /proc")
	}
	_, bin := imageBinary(t) // the image's build: one build of the module for every test that runs it
	path := gatewayConfig(t)
	base := []string{"PATH=" + os.Getenv("PATH"), "ALICE_KEY=alice-secret", "HOME=" + t.TempDir()}
	for _, tt := range []struct {
		name      string
		args, env []string
		wantEnv   []string // nil: env unchanged
		wantField string
	}{
		{name: "default (awake): not re-executed",
			env: []string{"GODEBUG=gctrace=0"}, wantField: "awake"},
		{name: "env GATEWAY_RUNTIME_TUNING=schedtrace",
			env:     []string{"GATEWAY_RUNTIME_TUNING=schedtrace"},
			wantEnv: []string{"GATEWAY_RUNTIME_TUNING=schedtrace", "GODEBUG=" + sysmonSetting}, wantField: sysmonSetting},
		{name: "flag -runtime-tuning=schedtrace, other GODEBUG settings kept",
			args:    []string{"-runtime-tuning=schedtrace"},
			env:     []string{"GODEBUG=gctrace=0", "LANG=C"},
			wantEnv: []string{"LANG=C", "GODEBUG=gctrace=0," + sysmonSetting}, wantField: sysmonSetting},
		{name: "the operator's schedtrace wins",
			args: []string{"--runtime-tuning", "schedtrace"},
			env:  []string{"GODEBUG=schedtrace=0"}, wantField: "schedtrace=0"},
		{name: "env off",
			env: []string{"GATEWAY_RUNTIME_TUNING=off"}, wantField: "off"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{bin, "-config", path}, tt.args...)
			env := append(slices.Clone(base), tt.env...)
			r := startReplicaWith(t, bin, args[1:], env)
			pid := r.cmd.Process.Pid // the PID it was started with
			if got := procStrings(t, pid, "cmdline"); !slices.Equal(got, args) {
				t.Errorf("pid %d runs %q, want %q", pid, got, args)
			}
			want := env
			if tt.wantEnv != nil {
				want = append(slices.Clone(base), tt.wantEnv...)
			}
			if got := procStrings(t, pid, "environ"); !slices.Equal(got, want) {
				t.Errorf("pid %d runs with the environment %q, want %q", pid, got, want)
			}
			if code, _ := r.chat(t, "hi", false); code != 200 {
				t.Errorf("chat: status %d, want 200", code)
			}
			if got := startLine(t, r); got != tt.wantField {
				t.Errorf("start line runtime_tuning = %q, want %q", got, tt.wantField)
			}
		})
	}
}

// TestSchedtraceLine reproduces the line the schedtrace tuning risks: a runtime whose
// schedtrace interval is shorter than the host's uptime prints a scheduler trace line,
// not in the log format, on its monitor's first tick (as sysmonSetting's would on a host
// up more than 24.8 days, which schedtraceQuiet refuses). The gateway's tunings print none.
func TestSchedtraceLine(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the gateway binary")
	}
	if runtime.GOOS != "linux" {
		t.Skip("reads the monotonic clock as the runtime does on Linux")
	}
	_, bin := imageBinary(t)
	path := gatewayConfig(t)
	uptime := monotonic()
	if uptime < 2*time.Second {
		t.Skip("the host booted less than 2 s ago")
	}
	base := []string{"PATH=" + os.Getenv("PATH"), "ALICE_KEY=alice-secret"}
	// An interval a second short of the uptime: the line is due at the first tick.
	due := "GODEBUG=schedtrace=" + strconv.FormatInt(uptime.Milliseconds()-1000, 10)
	r := startReplicaWith(t, bin, []string{"-config", path}, append(slices.Clone(base), due))
	if !strings.Contains(r.logs.String(), "SCHED ") {
		t.Errorf("with %s, no scheduler trace line; output:\n%s", due, r.logs.String())
	}
	for _, tuning := range []string{"awake", "off", "schedtrace"} { // this host's uptime is short of 24.8 days
		if !schedtraceQuiet(uptime) {
			t.Skip("this host is up more than 24.8 days: the schedtrace tuning is skipped here")
		}
		r := startReplicaWith(t, bin, []string{"-config", path, "-runtime-tuning", tuning}, base)
		if code, _ := r.chat(t, "hi", true); code != 200 {
			t.Errorf("%s: chat: status %d, want 200", tuning, code)
		}
		startLine(t, r) // every line JSON
	}
}
