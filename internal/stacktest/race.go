//go:build race

package stacktest

// Race is set under the race detector, whose instrumentation makes frames larger: a
// stack test's bounds hold only without it.
const Race = true
