//go:build !race

package archtest

// raceBuild reports whether the test binary was built with -race.
const raceBuild = false
