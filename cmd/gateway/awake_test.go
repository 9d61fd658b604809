//go:build linux

package main

import (
	"encoding/json"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestAwakeKeeper: the keeper adds one P, sleeps again and again, lets the garbage
// collector stop the world at once however long its sleep (the runtime's preemption
// signal ends it), and stops.
func TestAwakeKeeper(t *testing.T) {
	before := runtime.GOMAXPROCS(0)
	defer runtime.GOMAXPROCS(before)

	k, err := startAwake(time.Second) // a sleep far longer than any wait the test allows
	if err != nil {
		t.Fatal(err)
	}
	if got := runtime.GOMAXPROCS(0); got != before+1 || k.procs != got {
		t.Errorf("GOMAXPROCS = %d (keeper says %d), want %d", got, k.procs, before+1)
	}
	time.Sleep(20 * time.Millisecond) // the keeper is in its first sleep
	start := time.Now()
	for range 5 {
		runtime.GC() // two stops of the world each
	}
	if took := time.Since(start); took > 500*time.Millisecond {
		t.Errorf("5 collections took %v with the keeper asleep: the stop of the world waited for its sleep", took)
	}
	k.Stop()
	if got := runtime.GOMAXPROCS(0); got != before+1 {
		t.Errorf("after Stop, GOMAXPROCS = %d, want %d (kept)", got, before+1)
	}

	k, err = startAwake(time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	defer k.Stop()
	deadline := time.Now().Add(2 * time.Second)
	for k.naps.Load() < 3 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if n := k.naps.Load(); n < 3 {
		t.Errorf("the keeper slept %d times in 2 s of 1 ms sleeps", n)
	}
}

// threadSyscalls returns what each thread of process pid is in: the lines of
// /proc/<pid>/task/<tid>/syscall (the system call's number and arguments, "running" if
// none).
func threadSyscalls(t *testing.T, pid int) []string {
	t.Helper()
	dir := "/proc/" + strconv.Itoa(pid) + "/task"
	tids, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, tid := range tids {
		b, err := os.ReadFile(dir + "/" + tid.Name() + "/syscall")
		if err != nil {
			continue // the thread ended
		}
		out = append(out, strings.TrimSpace(string(b)))
	}
	return out
}

// TestAwakeDefault: by default the gateway runs the awake tuning, and it shows. The start
// line says "awake" and GOMAXPROCS one more than asked for; one thread sleeps in the
// keeper's epoll_pwait (on its own epoll instance, no events buffer, 8 ms) and the
// runtime's monitor does not park: while the gateway is idle a thread of it is in
// nanosleep (the monitor's tick) nearly all the time, where with -runtime-tuning off the
// monitor parks in a futex and no thread is in nanosleep. Every line on stdout and stderr
// is the log format.
func TestAwakeDefault(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the gateway binary")
	}
	_, bin := imageBinary(t)
	path := gatewayConfig(t)
	env := []string{"PATH=" + os.Getenv("PATH"), "ALICE_KEY=alice-secret", "GOMAXPROCS=2"}
	keeperCall := strconv.Itoa(unix.SYS_EPOLL_PWAIT) + " "
	isKeeper := func(call string) bool {
		// number, epfd, events NULL, maxevents 1, timeout in ms
		f := strings.Fields(call)
		return strings.HasPrefix(call, keeperCall) && len(f) > 4 && f[2] == "0x0" && f[3] == "0x1" &&
			f[4] == "0x"+strconv.FormatInt(awakePeriod.Milliseconds(), 16)
	}
	monitorCall := strconv.Itoa(unix.SYS_NANOSLEEP) + " "
	// seen polls the threads for up to 2 s until want holds for one sample; it returns the
	// last sample.
	seen := func(pid int, want func(calls []string) bool) ([]string, bool) {
		var calls []string
		for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
			if calls = threadSyscalls(t, pid); want(calls) {
				return calls, true
			}
		}
		return calls, false
	}

	for _, tt := range []struct {
		name      string
		args      []string
		wantField string
		wantProcs float64
		awake     bool
	}{
		{name: "default", wantField: "awake", wantProcs: 3, awake: true},
		{name: "off", args: []string{"-runtime-tuning", "off"}, wantField: "off", wantProcs: 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := startReplicaWith(t, bin, append([]string{"-config", path}, tt.args...), env)
			pid := r.cmd.Process.Pid
			for _, stream := range []bool{false, true} {
				if code, _ := r.chat(t, "hi", stream); code != 200 {
					t.Errorf("chat (stream %v): status %d, want 200", stream, code)
				}
			}
			if got := startLine(t, r); got != tt.wantField { // and every line JSON
				t.Errorf("start line runtime_tuning = %q, want %q", got, tt.wantField)
			}
			if got := startField(t, r, "gomaxprocs"); got != tt.wantProcs {
				t.Errorf("start line gomaxprocs = %v, want %v", got, tt.wantProcs)
			}
			inSleep := func(calls []string) bool {
				return slices.ContainsFunc(calls, func(c string) bool { return strings.HasPrefix(c, monitorCall) })
			}
			// Idle, the monitor that does not park spends its 10 ms ticks in nanosleep;
			// parked, it waits in a futex. 40 samples 5 ms apart, after 100 ms of idle.
			// Awake reads 36-40 on a quiet machine, 31 at load ~11 (a thread woken but
			// not yet run is "running", in no call); parked reads 0.
			time.Sleep(100 * time.Millisecond)
			asleep := 0
			for range 40 {
				if inSleep(threadSyscalls(t, pid)) {
					asleep++
				}
				time.Sleep(5 * time.Millisecond)
			}
			if tt.awake && asleep < 24 {
				t.Errorf("idle, a thread in nanosleep in %d of 40 samples, want at least 24 (the monitor not parked)", asleep)
			}
			if !tt.awake && asleep > 8 {
				t.Errorf("off, idle: a thread in nanosleep in %d of 40 samples, want at most 8 (the monitor parked)", asleep)
			}
			t.Logf("idle: a thread in nanosleep in %d of 40 samples", asleep)
			if !tt.awake {
				if slices.ContainsFunc(threadSyscalls(t, pid), isKeeper) {
					t.Errorf("off: a thread in the keeper's epoll_pwait")
				}
				return
			}
			if calls, found := seen(pid, func(calls []string) bool { return slices.ContainsFunc(calls, isKeeper) }); !found {
				t.Errorf("no thread in the keeper's epoll_pwait; threads: %q", calls)
			}
		})
	}
}

// startField returns the number in field of the gateway's "agate listening" line, -1 if
// the line or the field is missing.
func startField(t *testing.T, r *replica, field string) float64 {
	t.Helper()
	for _, line := range strings.Split(strings.TrimSpace(r.logs.String()), "\n") {
		var rec map[string]any
		if json.Unmarshal([]byte(line), &rec) != nil || rec["msg"] != "agate listening" {
			continue
		}
		if v, ok := rec[field].(float64); ok {
			return v
		}
	}
	return -1
}

// TestStepAside: the keeper's rule. It gives its P up only to goroutines queued for one;
// other goroutines running (a busy gateway between two requests) do not make it step aside,
// so the runtime's monitor does not park then.
func TestStepAside(t *testing.T) {
	for _, tt := range []struct {
		name     string
		runnable uint64
		want     bool
	}{
		{name: "idle, or others running with none queued: keep the P", runnable: 0, want: false},
		{name: "one goroutine queued: step aside", runnable: 1, want: true},
		{name: "many queued: step aside", runnable: 500, want: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := stepAside(tt.runnable); got != tt.want {
				t.Errorf("stepAside(runnable %d) = %v, want %v", tt.runnable, got, tt.want)
			}
		})
	}
}

// TestAwakeKeeperStepsAside: while the process is busy (more goroutines spinning than it has
// Ps) the keeper does not hold a P in its raw sleep: nearly every period it sleeps on a
// runtime timer instead (asides), its P free for the spinning goroutines; once they stop
// it keeps its P again (naps). Busy, the keeper gets a turn only when the monitor preempts
// a spinning goroutine (every 10 ms), so it counts few periods either way; the old keeper
// slept raw at every turn.
func TestAwakeKeeperStepsAside(t *testing.T) {
	before := runtime.GOMAXPROCS(0)
	defer runtime.GOMAXPROCS(before)
	k, err := startAwake(time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	defer k.Stop()

	// waitNaps waits up to 2 s for n more raw sleeps.
	waitNaps := func(n uint64) bool {
		from := k.naps.Load()
		for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
			if k.naps.Load() >= from+n {
				return true
			}
		}
		return false
	}
	if !waitNaps(5) {
		t.Fatalf("idle: the keeper slept raw %d times in 2 s of 1 ms periods", k.naps.Load())
	}

	var stop atomic.Bool
	var wg sync.WaitGroup
	for range k.procs + 1 { // more runnable goroutines than Ps: some always queued
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
			}
		}()
	}
	time.Sleep(20 * time.Millisecond) // the keeper's next checks see them
	naps0, asides0 := k.naps.Load(), k.asides.Load()
	start := time.Now()
	for deadline := start.Add(1500 * time.Millisecond); k.asides.Load() < asides0+5 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	naps, asides := k.naps.Load()-naps0, k.asides.Load()-asides0
	busy := time.Since(start)
	stop.Store(true)
	wg.Wait()
	t.Logf("busy %v: %d periods aside, %d raw sleeps", busy.Round(time.Millisecond), asides, naps)
	if asides < 5 {
		t.Errorf("busy: the keeper stepped aside %d times in %v, want 5", asides, busy)
	}
	if naps > 1 {
		t.Errorf("busy: the keeper held its P in %d raw sleeps against %d periods aside, want at most 1", naps, asides)
	}

	if !waitNaps(5) {
		t.Errorf("idle again: the keeper did not go back to its raw sleeps")
	}
}

// TestAwakeKeeperKeepsPWhileOthersRun: goroutines running with a P free for each (none
// queued) do not make the keeper step aside: it goes on with its raw sleeps, so a gateway
// busy between two requests keeps the monitor awake. (The rule before this one stepped
// aside after two checks in a row saw another goroutine running.)
func TestAwakeKeeperKeepsPWhileOthersRun(t *testing.T) {
	before := runtime.GOMAXPROCS(0)
	defer runtime.GOMAXPROCS(before)
	k, err := startAwake(time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	defer k.Stop()

	// Spinners leave one P for the keeper and one for the test's own goroutines.
	spinners := max(1, k.procs-2)
	stopSpinning := spin(spinners)
	time.Sleep(20 * time.Millisecond)
	naps0, asides0 := k.naps.Load(), k.asides.Load()
	start := time.Now()
	for deadline := start.Add(1500 * time.Millisecond); k.naps.Load() < naps0+10 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	naps, asides := k.naps.Load()-naps0, k.asides.Load()-asides0
	busy := time.Since(start)
	stopSpinning()
	t.Logf("%d spinning on %d Ps for %v: %d raw sleeps, %d periods aside", spinners, k.procs, busy.Round(time.Millisecond), naps, asides)
	if naps < 10 || asides > naps/2 {
		t.Errorf("others running, none queued: the keeper slept raw %d times and stepped aside %d times in %v, want at least 10 raw sleeps and at most half as many asides", naps, asides, busy)
	}
}

// spin starts n goroutines that run without blocking until the returned function is
// called; it waits for them to end.
func spin(n int) (stop func()) {
	var done atomic.Bool
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !done.Load() {
			}
		}()
	}
	return func() { done.Store(true); wg.Wait() }
}
