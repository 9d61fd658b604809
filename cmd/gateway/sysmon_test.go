package main

import (
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
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

// TestReexecTuned: the gateway binary runs, under the PID it was started with, with
// sysmonSetting in its GODEBUG, unless the operator set schedtrace, and serves either way.
func TestReexecTuned(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the gateway binary")
	}
	if runtime.GOOS != "linux" {
		t.Skip("reads the process environment from /proc")
	}
	_, bin := imageBinary(t) // the image's build: one build of the module for every test that runs it
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
	for _, tt := range []struct{ godebug, want string }{
		{"", "GODEBUG=" + sysmonSetting},
		{"gctrace=0", "GODEBUG=gctrace=0," + sysmonSetting},
		{"schedtrace=0", "GODEBUG=schedtrace=0"},
	} {
		t.Run("GODEBUG="+tt.godebug, func(t *testing.T) {
			t.Setenv("GODEBUG", tt.godebug)
			r := startReplica(t, bin, path)
			environ, err := os.ReadFile("/proc/" + strconv.Itoa(r.cmd.Process.Pid) + "/environ")
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, kv := range strings.Split(string(environ), "\x00") {
				if strings.HasPrefix(kv, "GODEBUG=") {
					got = append(got, kv)
				}
			}
			if !slices.Equal(got, []string{tt.want}) {
				t.Errorf("the gateway (pid %d) runs with %q, want %q", r.cmd.Process.Pid, got, tt.want)
			}
			if code, _ := r.chat(t, "hi", false); code != 200 {
				t.Errorf("chat: status %d, want 200", code)
			}
		})
	}
}
