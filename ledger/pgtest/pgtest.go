// Package pgtest runs a real PostgreSQL server for tests: a throwaway cluster (initdb)
// in a temporary directory, on a free loopback port, trusting local connections,
// stopped and removed when the test ends. Without the PostgreSQL binaries (Debian's
// postgresql package) the test is skipped, or fails when the CI environment variable is
// "true". Run as root, the server runs as the postgres user (or nobody), as PostgreSQL
// refuses to run as root.
package pgtest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Server is a running PostgreSQL cluster, owned by one test (Start) or shared by a test
// binary's tests (Shared).
type Server struct {
	bin, data, dir string
	cred           *syscall.Credential
	port           int
	cmd            *exec.Cmd
	exited         chan struct{}
	dbs            atomic.Int64
}

// binDir finds the directory of initdb and postgres: PATH, else Debian's
// /usr/lib/postgresql/<version>/bin (newest version first).
func binDir() (string, error) {
	if p, err := exec.LookPath("initdb"); err == nil {
		if _, err := exec.LookPath("postgres"); err == nil {
			p, _ = filepath.EvalSymlinks(p)
			return filepath.Dir(p), nil
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Sort(sort.Reverse(sort.StringSlice(dirs)))
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "postgres")); err == nil {
			return d, nil
		}
	}
	return "", fmt.Errorf("initdb and postgres not found in PATH or /usr/lib/postgresql/*/bin")
}

// Start starts a PostgreSQL cluster of t's own, or skips t (fails it under CI=true) when
// the binaries are missing. It is stopped and its files removed when t ends. Tests that
// stop or restart the server use it; the others share one cluster (Shared).
func Start(t testing.TB) *Server {
	t.Helper()
	requireBinaries(t)
	s, err := launch("agate-pg-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.remove)
	return s
}

// requireBinaries skips t (fails it under CI=true) when PostgreSQL is not installed.
func requireBinaries(t testing.TB) {
	t.Helper()
	if _, err := binDir(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("PostgreSQL is not installed (CI=true): %v", err)
		}
		t.Skipf("PostgreSQL is not installed: skipping the PostgreSQL tests (apt-get install postgresql): %v", err)
	}
}

// launch creates a cluster in a new temporary directory named prefix* and starts it.
func launch(prefix string) (*Server, error) {
	bin, err := binDir()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		return nil, err
	}
	s := &Server{bin: bin, data: filepath.Join(dir, "data"), dir: dir}
	if err := s.launch(); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	return s, nil
}

func (s *Server) launch() error {
	var err error
	if s.cred, err = credential(s.dir); err != nil {
		return err
	}
	tmpl, err := s.template()
	if err != nil {
		return err
	}
	if err := copyCluster(tmpl, s.data); err != nil {
		return err
	}
	if err = s.listen(); err == nil {
		return nil
	}
	// A template that does not start (say a temporary-file cleaner took some of its
	// files) is dropped, and the cluster made by initdb itself.
	_ = os.RemoveAll(tmpl)
	_ = os.RemoveAll(s.data)
	if err := s.initdb(s.data); err != nil {
		return err
	}
	return s.listen()
}

// listen starts the server on a free port, trying five.
func (s *Server) listen() error {
	var err error
	for range 5 {
		if s.port, err = freePort(); err != nil {
			return err
		}
		if err = s.start(); err == nil {
			return nil
		}
	}
	return fmt.Errorf("starting postgres: %w", err)
}

// initdbArgs are initdb's options after -D: everything a cluster's files depend on but
// the initdb binary and the user it runs as.
var initdbArgs = []string{"-U", "postgres", "-A", "trust", "--no-sync", "-E", "UTF8", "--locale", "C"}

// initdb creates a cluster in data, as s's user.
func (s *Server) initdb(data string) error {
	initdb := exec.Command(filepath.Join(s.bin, "initdb"), append([]string{"-D", data}, initdbArgs...)...)
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred}
	if out, err := initdb.CombinedOutput(); err != nil {
		return fmt.Errorf("initdb: %v\n%s", err, out)
	}
	return nil
}

// template returns the directory of a cluster just as initdb made it, made once per
// machine for a given initdb binary (its path, size and time), user and initdbArgs, and
// copied for each cluster: initdb costs about 1.2 s of CPU, a copy of its 40 MB about a
// third of that (#54). It lives in the temporary directory, named by a hash of those
// inputs; no server ever runs on it. It is made in a directory of its own and renamed
// into place, so a concurrent test binary sees it whole or not at all (the loser of two
// removes its own). One not owned by the cluster's user, or open to others, is not
// used: its name is predictable.
func (s *Server) template() (string, error) {
	initdb := filepath.Join(s.bin, "initdb")
	fi, err := os.Stat(initdb)
	if err != nil {
		return "", err
	}
	uid, gid := os.Getuid(), os.Getgid()
	if s.cred != nil {
		uid, gid = int(s.cred.Uid), int(s.cred.Gid)
	}
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%d\x00%d\x00%d:%d\x00%s", initdb, fi.Size(), fi.ModTime().UnixNano(), uid, gid, strings.Join(initdbArgs, "\x00"))
	dir := filepath.Join(os.TempDir(), "agate-pg-initdb-"+hex.EncodeToString(h.Sum(nil)[:12]))
	if ok, err := ownedTemplate(dir, uid); err != nil || ok {
		return dir, err
	}
	staging, err := os.MkdirTemp("", "agate-pg-initdb-staging-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(staging)
	if err := os.Chown(staging, uid, gid); err != nil {
		return "", err
	}
	data := filepath.Join(staging, "data")
	if err := s.initdb(data); err != nil {
		return "", err
	}
	if err := os.Rename(data, dir); err != nil {
		// Another binary renamed its own first: use that one.
		if ok, err2 := ownedTemplate(dir, uid); err2 != nil || !ok {
			return "", fmt.Errorf("pgtest: template cluster %s: %v", dir, err)
		}
	}
	return dir, nil
}

// ownedTemplate reports whether dir is a template cluster: a directory with a
// PG_VERSION file, owned by uid and closed to others (mode 0700, as initdb leaves it).
// One of uid's without PG_VERSION (cut short by a temporary-file cleaner) is removed, to
// be made again; any other that fails the check is an error.
func ownedTemplate(dir string, uid int) (bool, error) {
	fi, err := os.Lstat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !fi.IsDir() || !ok || int(st.Uid) != uid || fi.Mode().Perm() != 0o700 {
		return false, fmt.Errorf("pgtest: %s is not a template cluster of uid %d (mode %v): remove it", dir, uid, fi.Mode())
	}
	if _, err := os.Stat(filepath.Join(dir, "PG_VERSION")); err != nil {
		return false, os.RemoveAll(dir)
	}
	return true, nil
}

// copyCluster copies the cluster in src to dst (which must not exist), keeping its
// files' owner and modes (cp -a).
func copyCluster(src, dst string) error {
	if out, err := exec.Command("cp", "-a", src, dst).CombinedOutput(); err != nil {
		return fmt.Errorf("copying the template cluster: %v\n%s", err, out)
	}
	return nil
}

// remove stops the server and removes its files.
func (s *Server) remove() {
	s.Stop()
	_ = os.RemoveAll(s.dir)
}

func (s *Server) start() error {
	cmd := exec.Command(filepath.Join(s.bin, "postgres"), "-D", s.data, "-p", strconv.Itoa(s.port), "-c", "listen_addresses=127.0.0.1",
		"-c", "unix_socket_directories="+s.dir, "-c", "fsync=off", "-c", "full_page_writes=off",
		"-c", "max_connections=200")
	// Pdeathsig: should the test binary die without stopping the server (a test timeout's
	// panic, a kill), the kernel sends the postmaster SIGQUIT (an immediate shutdown) when
	// the thread that started it exits. That thread is the one below, locked and kept for
	// the server's lifetime, so the signal comes when the process dies, not when the Go
	// runtime retires some thread. Go sets it after the credential change, which would
	// otherwise clear it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred, Pdeathsig: syscall.SIGQUIT}
	started, exited := make(chan error, 1), make(chan struct{})
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with this goroutine
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		_ = cmd.Wait()
		close(exited)
	}()
	if err := <-started; err != nil {
		return err
	}
	if err := s.await(exited); err != nil {
		_ = cmd.Process.Kill()
		<-exited
		return err
	}
	s.cmd, s.exited = cmd, exited
	return nil
}

// Restart starts the server again on the same port after Stop, with its data.
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	if err := s.start(); err != nil {
		t.Fatalf("restarting postgres: %v", err)
	}
}

// credential is the user the cluster runs as (nil: the current one, when not root),
// given ownership of dir.
func credential(dir string) (*syscall.Credential, error) {
	if os.Getuid() != 0 {
		return nil, nil
	}
	var u *user.User
	var err error
	for _, name := range []string{"postgres", "nobody"} {
		if u, err = user.Lookup(name); err == nil {
			break
		}
	}
	if err != nil {
		return nil, fmt.Errorf("running as root and no postgres or nobody user: %w", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	if err := os.Chown(dir, uid, gid); err != nil {
		return nil, err
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// await waits until the server accepts a connection, or its process exits.
func (s *Server) await(exited <-chan struct{}) error {
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			return fmt.Errorf("postgres exited")
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		c, err := pgx.Connect(ctx, s.url("postgres"))
		if err == nil {
			_ = c.Close(ctx)
			cancel()
			return nil
		}
		cancel()
		time.Sleep(20 * time.Millisecond) // polling for readiness, not timing the test
	}
	return fmt.Errorf("postgres on port %d did not accept connections", s.port)
}

func (s *Server) url(db string) string {
	return "postgres://postgres@127.0.0.1:" + strconv.Itoa(s.port) + "/" + db + "?sslmode=disable"
}

// Port is the server's loopback port.
func (s *Server) Port() int { return s.port }

// NewDatabase creates an empty database of its own for t, dropped when t ends, and
// returns its URL.
func (s *Server) NewDatabase(t testing.TB) string {
	t.Helper()
	name := "t" + strconv.FormatInt(s.dbs.Add(1), 10)
	if err := s.exec("CREATE DATABASE " + name); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// FORCE ends the sessions a test left open (a pool closed after this cleanup).
		if err := s.exec("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)"); err != nil && s.running() {
			t.Logf("pgtest: dropping database %s: %v", name, err)
		}
	})
	return s.url(name)
}

// exec runs one statement on the maintenance database.
func (s *Server) exec(sql string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, s.url("postgres"))
	if err != nil {
		return err
	}
	defer c.Close(ctx)
	_, err = c.Exec(ctx, sql)
	return err
}

func (s *Server) running() bool { return s.cmd != nil }

// Stop stops the server at once (an immediate shutdown: SIGQUIT, as an outage would
// look to clients) and waits for it to exit.
func (s *Server) Stop() {
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGQUIT)
	select {
	case <-s.exited:
	case <-time.After(10 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.exited
	}
	s.cmd = nil
}
