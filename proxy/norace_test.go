//go:build !race

package proxy

// raceEnabled: under the race detector, sync.Pool drops some of what it is given.
const raceEnabled = false
