package translate_test

import (
	"testing"
	"unsafe"

	"github.com/agate-gateway/agate/translate"
)

// TestPart_Small pins the size of a content part: every client parser allocates one per
// part of every message, so an inline field on Part is paid by every request (the parse
// benchmarks' budget, issue 11). Rare per-part data goes behind a pointer (Part.Media).
func TestPart_Small(t *testing.T) {
	const max = 56 // Type, Text, Media, Item, CacheControl on 64-bit
	if n := unsafe.Sizeof(translate.Part{}); n > max {
		t.Errorf("translate.Part is %d bytes, want at most %d: put rare fields behind a pointer", n, max)
	}
}
