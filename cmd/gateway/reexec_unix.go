//go:build unix

package main

import (
	"os"
	"syscall"
)

// reexecTuned replaces the process with the same program, arguments and environment
// plus sysmonSetting in GODEBUG (see tunedEnv), which the runtime reads only at start. It
// returns only when there is nothing to do or the exec failed; the gateway then runs with
// the runtime's defaults.
func reexecTuned() {
	env, ok := tunedEnv(os.Environ())
	if !ok {
		return
	}
	exe, err := os.Executable()
	if err != nil {
		return
	}
	_ = syscall.Exec(exe, os.Args, env)
}
