package pgtest

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// sharedPrefix names the directories of shared clusters; the owning test binary's pid
// follows it, so a later binary can tell a leftover (its owner is gone) from a live one.
const sharedPrefix = "agate-pg-shared-"

// Shared is one PostgreSQL cluster shared by the tests of a test binary, started on the
// first NewDatabase; each test gets a database of its own, so tests stay isolated and
// may run in parallel. The test package holds it in a variable and stops it from
// TestMain once the tests have run:
//
//	var postgres pgtest.Shared
//
//	func TestMain(m *testing.M) { os.Exit(postgres.Run(m)) }
//
// Should the binary die before Close (a test timeout's panic, a kill), the server gets
// SIGQUIT from the kernel when its parent dies (see Server.start), and the next Shared
// to start removes the files left behind. The zero value is ready to use.
type Shared struct {
	once sync.Once
	s    *Server
	err  error
}

// NewDatabase creates an empty database for t on the shared cluster, dropped when t
// ends, and returns its URL. Like Start, it skips t (fails it under CI=true) when the
// PostgreSQL binaries are missing, and fails t when the cluster cannot be started.
func (sh *Shared) NewDatabase(t testing.TB) string {
	t.Helper()
	requireBinaries(t)
	sh.once.Do(func() {
		reapShared()
		sh.s, sh.err = launch(sharedPrefix + strconv.Itoa(os.Getpid()) + "-")
	})
	if sh.err != nil {
		t.Fatalf("starting the shared PostgreSQL cluster: %v", sh.err)
	}
	return sh.s.NewDatabase(t)
}

// Close stops the shared cluster, if it was started, and removes its files. Call it
// once, after the tests (m.Run) have finished.
func (sh *Shared) Close() {
	sh.once.Do(func() {}) // a NewDatabase after Close does not start a cluster
	if sh.s != nil {
		sh.s.remove()
		sh.s = nil
	}
}

// Run runs the tests, then Close, and returns m.Run's exit code: a TestMain's body.
func (sh *Shared) Run(m *testing.M) int {
	defer sh.Close()
	return m.Run()
}

// reapShared removes the shared clusters' directories whose test binary is gone,
// killing a postmaster still running there. Errors are ignored: it tidies up.
func reapShared() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), sharedPrefix+"*"))
	for _, dir := range dirs {
		pid, err := strconv.Atoi(strings.SplitN(strings.TrimPrefix(filepath.Base(dir), sharedPrefix), "-", 2)[0])
		if err != nil || pid == os.Getpid() || alive(pid) {
			continue
		}
		// postmaster.pid's first line is the postmaster's pid.
		if b, err := os.ReadFile(filepath.Join(dir, "data", "postmaster.pid")); err == nil {
			if pm, err := strconv.Atoi(strings.TrimSpace(strings.SplitN(string(b), "\n", 2)[0])); err == nil && alive(pm) && runsIn(pm, dir) {
				_ = syscall.Kill(pm, syscall.SIGQUIT)
			}
		}
		_ = os.RemoveAll(dir)
	}
}

// alive reports whether process pid exists.
func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || err == syscall.EPERM
}

// runsIn reports whether process pid's command line names dir: the postmaster of that
// cluster, not another process that has since been given its pid.
func runsIn(pid int, dir string) bool {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
	return err == nil && strings.Contains(string(b), dir)
}
