package pgtest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Shared starts one cluster for all its databases, each database is a fresh one of its
// own, dropped when its test ends, and Close stops the server and removes its files.
func TestShared_OneClusterFreshDatabasesStoppedAtClose(t *testing.T) {
	var sh Shared
	t.Cleanup(sh.Close)
	var urls []string
	for _, name := range []string{"a", "b"} {
		t.Run(name, func(t *testing.T) {
			url := sh.NewDatabase(t)
			urls = append(urls, url)
			ctx := context.Background()
			c, err := pgx.Connect(ctx, url)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close(ctx)
			var tables int
			if err := c.QueryRow(ctx, "SELECT count(*) FROM pg_tables WHERE schemaname = 'public'").Scan(&tables); err != nil {
				t.Fatal(err)
			}
			if tables != 0 {
				t.Errorf("a new database has %d tables, want 0", tables)
			}
			if _, err := c.Exec(ctx, "CREATE TABLE left_behind (x int)"); err != nil {
				t.Fatal(err)
			}
		})
	}
	if len(urls) != 2 || urls[0] == urls[1] {
		t.Fatalf("databases %q, want two distinct ones", urls)
	}
	srv := sh.s
	ctx := context.Background()
	c, err := pgx.Connect(ctx, srv.url("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	var left int
	err = c.QueryRow(ctx, "SELECT count(*) FROM pg_database WHERE datname ~ '^t[0-9]+$'").Scan(&left)
	_ = c.Close(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if left != 0 {
		t.Errorf("%d test databases left after their tests ended, want 0 (dropped)", left)
	}
	pid := srv.cmd.Process.Pid
	sh.Close()
	if err := syscall.Kill(pid, 0); err == nil {
		t.Errorf("postmaster %d still running after Close", pid)
	}
	if _, err := os.Stat(srv.dir); !os.IsNotExist(err) {
		t.Errorf("cluster directory %s still there after Close (stat: %v)", srv.dir, err)
	}
}

// A test binary that dies without Close leaves no server running (the postmaster gets
// its parent-death signal), and the next Shared removes the directory it left.
func TestShared_BinaryDiesWithoutClose(t *testing.T) {
	if os.Getenv("PGTEST_DIE") == "1" {
		var sh Shared
		sh.NewDatabase(t)
		fmt.Println("PID", sh.s.cmd.Process.Pid, "DIR", sh.s.dir)
		os.Exit(3) // no Close, no cleanups: as a test timeout's panic would end it
	}
	requireBinaries(t)
	cmd := exec.Command(os.Args[0], "-test.run", "^TestShared_BinaryDiesWithoutClose$")
	cmd.Env = append(os.Environ(), "PGTEST_DIE=1")
	out, _ := cmd.Output()
	// Another test binary's Shared may reap the directory as soon as the child is gone,
	// so the child names its postmaster rather than leaving it to be read from there.
	var pid int
	var dir string
	if _, err := fmt.Sscanf(strings.TrimSpace(string(out)), "PID %d DIR %s", &pid, &dir); err != nil {
		t.Fatalf("child printed %q, want its postmaster and directory: %v", out, err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for alive(pid) && runsIn(pid, dir) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond) // polling for the postmaster's exit, not timing the test
	}
	if alive(pid) && runsIn(pid, dir) {
		t.Fatalf("postmaster %d still running after its test binary died", pid)
	}
	reapShared()
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("directory %s left by the dead binary not reaped (stat: %v)", dir, err)
	}
}
