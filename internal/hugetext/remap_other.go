//go:build !linux

package hugetext

// Remap reports ErrUnavailable: transparent huge pages are Linux's.
func Remap() (Report, error) { return Report{}, ErrUnavailable }
