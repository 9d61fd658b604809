//go:build !linux

package main

// awakeKeeper is tuningAwake's keeper, which runs only on Linux.
type awakeKeeper struct{ procs int }

// startAwake starts nothing off Linux: the gateway runs with the runtime's defaults.
func startAwake() (*awakeKeeper, error) { return nil, nil }

// Stop does nothing.
func (k *awakeKeeper) Stop() {}
