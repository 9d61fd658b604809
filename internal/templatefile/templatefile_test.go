package templatefile

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// TestCopy: every copy has the bytes the first Copy's mk wrote, each in its own file that a
// test may change without touching the others or the template; mk runs once.
func TestCopy(t *testing.T) {
	var tp Template
	var made atomic.Int32
	mk := func(path string) error {
		made.Add(1)
		return os.WriteFile(path, []byte("migrated"), 0o600)
	}
	first := tp.Copy(t, "a.db", mk)
	if err := os.WriteFile(first, []byte("changed"), 0o600); err != nil {
		t.Fatal(err)
	}
	second := tp.Copy(t, "a.db", func(string) error { t.Error("a second mk ran"); return nil })
	if first == second || filepath.Base(second) != "a.db" {
		t.Errorf("copies %q and %q: want two files named a.db", first, second)
	}
	if got, _ := os.ReadFile(second); !bytes.Equal(got, []byte("migrated")) {
		t.Errorf("second copy %q; want the template's bytes", got)
	}
	if n := made.Load(); n != 1 {
		t.Errorf("mk ran %d times; want 1", n)
	}
}

// TestBuild_Refuses: a make that fails, leaves no file, or leaves another file beside its
// own (a WAL, a spool) gives no template.
func TestBuild_Refuses(t *testing.T) {
	tests := []struct {
		name string
		mk   func(path string) error
		want string
	}{
		{"mk fails", func(string) error { return errors.New("no disk") }, "no disk"},
		{"nothing written", func(string) error { return nil }, "or none"},
		{"a file beside", func(p string) error {
			if err := os.WriteFile(p, []byte("db"), 0o600); err != nil {
				return err
			}
			return os.WriteFile(p+"-wal", []byte("wal"), 0o600)
		}, "other files"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := build(tt.mk)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err %v; want one with %q", err, tt.want)
			}
		})
	}
}
