package pgtest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// ownedTemplate takes only a directory of the cluster's user, closed to others, with a
// PG_VERSION: the template's name is predictable, so anything else there is refused,
// and one of its own left incomplete is removed to be made again.
func TestOwnedTemplate(t *testing.T) {
	uid := os.Getuid()
	for _, tt := range []struct {
		name    string
		make    func(t *testing.T, dir string)
		ok      bool
		errHas  string
		removed bool
	}{
		{name: "missing", make: func(*testing.T, string) {}},
		{name: "whole", make: func(t *testing.T, dir string) {
			mkdir(t, dir, 0o700)
			write(t, filepath.Join(dir, "PG_VERSION"))
		}, ok: true},
		{name: "open to others", make: func(t *testing.T, dir string) {
			mkdir(t, dir, 0o755)
			write(t, filepath.Join(dir, "PG_VERSION"))
		}, errHas: "not a template cluster"},
		{name: "a file", make: func(t *testing.T, dir string) { write(t, dir) }, errHas: "not a template cluster"},
		{name: "a symlink", make: func(t *testing.T, dir string) {
			target := filepath.Join(filepath.Dir(dir), "elsewhere")
			mkdir(t, target, 0o700)
			write(t, filepath.Join(target, "PG_VERSION"))
			if err := os.Symlink(target, dir); err != nil {
				t.Fatal(err)
			}
		}, errHas: "not a template cluster"},
		{name: "incomplete", make: func(t *testing.T, dir string) {
			mkdir(t, dir, 0o700)
			write(t, filepath.Join(dir, "postgresql.conf"))
		}, removed: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "tmpl")
			tt.make(t, dir)
			ok, err := ownedTemplate(dir, uid)
			if ok != tt.ok || (err == nil) != (tt.errHas == "") || (err != nil && !strings.Contains(err.Error(), tt.errHas)) {
				t.Fatalf("ownedTemplate = %v, %v; want %v and an error holding %q", ok, err, tt.ok, tt.errHas)
			}
			if _, err := os.Lstat(dir); tt.removed != os.IsNotExist(err) && tt.name != "missing" {
				t.Errorf("removed: %v, want %v", os.IsNotExist(err), tt.removed)
			}
		})
	}
	if _, err := ownedTemplate(t.TempDir(), uid+1); err == nil || !strings.Contains(err.Error(), "not a template cluster") {
		t.Errorf("a directory of another user: %v, want it refused", err)
	}
}

// A cluster copied from the template is initdb's: it starts, and two copies are two
// clusters (a database created in one is not in the other).
func TestStart_CopiesOfTheTemplateAreClustersOfTheirOwn(t *testing.T) {
	a, b := Start(t), Start(t)
	if err := a.exec("CREATE DATABASE only_in_a"); err != nil {
		t.Fatal(err)
	}
	if err := b.exec("CREATE DATABASE only_in_a"); err != nil {
		t.Errorf("the second copy already had the first's database: %v", err)
	}
	tmpl, err := a.template()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(tmpl, "base")); err != nil {
		t.Fatalf("template: %v", err)
	}
	if _, err := os.Stat(filepath.Join(tmpl, "postmaster.pid")); !os.IsNotExist(err) {
		t.Errorf("a server ran on the template (postmaster.pid: %v)", err)
	}
}

func mkdir(t *testing.T, dir string, mode os.FileMode) {
	t.Helper()
	if err := os.Mkdir(dir, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, mode); err != nil {
		t.Fatal(err)
	}
}

func write(t *testing.T, path string) {
	t.Helper()
	if err := os.WriteFile(path, []byte("17\n"), 0o600); err != nil {
		t.Fatal(err)
	}
}
