package ledger

import "runtime"

// timedWrite runs fn, the writer's work of one wake-up, and tells OnWriteCPU of the CPU
// time it took: fn runs with the writer's goroutine locked to its OS thread, whose CPU
// clock is read before and after (threadCPU: two system calls a wake-up, on Linux;
// elsewhere nothing is measured). The time is the writer's own: building the rows,
// the driver's binding, the database library's work (SQLite runs inside it), the
// rollups, the commit and its system calls, and the garbage collection its allocations
// are charged. Work a driver hands to another goroutine is not in it (pgx encodes a
// COPY's rows on one).
func (l *Ledger) timedWrite(fn func()) {
	if l.opts.OnWriteCPU == nil {
		fn()
		return
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	t0, ok := threadCPU()
	fn()
	if t1, ok1 := threadCPU(); ok && ok1 && t1 > t0 {
		l.opts.OnWriteCPU(t1 - t0)
	}
}
