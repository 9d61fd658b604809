// Package pgtest runs a real PostgreSQL server for tests: a throwaway cluster (initdb)
// in a temporary directory, on a free loopback port, trusting local connections,
// stopped and removed when the test ends. Without the PostgreSQL binaries (Debian's
// postgresql package) the test is skipped, or fails when the CI environment variable is
// "true". Run as root, the server runs as the postgres user (or nobody), as PostgreSQL
// refuses to run as root.
package pgtest

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Server is a running PostgreSQL cluster owned by one test.
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

// Start starts a PostgreSQL cluster for t, or skips t (fails it under CI=true) when
// the binaries are missing. It is stopped and its files removed when t ends.
func Start(t testing.TB) *Server {
	t.Helper()
	bin, err := binDir()
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("PostgreSQL is not installed (CI=true): %v", err)
		}
		t.Skipf("PostgreSQL is not installed: skipping the PostgreSQL tests (apt-get install postgresql): %v", err)
	}
	dir, err := os.MkdirTemp("", "agate-pg-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	cred, err := credential(dir)
	if err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "data")
	initdb := exec.Command(filepath.Join(bin, "initdb"), "-D", data, "-U", "postgres", "-A", "trust", "--no-sync", "-E", "UTF8", "--locale", "C")
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	if out, err := initdb.CombinedOutput(); err != nil {
		t.Fatalf("initdb: %v\n%s", err, out)
	}
	s := &Server{bin: bin, data: data, dir: dir, cred: cred}
	var lastErr error
	for range 5 {
		s.port = freePort(t)
		if lastErr = s.start(); lastErr == nil {
			t.Cleanup(s.Stop)
			return s
		}
	}
	t.Fatalf("starting postgres: %v", lastErr)
	return nil
}

func (s *Server) start() error {
	cmd := exec.Command(filepath.Join(s.bin, "postgres"), "-D", s.data, "-p", strconv.Itoa(s.port), "-c", "listen_addresses=127.0.0.1",
		"-c", "unix_socket_directories="+s.dir, "-c", "fsync=off", "-c", "full_page_writes=off",
		"-c", "max_connections=200")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred}
	if err := cmd.Start(); err != nil {
		return err
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
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

func freePort(t testing.TB) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
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

// NewDatabase creates an empty database of its own for t and returns its URL.
func (s *Server) NewDatabase(t testing.TB) string {
	t.Helper()
	name := "t" + strconv.FormatInt(s.dbs.Add(1), 10)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, s.url("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	if _, err := c.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatal(err)
	}
	return s.url(name)
}

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
