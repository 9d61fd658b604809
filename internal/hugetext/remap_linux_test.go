package hugetext

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"testing"
)

// childEnv makes the test binary, run again, be the process whose code Remap moves.
const childEnv = "HUGETEXT_TEST_CHILD"

// childResult is what the child reports of its Remap.
type childResult struct {
	Report                Report
	Err, Again            string
	Unavailable           bool
	AfterPerms, AfterPath string  // the mapping at Report.Start afterwards
	AfterEnd              uintptr // and its end
	Stack                 string  // a stack trace taken after the move
	Work                  int     // the result of work done after the move
}

// TestRemap: in a process of its own, Remap moves the code to anonymous read-and-execute
// memory at the same addresses, aligned to huge pages and covering Remap itself, or reports
// ErrUnavailable exactly when the kernel has transparent huge pages "never" or not at all.
// The process then runs on: goroutines, the garbage collector, a stack trace naming its
// functions; a second Remap finds the code moved and changes nothing.
func TestRemap(t *testing.T) {
	if os.Getenv(childEnv) != "" {
		remapChild()
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestRemap$", "-test.v=false")
	cmd.Env = append(os.Environ(), childEnv+"=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, stderr.String())
	}
	line, _, _ := bytes.Cut(out, []byte("\n"))
	var r childResult
	if err := json.Unmarshal(line, &r); err != nil {
		t.Fatalf("child output %q: %v", out, err)
	}
	enabled, readErr := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
	if readErr != nil || bytes.Contains(enabled, []byte("[never]")) {
		if !r.Unavailable {
			t.Fatalf("transparent huge pages %q (%v), yet Remap said %+v", enabled, readErr, r)
		}
		return
	}
	if r.Err != "" {
		t.Fatalf("Remap: %s", r.Err)
	}
	rep := r.Report
	if rep.Start%Size != 0 || rep.End%Size != 0 || rep.End <= rep.Start {
		t.Errorf("range %#x-%#x is not whole huge pages", rep.Start, rep.End)
	}
	if rep.HugeBytes%Size != 0 || rep.HugeBytes < 0 || rep.HugeBytes > int64(rep.End-rep.Start) {
		t.Errorf("%d bytes on huge pages in %#x-%#x", rep.HugeBytes, rep.Start, rep.End)
	}
	t.Logf("moved %#x-%#x, %d MiB on huge pages (transparent huge pages: %s)", rep.Start, rep.End, rep.HugeBytes>>20, bytes.TrimSpace(enabled))
	if r.AfterPerms != "r-xp" || r.AfterPath != "" || r.AfterEnd != rep.End {
		t.Errorf("mapping at the start afterwards: %s %q to %#x, want anonymous r-xp memory to %#x", r.AfterPerms, r.AfterPath, r.AfterEnd, rep.End)
	}
	if !strings.Contains(r.Again, "already moved") {
		t.Errorf("second Remap: %q, want the code found moved", r.Again)
	}
	if !strings.Contains(r.Stack, "hugetext.remapChild") {
		t.Errorf("stack trace after the move does not name its functions:\n%s", r.Stack)
	}
	if r.Work != 4*sumTo(10000) {
		t.Errorf("work after the move = %d", r.Work)
	}
}

// remapChild runs Remap in this process, works on and prints a childResult.
func remapChild() {
	var r childResult
	rep, err := Remap()
	r.Report = rep
	if errors.Is(err, ErrUnavailable) {
		r.Unavailable = true
	} else if err != nil {
		r.Err = err.Error()
	}
	if err == nil {
		if maps, err := readMaps(); err == nil {
			for _, m := range maps {
				if m.start == rep.Start {
					r.AfterPerms, r.AfterPath, r.AfterEnd = m.perms, m.path, m.end
				}
			}
		}
		_, again := Remap()
		if again != nil {
			r.Again = again.Error()
		}
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := sumTo(10000)
			mu.Lock()
			r.Work += s
			mu.Unlock()
		}()
	}
	wg.Wait()
	runtime.GC()
	r.Stack = string(debug.Stack())
	b, _ := json.Marshal(r)
	os.Stdout.Write(append(b, '\n'))
	os.Exit(0)
}

//go:noinline
func sumTo(n int) int {
	s := 0
	for i := 1; i <= n; i++ {
		s += i
	}
	return s
}
