package main

import (
	"fmt"
	"runtime"
	"runtime/metrics"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// awakeKeeper is the running tuningAwake: one more processor (P) than the runtime would
// have had, and a goroutine that keeps one P busy sleeping while the process is idle, so that
// the runtime never finds every P idle and its system monitor never parks (sysmon.go).
//
// The goroutine sleeps in system calls made raw (unix.RawSyscall, not through the
// runtime's entersyscall): epoll_pwait on an epoll instance of its own that watches
// nothing, with a timeout, which needs no pointer from Go (no unsafe) and exists on every
// Linux architecture Go supports; so the runtime sees a goroutine running, not one blocked
// in a system call: the monitor never takes its P back (which would reset the monitor's
// tick to 20 µs) and never counts it idle. Each sleep is shorter than the 10 ms after
// which the monitor would preempt it, and between two sleeps it yields (runtime.Gosched),
// so the monitor sees it rescheduled and its P's run queue is served. Timers on the P it
// sleeps on are run by the other Ps as for any running P (the scheduler steals timers from
// them, and an idle thread's network poll ends at the earliest timer of every P;
// runtime/proc.go stealWork, checkTimersNoP). A stop of the world (the garbage collector's) interrupts the sleep with the
// runtime's preemption signal, so it waits for it no longer than for any goroutine.
//
// It steps aside when goroutines wait for a P: a P held in a raw sleep is one they cannot
// use (goroutines queued on it wait to be stolen). After each yield it reads the runtime's
// count of goroutines runnable (runtime/metrics, approximate; see stepAside): with any
// queued it sleeps one period on a runtime timer instead, its P free for the others, and
// counts that in asides. Other goroutines merely running do not make it step aside: the
// gateway still has as many Ps as without the keeper, and a keeper that stepped aside
// whenever the gateway ran let the monitor park between a busy gateway's requests as with
// no tuning (PERFORMANCE.md, the keeper at full load).
type awakeKeeper struct {
	// procs is GOMAXPROCS as the keeper set it: the runtime's choice at start plus one.
	procs int
	// naps counts the raw sleeps done (the P kept): one a period while the process is idle.
	naps atomic.Uint64
	// asides counts the periods slept on a runtime timer (the P free) because goroutines
	// were queued for a P.
	asides atomic.Uint64
	stop   chan struct{}
	done   chan struct{}
}

// epollNoEvents is the maxevents of the keeper's epoll_pwait: the kernel wants at least
// one, and with nothing watched writes none, so the events pointer is NULL.
const epollNoEvents = 1

// metricRunnable is the runtime/metric the keeper reads after each yield to tell whether
// goroutines wait for a P.
const metricRunnable = "/sched/goroutines/runnable:goroutines"

// stepAside is the keeper's rule, after each yield: sleep the next period on a runtime
// timer, its P free, when any goroutine is runnable (queued for a P), and keep its P in a
// raw sleep otherwise, however many other goroutines are running. The counts are the
// runtime's, read without stopping the world, so approximate: a goroutine queued just
// after the check waits for another P to steal it, as for any busy P.
func stepAside(runnable uint64) bool {
	return runnable > 0
}

// startAwake raises GOMAXPROCS by one and starts the keeper's goroutine, sleeping period
// (whole milliseconds; awakePeriod but in tests) at a time. The extra P is the one the
// goroutine keeps, so the gateway's goroutines have as many Ps as before. It fixes
// GOMAXPROCS for the life of the process: the runtime no longer follows a change of the
// container's CPU limit (which it checks once a second otherwise). It returns an error,
// having changed nothing, if it cannot make its epoll instance.
func startAwake(period time.Duration) (*awakeKeeper, error) {
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("runtime tuning awake: epoll_create1: %w", err)
	}
	k := &awakeKeeper{procs: runtime.GOMAXPROCS(0) + 1, stop: make(chan struct{}), done: make(chan struct{})}
	runtime.GOMAXPROCS(k.procs)
	go k.run(epfd, period)
	return k, nil
}

// run is the keeper's loop until Stop.
func (k *awakeKeeper) run(epfd int, period time.Duration) {
	defer close(k.done)
	defer unix.Close(epfd)
	timeout := uintptr(period.Milliseconds())
	sched := []metrics.Sample{{Name: metricRunnable}}
	aside := time.NewTimer(period)
	aside.Stop()
	for {
		select {
		case <-k.stop:
			return
		default:
		}
		runtime.Gosched()
		metrics.Read(sched)
		if stepAside(schedCount(sched[0])) {
			k.asides.Add(1)
			aside.Reset(period)
			select {
			case <-k.stop:
				aside.Stop()
				return
			case <-aside.C:
			}
			continue
		}
		// An error (EINTR: a signal, the runtime's preemption among them) ends the
		// sleep early; the next one starts after the checks above.
		unix.RawSyscall6(unix.SYS_EPOLL_PWAIT, uintptr(epfd), 0, epollNoEvents, timeout, 0, 0)
		k.naps.Add(1)
	}
}

// schedCount is the value of one of the keeper's samples, 0 if the runtime does not
// know the metric (it then never steps aside on it).
func schedCount(s metrics.Sample) uint64 {
	if s.Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s.Value.Uint64()
}

// Stop ends the keeper's goroutine, within one of its sleeps, and waits for it. GOMAXPROCS
// stays as it is.
func (k *awakeKeeper) Stop() {
	close(k.stop)
	<-k.done
}
