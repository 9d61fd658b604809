package main

import (
	"fmt"
	"strings"
	"time"
)

// How the gateway keeps the Go runtime's system monitor (sysmon) from parking whenever every
// processor is idle. By default the runtime parks it then, and the next goroutine to enter a
// system call wakes it; a wake by a system call resets the monitor's tick to 20 µs, and it
// ticks some fifty times (about a millisecond) before backing off: between two requests at
// moderate load (1000 a second on two cores, scenario a of ../shared/bench) that is a futex
// wake and sleep and a few nanosleeps of its thread, some three context switches a request.
// While the monitor does not park, its tick backs off to 10 ms when it finds nothing to do:
// about a hundred wake-ups a second however many requests there are. What it does on its
// ticks (taking a processor back from a goroutine blocked in a system call, preempting one
// that has run for 10 ms) it then does up to 10 ms later than it would have, for a server
// whose system calls are non-blocking network I/O.
//
// The runtime parks the monitor only when every processor (P) is idle and GODEBUG sets no
// schedtrace (runtime/proc.go, sysmon). The tunings:
const (
	// tuningAwake (the default) keeps one P out of the idle list: one P more than the
	// runtime would have had, kept by a goroutine that sleeps in raw system calls while
	// the process is idle and steps aside while it is busy (awake_linux.go). Nothing is
	// re-executed and nothing is written; Linux only.
	tuningAwake = "awake"
	// tuningOff leaves the runtime at its defaults.
	tuningOff = "off"
	// tuningSchedtrace re-executes the process with sysmonSetting added to GODEBUG, which
	// the runtime reads only at start (reexec_linux.go). The runtime prints a scheduler
	// trace line on stderr, not in the log format, when the host's monotonic clock (its
	// uptime) reaches 24.8 days and every 24.8 days after that: the re-exec is skipped on a
	// host already up that long (schedtraceQuiet), so the line never comes at start, but a
	// gateway still running when its host's uptime passes the mark prints it. Opt-in.
	tuningSchedtrace = "schedtrace"
)

// awakePeriod is the length of one of the keeper's sleeps: short of the monitor's 10 ms
// preemption (which would interrupt it with a signal), and long enough that an idle
// gateway's keeper costs few wake-ups: 125 sleeps a second, each yield (runtime.Gosched
// wakes an idle thread to look for work) one more thread's wake and sleep: with the
// monitor's 100 ticks, an idle gateway makes about 450 context switches a second.
const awakePeriod = 8 * time.Millisecond

// envRuntimeTuning names the environment variable that chooses the tuning; the
// -runtime-tuning flag overrides it.
const envRuntimeTuning = "GATEWAY_RUNTIME_TUNING"

// schedtraceMax is schedtrace's largest value, the interval of its scheduler trace lines.
const schedtraceMax = 2147483647 * time.Millisecond

// sysmonSetting is the GODEBUG setting of tuningSchedtrace: the interval in milliseconds of
// a scheduler trace line on stderr. The monitor prints the first line on its first tick at
// which the monotonic clock, which counts from the host's boot, has reached the interval
// (runtime/proc.go: lasttrace starts at 0), then one an interval after the last.
const sysmonSetting = "schedtrace=2147483647"

// schedtraceQuietMargin is how far from schedtraceMax the uptime must be for the re-exec:
// the time from the check to the runtime's first tick after the exec, with room to spare.
const schedtraceQuietMargin = time.Minute

// schedtraceQuiet reports whether a runtime started now with sysmonSetting prints nothing
// at start: the host's uptime (the monotonic clock) is known and short of schedtraceMax.
func schedtraceQuiet(uptime time.Duration) bool {
	return uptime > 0 && uptime < schedtraceMax-schedtraceQuietMargin
}

// runtimeTuning returns the tuning named by flag (the -runtime-tuning flag's value, "" when
// not given), else by GATEWAY_RUNTIME_TUNING in environ (the last one), else tuningAwake. A
// value it does not know is an error naming the flag or the variable.
func runtimeTuning(flag string, environ []string) (string, error) {
	value, from := flag, "-runtime-tuning"
	if value == "" {
		value, from = lookup(environ, envRuntimeTuning, ""), envRuntimeTuning
	}
	switch value {
	case "":
		return tuningAwake, nil
	case tuningAwake, tuningSchedtrace, tuningOff:
		return value, nil
	}
	return "", fmt.Errorf("%s: unknown runtime tuning %q (want %s, %s or %s)", from, value, tuningAwake, tuningOff, tuningSchedtrace)
}

// godebugSchedtrace reports whether the GODEBUG in force in environ (the first one, as the
// runtime reads it) sets schedtrace, and its value.
func godebugSchedtrace(environ []string) (string, bool) {
	for _, kv := range environ {
		if v, ok := strings.CutPrefix(kv, "GODEBUG="); ok {
			for _, setting := range strings.Split(v, ",") {
				if s, ok := strings.CutPrefix(strings.TrimSpace(setting), "schedtrace="); ok {
					return s, true
				}
			}
			return "", false
		}
	}
	return "", false
}

// tunedEnv returns env with sysmonSetting added to GODEBUG, and true; or env and false
// when GODEBUG already sets schedtrace, as the operator's choice (schedtrace=0 keeps the
// runtime's default) or because the process was started with the setting. The other
// variables keep their order; only GODEBUG changes.
func tunedEnv(env []string) ([]string, bool) {
	if _, set := godebugSchedtrace(env); set {
		return env, false
	}
	out := make([]string, 0, len(env)+1)
	godebug, seen := "", false
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "GODEBUG="); ok {
			if !seen { // the first one is in force, as the runtime reads the environment
				godebug, seen = v, true
			}
			continue
		}
		out = append(out, kv)
	}
	if godebug != "" {
		godebug += ","
	}
	return append(out, "GODEBUG="+godebug+sysmonSetting), true
}

// keepAwake starts the keeper of tuningAwake when tuning asks for it and the GODEBUG in
// environ sets no schedtrace (the operator's choice wins, as for tuningSchedtrace). It
// returns nil when it starts nothing.
func keepAwake(tuning string, environ []string) (*awakeKeeper, error) {
	if tuning != tuningAwake {
		return nil, nil
	}
	if _, set := godebugSchedtrace(environ); set {
		return nil, nil
	}
	return startAwake(awakePeriod)
}

// tuningInForce is the start line's runtime_tuning field: "off", or, when GODEBUG sets
// schedtrace (by the re-exec or by the operator), "schedtrace=<value>" (schedtrace=0 is
// the runtime's default), or "awake" when keeper (tuningAwake's, nil if none) runs. With
// tuningSchedtrace asked for and no schedtrace in force (the re-exec was skipped or
// failed) it says "off (schedtrace skipped)"; with tuningAwake asked for and no keeper
// (off Linux, or it failed to start) "off (awake not started)".
func tuningInForce(tuning string, environ []string, keeper *awakeKeeper) string {
	if v, set := godebugSchedtrace(environ); set {
		return "schedtrace=" + v
	}
	switch {
	case keeper != nil:
		return tuningAwake
	case tuning == tuningSchedtrace:
		return tuningOff + " (schedtrace skipped)"
	case tuning == tuningAwake:
		return tuningOff + " (awake not started)"
	}
	return tuningOff
}
