//go:build !linux

package main

import "time"

// startPagesDelay is when main calls dropStartPages after listening.
const startPagesDelay = time.Second

// dropStartPages does nothing off Linux.
func dropStartPages() int64 { return 0 }
