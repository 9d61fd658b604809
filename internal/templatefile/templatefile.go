// Package templatefile gives tests copies of one file made once: a database migrated from
// empty, say, which each test would otherwise make again at a cost (#54). It is for tests;
// nothing in the gateway imports it.
package templatefile

import (
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// Template is a file made on first use, kept in memory for its copies. A test package
// declares one per kind of file; the zero value is ready, and it is safe for concurrent
// use.
type Template struct {
	once sync.Once
	data []byte
	err  error
}

// Copy writes a copy of the template as name in t's temporary directory and returns its
// path, which t may change at will. The first Copy makes the template: mk writes it at
// the path it is given, in a directory of its own (removed after), and must leave exactly
// that one file there: anything beside it (a WAL not checkpointed, a spool) fails the
// template, since a copy of the one file would not be the same state. Later calls use
// the template made then and do not call their mk. It fails t when the template cannot
// be made.
func (tp *Template) Copy(t testing.TB, name string, mk func(path string) error) string {
	t.Helper()
	tp.once.Do(func() { tp.data, tp.err = build(mk) })
	if tp.err != nil {
		t.Fatalf("templatefile: %v", tp.err)
	}
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, tp.data, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// build runs mk in a directory of its own and returns the file it wrote.
func build(mk func(path string) error) ([]byte, error) {
	dir, err := os.MkdirTemp("", "templatefile-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	p := filepath.Join(dir, "template")
	if err := mk(p); err != nil {
		return nil, err
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	if len(ents) != 1 || ents[0].Name() != "template" {
		return nil, errors.New("the template's mk left other files than the one at its path, or none")
	}
	return os.ReadFile(p)
}
