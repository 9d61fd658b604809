// Package redistest runs a real redis-server for tests: on a free loopback port, in a
// temporary directory, stopped when the test ends. Without the redis-server binary the
// test is skipped, or fails when the CI environment variable is "true".
package redistest

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Server is a running redis-server owned by one test.
type Server struct {
	t    testing.TB
	bin  string
	dir  string
	port int
	cmd  *exec.Cmd
}

// Start starts a redis-server for t, or skips t (fails it under CI=true) when the binary
// is missing. The server is killed when t ends.
func Start(t testing.TB) *Server {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("redis-server is not installed (CI=true): %v", err)
		}
		t.Skip("redis-server is not installed: skipping the Redis tests (apt-get install redis-server)")
	}
	s := &Server{t: t, bin: bin, dir: t.TempDir()}
	var lastErr error
	for range 5 {
		s.port = freePort(t)
		if lastErr = s.start(); lastErr == nil {
			t.Cleanup(s.Kill)
			return s
		}
	}
	t.Fatalf("starting redis-server: %v", lastErr)
	return nil
}

func freePort(t testing.TB) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func (s *Server) start() error {
	cmd := exec.Command(s.bin, "--port", strconv.Itoa(s.port), "--bind", "127.0.0.1", "--save", "",
		"--appendonly", "no", "--dir", s.dir, "--daemonize", "no", "--loglevel", "warning")
	cmd.Stdout, cmd.Stderr = nil, nil
	if err := cmd.Start(); err != nil {
		return err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case err := <-exited:
			return fmt.Errorf("redis-server exited: %v", err)
		default:
		}
		if ping(s.Addr()) {
			s.cmd = cmd
			go func() { <-exited }()
			return nil
		}
		time.Sleep(5 * time.Millisecond) // polling for readiness, not timing the test
	}
	_ = cmd.Process.Kill()
	return fmt.Errorf("redis-server on %s did not answer PING", s.Addr())
}

func ping(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return false
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return false
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	return err == nil && strings.HasPrefix(line, "+PONG")
}

// Addr is the server's host:port.
func (s *Server) Addr() string { return "127.0.0.1:" + strconv.Itoa(s.port) }

// URL is the server's redis:// URL for database 0.
func (s *Server) URL() string { return "redis://" + s.Addr() + "/0" }

// Kill stops the server at once (SIGKILL), as a crash would; its data is lost.
func (s *Server) Kill() {
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	for ping(s.Addr()) { // wait until the port is closed
		time.Sleep(5 * time.Millisecond)
	}
	s.cmd = nil
}

// Restart starts the server again on the same port after Kill.
func (s *Server) Restart() {
	s.t.Helper()
	if err := s.start(); err != nil {
		s.t.Fatalf("restarting redis-server: %v", err)
	}
}

// Stop freezes the server (SIGSTOP): connections stay open and nothing answers.
func (s *Server) Stop() {
	if s.cmd != nil {
		_ = s.cmd.Process.Signal(syscall.SIGSTOP)
	}
}

// Continue resumes a stopped server (SIGCONT).
func (s *Server) Continue() {
	if s.cmd != nil {
		_ = s.cmd.Process.Signal(syscall.SIGCONT)
	}
}
