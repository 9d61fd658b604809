//go:build !unix

package main

// reexecTuned does nothing where the process cannot replace itself: the gateway runs
// with the runtime's defaults.
func reexecTuned() {}
