package tools

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// helperSource is a stdio MCP source running this test binary as a server (TestMain);
// extra environment variables make otherwise equal options differ.
func helperSource(t *testing.T, extra ...string) SourceOptions {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{helperServerEnv: "1", "GORACE": helperGORACE}
	for i := 0; i+1 < len(extra); i += 2 {
		env[extra[i]] = extra[i+1]
	}
	return SourceOptions{Type: SourceMCP, Command: []string{exe}, Env: env}
}

// serverPID asks a helper source's server for its process id through a tool call.
func serverPID(t *testing.T, r *Registry, source string) int {
	t.Helper()
	res := r.Call(context.Background(), source+"__pid", nil)
	pid, err := strconv.Atoi(res.Content)
	if res.IsError || err != nil {
		t.Fatalf("%s__pid = %+v", source, res)
	}
	return pid
}

// waitGone waits until process pid has exited (and been reaped).
func waitGone(t *testing.T, what string, pid int) {
	t.Helper()
	waitFor(t, what+" to exit", 10*time.Second, func() bool {
		return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
	})
}

// TestUpdate: a reload keeps an unchanged source's server process and tools, restarts a
// changed one (a new process with the new options; the old one exits), stops a removed one
// and starts a new one.
func TestUpdate(t *testing.T) {
	clock := SourceOptions{Type: SourceBuiltin, Name: "time_now"}
	r := newTestRegistry(t, map[string]SourceOptions{
		"keep":   helperSource(t),
		"change": helperSource(t),
		"drop":   helperSource(t),
		"clock":  clock,
	}, nil)
	keepPID, changePID, dropPID := serverPID(t, r, "keep"), serverPID(t, r, "change"), serverPID(t, r, "drop")
	keepDefs, err := r.Resolve([]string{"keep"})
	if err != nil {
		t.Fatal(err)
	}

	err = r.Update(context.Background(), map[string]SourceOptions{
		"keep":   helperSource(t),
		"change": helperSource(t, "EXTRA", "1"),
		"add":    helperSource(t),
		"clock":  clock,
	})
	if err != nil {
		t.Fatalf("Update: %v", err)
	}

	if got := serverPID(t, r, "keep"); got != keepPID {
		t.Errorf("unchanged source: server pid %d, want still %d", got, keepPID)
	}
	if got, _ := r.Resolve([]string{"keep"}); !slices.EqualFunc(got, keepDefs, func(a, b Definition) bool { return a.Name == b.Name }) {
		t.Errorf("unchanged source's tools = %v, want %v", toolNames(got), toolNames(keepDefs))
	}
	if got := serverPID(t, r, "change"); got == changePID {
		t.Errorf("changed source: server pid still %d, want a new process", got)
	}
	waitGone(t, "the changed source's old server", changePID)
	waitGone(t, "the removed source's server", dropPID)
	if _, err := r.Resolve([]string{"drop"}); !errors.Is(err, ErrUnknownTool) {
		t.Errorf("Resolve(drop) = %v, want ErrUnknownTool", err)
	}
	if res := r.Call(context.Background(), "drop__echo", []byte(`{"message":"x"}`)); !res.IsError {
		t.Errorf("call of a removed source's tool = %+v, want an error", res)
	}
	if diff := cmp.Diff(Result{Content: "hi"}, r.Call(context.Background(), "add__echo", []byte(`{"message":"hi"}`))); diff != "" {
		t.Errorf("new source's echo (-want +got):\n%s", diff)
	}
	if err := r.anyDown(); err != nil {
		t.Errorf("Ready = %v", err)
	}
}

// TestUpdate_FailureChangesNothing: an Update one of whose new or changed sources cannot be
// started fails naming that source and leaves the running sources as they were: the good
// new source is not added, a changed one keeps its old server.
func TestUpdate_FailureChangesNothing(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "no-such-server")
	tests := []struct {
		name    string
		bad     map[string]SourceOptions
		wantErr string
	}{
		{name: "bad source name", bad: map[string]SourceOptions{"bad name": {Type: SourceBuiltin, Name: "time_now"}},
			wantErr: `tool source name "bad name"`},
		{name: "unknown type", bad: map[string]SourceOptions{"grpc": {Type: "grpc"}}, wantErr: `tool source "grpc": unknown type`},
		{name: "required server missing", bad: map[string]SourceOptions{"late": {Type: SourceMCP, Command: []string{missing}, Required: true}},
			wantErr: `starting tool source "late"`},
		{name: "schema does not compile", bad: map[string]SourceOptions{"hook": {Type: SourceHTTP, URL: "http://127.0.0.1:1/",
			Parameters: map[string]any{"type": "nope"}}}, wantErr: `tool "hook" of source "hook": parameters schema`},
		{name: "model-facing name taken", bad: map[string]SourceOptions{"keep__echo": {Type: SourceBuiltin, Name: "time_now"}},
			wantErr: `model-facing name "keep__echo" is already used by tool "echo" of source "keep"`},
	}
	r := newTestRegistry(t, map[string]SourceOptions{"keep": helperSource(t), "change": helperSource(t)}, nil)
	keepPID, changePID := serverPID(t, r, "keep"), serverPID(t, r, "change")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			next := map[string]SourceOptions{
				"keep":   helperSource(t),
				"change": helperSource(t, "EXTRA", "1"),
				"good":   {Type: SourceBuiltin, Name: "time_now"},
			}
			for name, cfg := range tt.bad {
				next[name] = cfg
			}
			err := r.Update(context.Background(), next)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Update = %v, want an error containing %q", err, tt.wantErr)
			}
			if _, err := r.Resolve([]string{"good"}); !errors.Is(err, ErrUnknownTool) {
				t.Errorf("the good new source was added (Resolve = %v)", err)
			}
			if got := serverPID(t, r, "keep"); got != keepPID {
				t.Errorf("keep: server pid %d, want still %d", got, keepPID)
			}
			if got := serverPID(t, r, "change"); got != changePID {
				t.Errorf("change: server pid %d, want still %d (its options did not apply)", got, changePID)
			}
		})
	}
}

// TestUpdate_StaleSourcePublishIgnored: a tool list announced by a source that an Update
// replaced or removed (its server's tools/list_changed, or a reconnection racing the
// Update) changes nothing.
func TestUpdate_StaleSourcePublishIgnored(t *testing.T) {
	r := newTestRegistry(t, map[string]SourceOptions{"replaced": helperSource(t), "removed": helperSource(t)}, nil)
	r.mu.RLock()
	oldReplaced, oldRemoved := r.sources["replaced"], r.sources["removed"]
	r.mu.RUnlock()
	if err := r.Update(context.Background(), map[string]SourceOptions{"replaced": helperSource(t, "EXTRA", "1")}); err != nil {
		t.Fatal(err)
	}
	ghost := []toolSpec{{Tool: "ghost"}}
	r.publish(oldReplaced, ghost)
	r.publish(oldRemoved, ghost)

	if _, err := r.Resolve([]string{"replaced/ghost"}); !errors.Is(err, ErrUnknownTool) {
		t.Errorf("Resolve(replaced/ghost) = %v, want ErrUnknownTool", err)
	}
	if _, err := r.Resolve([]string{"removed"}); !errors.Is(err, ErrUnknownTool) {
		t.Errorf("Resolve(removed) = %v, want ErrUnknownTool", err)
	}
	defs, err := r.Resolve([]string{"replaced"})
	if err != nil || !slices.Contains(toolNames(defs), "replaced__echo") {
		t.Errorf("Resolve(replaced) = %v, %v; want the new server's tools", toolNames(defs), err)
	}
	if res := r.Call(context.Background(), "removed__ghost", nil); !res.IsError {
		t.Errorf("call of a ghost tool = %+v, want an error", res)
	}
}

// TestNew_MissingServerComesUpLater: an MCP server whose program does not exist yet does
// not fail New; the source is reported by Ready, resolves to no tools (by its name and by
// "source/tool", so keys naming it still load), and once the program appears the
// background retries bring its tools in.
func TestNew_MissingServerComesUpLater(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(t.TempDir(), "late-server")
	cfg := SourceOptions{Type: SourceMCP, Command: []string{script}, Env: map[string]string{helperServerEnv: "1", "GORACE": helperGORACE}}
	r := newTestRegistry(t, map[string]SourceOptions{"late": cfg, "clock": {Type: SourceBuiltin, Name: "time_now"}}, nil)

	err = r.Degraded()
	if err == nil || !strings.Contains(err.Error(), `tool source "late": not started`) || !strings.Contains(err.Error(), "late-server") {
		t.Errorf("Degraded = %v, want it to name the source and the cause", err)
	}
	if err := r.Ready(); err != nil {
		t.Errorf("Ready = %v, want nil: the source is not required, chat is served", err)
	}
	defs, err := r.Resolve([]string{"late", "late/echo", "clock"})
	if err != nil || !slices.Equal(toolNames(defs), []string{"clock"}) {
		t.Errorf("Resolve while down = %v, %v; want only clock", toolNames(defs), err)
	}
	if res := r.Call(context.Background(), "late__echo", []byte(`{"message":"hi"}`)); !res.IsError {
		t.Errorf("call while down = %+v, want an error", res)
	}

	tmp := script + ".tmp"
	if err := os.WriteFile(tmp, []byte("#!/bin/sh\nexec '"+exe+"' \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, script); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the server's tools", 20*time.Second, func() bool {
		defs, err := r.Resolve([]string{"late/echo"})
		return err == nil && slices.Equal(toolNames(defs), []string{"late__echo"})
	})
	if err := r.anyDown(); err != nil {
		t.Errorf("Ready once up = %v", err)
	}
	if diff := cmp.Diff(Result{Content: "hi"}, r.Call(context.Background(), "late__echo", []byte(`{"message":"hi"}`))); diff != "" {
		t.Errorf("echo once up (-want +got):\n%s", diff)
	}
}
