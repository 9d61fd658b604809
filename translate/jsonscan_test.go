package translate

import (
	"testing"
)

// BenchmarkValidJSON is the scanner alone over the ParseRequest benchmark body.
func BenchmarkValidJSON(b *testing.B) {
	body := geminiBenchRequest(b)
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if !validJSON(body) {
			b.Fatal("invalid")
		}
	}
}
