//go:build race

package openaichat

// raceEnabled: the race detector's instrumentation makes frames larger.
const raceEnabled = true
