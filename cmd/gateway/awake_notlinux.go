//go:build !linux

package main

import "time"

// awakeKeeper is tuningAwake's keeper, which runs only on Linux.
type awakeKeeper struct{ procs int }

// startAwake starts nothing off Linux: the gateway runs with the runtime's defaults.
func startAwake(time.Duration) (*awakeKeeper, error) { return nil, nil }

// Stop does nothing.
func (k *awakeKeeper) Stop() {}
