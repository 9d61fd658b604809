//go:build !linux

package main

// reexecTuned does nothing off Linux: the gateway runs with the runtime's defaults.
func reexecTuned(string) {}
