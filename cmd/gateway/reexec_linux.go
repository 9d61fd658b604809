package main

import (
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// reexecTuned replaces the process with the same program, arguments and environment, plus
// sysmonSetting in GODEBUG (see tunedEnv), which the runtime reads only at start; the PID
// stays. It does so only for tuningSchedtrace and only while schedtraceQuiet says the
// runtime prints nothing at start. It returns when there is nothing to do or the exec
// failed; the gateway then runs with the runtime's defaults (tuningInForce says so).
func reexecTuned(tuning string) {
	if tuning != tuningSchedtrace {
		return
	}
	env, ok := tunedEnv(os.Environ())
	if !ok || !schedtraceQuiet(monotonic()) {
		return
	}
	exe, err := os.Executable()
	if err != nil {
		return
	}
	_ = syscall.Exec(exe, os.Args, env)
}

// monotonic reads the clock the runtime's monitor compares schedtrace with (CLOCK_MONOTONIC,
// the time since the host booted), or 0 if it cannot be read.
func monotonic() time.Duration {
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts) != nil {
		return 0
	}
	return time.Duration(ts.Nano())
}
