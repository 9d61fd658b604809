//go:build !race

package openaichat

const raceEnabled = false
