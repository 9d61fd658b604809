package main

import "strings"

// sysmonSetting keeps the Go runtime's system monitor (sysmon) from parking whenever
// every processor is idle. By default it parks then, and the next goroutine to enter a
// system call wakes it: between two requests at moderate load (1000 a second on two
// cores, scenario a of ../shared/bench) that is a futex wake and a futex sleep of its
// thread, and a 20 µs tick or two in between, about five system calls and two context
// switches a request. With schedtrace set, the monitor never parks: its tick backs off
// to 10 ms while it finds nothing to do, about a hundred wake-ups a second however many
// requests there are. What it does on its ticks (taking a processor back from a
// goroutine blocked in a system call, preempting one that has run for 10 ms) it then
// does up to 10 ms later than it would have, for a server whose system calls are
// non-blocking network I/O.
//
// The value is schedtrace's largest, the interval in milliseconds of a scheduler trace
// line on stderr: one line is printed once the machine's monotonic clock (its uptime)
// passes 24.8 days, and every 24.8 days after that.
const sysmonSetting = "schedtrace=2147483647"

// tunedEnv returns env with sysmonSetting added to GODEBUG, and true; or env and false
// when GODEBUG already sets schedtrace, as the operator's choice (schedtrace=0 keeps the
// runtime's default) or because the process was started with the setting.
func tunedEnv(env []string) ([]string, bool) {
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
	for _, setting := range strings.Split(godebug, ",") {
		if strings.HasPrefix(strings.TrimSpace(setting), "schedtrace=") {
			return env, false
		}
	}
	if godebug != "" {
		godebug += ","
	}
	return append(out, "GODEBUG="+godebug+sysmonSetting), true
}
