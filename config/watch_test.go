package config

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/google/go-cmp/cmp"
)

// waitLimit bounds every wait for the watcher; it is a deadline, not a sleep.
const waitLimit = 10 * time.Second

func configWithListen(listen string) string {
	return fmt.Sprintf("server: {listen: %q}\nbackends:\n  m: {type: mock}\nmodels:\n  demo: {backend: m}\n", listen)
}

const invalidConfig = "models:\n  demo: {backend: nope}\n"

// watchRecorder records what a Watcher reports.
type watchRecorder struct {
	applied chan *Config
	results chan bool
	logs    syncBuffer
}

type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func newTestWatcher(t *testing.T, path string) (*Watcher, *watchRecorder) {
	t.Helper()
	rec := &watchRecorder{applied: make(chan *Config, 100), results: make(chan bool, 100)}
	logger := slog.New(slog.NewTextHandler(&rec.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	w, err := NewWatcher(path, []string{"UNUSED=1"}, func(c *Config) error { rec.applied <- c; return nil }, logger, func(ok bool) { rec.results <- ok })
	if err != nil {
		t.Fatalf("NewWatcher: %v", err)
	}
	t.Cleanup(func() { w.Close() })
	return w, rec
}

// runWatcher runs w until the test ends and checks that Run returns.
func runWatcher(t *testing.T, w *Watcher) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run returned %v", err)
			}
		case <-time.After(waitLimit):
			t.Error("Run did not return after its context was cancelled")
		}
	})
}

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// waitApplied waits until a config with the given listen address is applied; configs
// applied before it (from intermediate states of a burst) are skipped.
func waitApplied(t *testing.T, rec *watchRecorder, listen string) {
	t.Helper()
	deadline := time.After(waitLimit)
	for {
		select {
		case c := <-rec.applied:
			if c.Server.Listen == listen {
				return
			}
		case <-deadline:
			t.Fatalf("no config with listen %q applied within %v; logs:\n%s", listen, waitLimit, rec.logs.String())
		}
	}
}

func TestWatcher_AppliesValidChanges(t *testing.T) {
	// Each case its own directory and watcher; the tests wait on the 100 ms debounce
	// more than they compute, so they wait side by side (#54).
	t.Parallel()
	tests := []struct {
		name string
		// setup creates the watched file at path with the given content.
		setup func(t *testing.T, path, data string)
		// change replaces the content of the file at path.
		change func(t *testing.T, path, data string)
	}{
		{
			name:   "write in place",
			change: writeFile,
		},
		{
			name:   "write a temporary file and rename it over",
			change: replaceFile,
		},
		{
			name: "remove and recreate",
			change: func(t *testing.T, path, data string) {
				if err := os.Remove(path); err != nil {
					t.Fatal(err)
				}
				writeFile(t, path, data)
			},
		},
		{
			name: "burst of writes",
			change: func(t *testing.T, path, data string) {
				for i := range 5 {
					writeFile(t, path, configWithListen(fmt.Sprintf(":%d", 7000+i)))
				}
				writeFile(t, path, data)
			},
		},
		{
			name: "kubernetes configmap symlink swap",
			setup: func(t *testing.T, path, data string) {
				dir := filepath.Dir(path)
				mkdir(t, filepath.Join(dir, "..v1"))
				writeFile(t, filepath.Join(dir, "..v1", "config.yaml"), data)
				symlink(t, "..v1", filepath.Join(dir, "..data"))
				symlink(t, filepath.Join("..data", "config.yaml"), path)
			},
			change: func(t *testing.T, path, data string) {
				dir := filepath.Dir(path)
				mkdir(t, filepath.Join(dir, "..v2"))
				writeFile(t, filepath.Join(dir, "..v2", "config.yaml"), data)
				symlink(t, "..v2", filepath.Join(dir, "..data_tmp"))
				if err := os.Rename(filepath.Join(dir, "..data_tmp"), filepath.Join(dir, "..data")); err != nil {
					t.Fatal(err)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "config.yaml")
			if tt.setup != nil {
				tt.setup(t, path, configWithListen(":9000"))
			} else {
				writeFile(t, path, configWithListen(":9000"))
			}
			w, rec := newTestWatcher(t, path)
			runWatcher(t, w)

			tt.change(t, path, configWithListen(":9001"))
			waitApplied(t, rec, ":9001")
		})
	}
}

func TestWatcher_KeepsRunningConfigOnInvalidChange(t *testing.T) {
	t.Parallel() // its own directories and watchers (#54)
	path := filepath.Join(t.TempDir(), "config.yaml")
	writeFile(t, path, configWithListen(":9000"))
	w, rec := newTestWatcher(t, path)
	runWatcher(t, w)

	// Atomically, so that no intermediate (empty, valid) state can be loaded.
	replaceFile(t, path, invalidConfig)
	select {
	case ok := <-rec.results:
		if ok {
			t.Fatalf("reload of an invalid file reported success")
		}
	case <-time.After(waitLimit):
		t.Fatalf("no reload result within %v", waitLimit)
	}
	select {
	case c := <-rec.applied:
		t.Fatalf("invalid file applied: %+v", c)
	default:
	}
	logs := rec.logs.String()
	for _, want := range []string{"level=ERROR", "config reload failed", `unknown backend \"nope\"`} {
		if !strings.Contains(logs, want) {
			t.Errorf("logs lack %q:\n%s", want, logs)
		}
	}

	// A later valid edit is applied again.
	writeFile(t, path, configWithListen(":9002"))
	waitApplied(t, rec, ":9002")
}

// TestWatcher_OneEditOneReload: one save, however the editor performs it, logs one reload
// and reports one result; saving the same bytes again (or touching the file) reloads
// nothing. A later, different edit is the barrier that proves no reload was pending.
func TestWatcher_OneEditOneReload(t *testing.T) {
	t.Parallel() // its own directories and watchers (#54)
	tests := []struct {
		name string
		save func(t *testing.T, path, data string)
	}{
		{name: "write in place", save: writeFile},
		{name: "write a temporary file and rename it over", save: replaceFile},
		{
			// vim's default on Linux: keep the original as a backup, write anew, restore the mode.
			name: "rename to a backup, write, chmod",
			save: func(t *testing.T, path, data string) {
				if err := os.Rename(path, path+"~"); err != nil {
					t.Fatal(err)
				}
				writeFile(t, path, data)
				if err := os.Chmod(path, 0o600); err != nil {
					t.Fatal(err)
				}
				if err := os.Remove(path + "~"); err != nil {
					t.Fatal(err)
				}
			},
		},
		{
			name: "truncate, then write in two parts",
			save: func(t *testing.T, path, data string) {
				f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
				if err != nil {
					t.Fatal(err)
				}
				half := len(data) / 2
				for _, part := range []string{data[:half], data[half:]} {
					if _, err := f.WriteString(part); err != nil {
						t.Fatal(err)
					}
				}
				if err := f.Close(); err != nil {
					t.Fatal(err)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "config.yaml")
			writeFile(t, path, configWithListen(":9000"))
			w, rec := newTestWatcher(t, path)
			runWatcher(t, w)

			tt.save(t, path, configWithListen(":9001"))
			results := []bool{waitResult(t, rec)}
			// The same save again, and a touch: the bytes are those already loaded.
			tt.save(t, path, configWithListen(":9001"))
			now := time.Now()
			if err := os.Chtimes(path, now, now); err != nil {
				t.Fatal(err)
			}
			eventually(t, rec, "the unchanged file to be noticed", func() bool {
				return strings.Contains(rec.logs.String(), "config file unchanged, not reloaded")
			})
			writeFile(t, path, configWithListen(":9002"))
			results = append(results, waitResult(t, rec))

			var applied []string
			for len(rec.applied) > 0 {
				applied = append(applied, (<-rec.applied).Server.Listen)
			}
			for len(rec.results) > 0 {
				results = append(results, <-rec.results)
			}
			reloadLines := strings.Count(rec.logs.String(), "msg=\"config reloaded\"")
			want := []any{[]string{":9001", ":9002"}, []bool{true, true}, 2}
			if diff := cmp.Diff(want, []any{applied, results, reloadLines}); diff != "" {
				t.Errorf("[applied listens, results, reload log lines] mismatch (-want +got):\n%s\nlogs:\n%s", diff, rec.logs.String())
			}
		})
	}
}

// TestWatcher_ApplyRejects: a config that loads but that apply refuses is one failed
// reload, logged once with apply's reason.
func TestWatcher_ApplyRejects(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.yaml")
	writeFile(t, path, configWithListen(":9000"))
	var logs syncBuffer
	var results []bool
	w, err := NewWatcher(path, nil, func(*Config) error { return fmt.Errorf("tools.x: not started") },
		slog.New(slog.NewTextHandler(&logs, nil)), func(ok bool) { results = append(results, ok) })
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	writeFile(t, path, configWithListen(":9001"))

	err = w.Reload()

	got := []any{fmt.Sprint(err), results, strings.Count(logs.String(), "\n"), strings.Contains(logs.String(), "tools.x: not started")}
	if diff := cmp.Diff([]any{"tools.x: not started", []bool{false}, 1, true}, got); diff != "" {
		t.Errorf("[error, results, log lines, reason logged] mismatch (-want +got):\n%s\nlogs:\n%s", diff, logs.String())
	}
}

// waitResult waits for the next reload result.
func waitResult(t *testing.T, rec *watchRecorder) bool {
	t.Helper()
	select {
	case ok := <-rec.results:
		return ok
	case <-time.After(waitLimit):
		t.Fatalf("no reload result within %v; logs:\n%s", waitLimit, rec.logs.String())
		return false
	}
}

// eventually polls cond until it holds, failing the test after waitLimit.
func eventually(t *testing.T, rec *watchRecorder, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s; logs:\n%s", what, rec.logs.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestWatcher_Reload(t *testing.T) {
	tests := []struct {
		name       string
		content    string // written before Reload; "" removes the file
		wantErr    string
		wantListen string // of the applied config; "" means none applied
	}{
		{name: "valid", content: configWithListen(":9005"), wantListen: ":9005"},
		{name: "invalid", content: invalidConfig, wantErr: `config: models.demo.backend: unknown backend "nope"`},
		{name: "missing file", wantErr: "no such file or directory"},
		{name: "empty file", content: " \n", wantErr: "config.yaml is empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "config.yaml")
			writeFile(t, path, configWithListen(":9000"))
			// Run is not running: Reload works on its own.
			w, rec := newTestWatcher(t, path)
			if tt.content == "" {
				if err := os.Remove(path); err != nil {
					t.Fatal(err)
				}
			} else {
				writeFile(t, path, tt.content)
			}

			err := w.Reload()

			gotErr := ""
			if err != nil {
				gotErr = err.Error()
			}
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && !strings.Contains(gotErr, tt.wantErr) {
				t.Errorf("Reload() = %v, want an error containing %q", err, tt.wantErr)
			}
			gotListen := ""
			select {
			case c := <-rec.applied:
				gotListen = c.Server.Listen
			default:
			}
			var gotResults []bool
			for len(rec.results) > 0 {
				gotResults = append(gotResults, <-rec.results)
			}
			want := []any{tt.wantListen, []bool{tt.wantErr == ""}}
			if diff := cmp.Diff(want, []any{gotListen, gotResults}); diff != "" {
				t.Errorf("[applied listen, results] mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestWatcher_CloseStopsRun(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.yaml")
	writeFile(t, path, configWithListen(":9000"))
	w, _ := newTestWatcher(t, path)
	done := make(chan error, 1)
	go func() { done <- w.Run(context.Background()) }()
	if err := w.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run = %v, want nil", err)
		}
	case <-time.After(waitLimit):
		t.Fatal("Run did not return after Close")
	}
	if err := w.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func TestNewWatcher_Errors(t *testing.T) {
	tests := []struct {
		name  string
		path  string
		apply func(*Config) error
		want  string
	}{
		{name: "no apply", path: filepath.Join(t.TempDir(), "c.yaml"), want: "config: watcher needs an apply function"},
		{name: "missing directory", path: filepath.Join(t.TempDir(), "nope", "c.yaml"), apply: func(*Config) error { return nil }, want: "config: watching "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, err := NewWatcher(tt.path, nil, tt.apply, nil, nil)
			if err == nil {
				w.Close()
				t.Fatal("NewWatcher succeeded, want error")
			}
			if !strings.HasPrefix(err.Error(), tt.want) {
				t.Errorf("NewWatcher error = %q, want prefix %q", err, tt.want)
			}
		})
	}
}

func TestRelevant(t *testing.T) {
	tests := []struct {
		name string
		ev   fsnotify.Event
		want bool
	}{
		{name: "write", ev: fsnotify.Event{Name: "/d/config.yaml", Op: fsnotify.Write}, want: true},
		{name: "create", ev: fsnotify.Event{Name: "/d/config.yaml", Op: fsnotify.Create}, want: true},
		{name: "rename", ev: fsnotify.Event{Name: "/d/config.yaml", Op: fsnotify.Rename}, want: true},
		{name: "remove", ev: fsnotify.Event{Name: "/d/config.yaml", Op: fsnotify.Remove}, want: true},
		{name: "chmod only", ev: fsnotify.Event{Name: "/d/config.yaml", Op: fsnotify.Chmod}, want: false},
		{name: "other file", ev: fsnotify.Event{Name: "/d/other.yaml", Op: fsnotify.Write}, want: false},
		{name: "editor swap file", ev: fsnotify.Event{Name: "/d/.config.yaml.swp", Op: fsnotify.Write}, want: false},
		{name: "configmap data link", ev: fsnotify.Event{Name: "/d/..data", Op: fsnotify.Create}, want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := relevant(tt.ev, "config.yaml"); got != tt.want {
				t.Errorf("relevant(%v) = %v, want %v", tt.ev, got, tt.want)
			}
		})
	}
}

// replaceFile replaces the file at path atomically, as careful editors do.
func replaceFile(t *testing.T, path, data string) {
	t.Helper()
	tmp := filepath.Join(filepath.Dir(path), ".config.yaml.swp")
	writeFile(t, tmp, data)
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

func mkdir(t *testing.T, dir string) {
	t.Helper()
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}
