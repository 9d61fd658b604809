//go:build !linux

package main

// dropStartPages does nothing off Linux.
func dropStartPages() int64 { return 0 }
