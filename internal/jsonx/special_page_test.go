//go:build linux

package jsonx

import (
	"strings"
	"syscall"
	"testing"
	"unsafe"
)

// guardedPage maps a page of memory followed by one without access, which the test's end
// unmaps: mem[:page] is readable and writable, and a read past it faults.
func guardedPage(t *testing.T) (mem []byte, page int) {
	t.Helper()
	page = syscall.Getpagesize()
	mem, err := syscall.Mmap(-1, 0, 2*page, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Munmap(mem) })
	if err := syscall.Mprotect(mem[page:], syscall.PROT_NONE); err != nil {
		t.Fatal(err)
	}
	return mem, page
}

// TestLiteralMasks_PageEnd: a literal that ends where readable memory ends (the page
// after it is mapped without access) is read without a fault and as a copy of it is,
// for every length up to two blocks; and one that ends inside a page is read in place.
func TestLiteralMasks_PageEnd(t *testing.T) {
	mem, page := guardedPage(t)
	// Whatever follows a literal in its page is read and must leave no mark: the page is
	// filled with bytes that all would.
	copy(mem[:page], strings.Repeat(`"\<u/`+"\x01\xff", page/7+1))
	text := strings.Repeat(`ab\"c<\u00e9/\\é`, 20)
	for n := 1; n <= 2*blockSize; n++ {
		for _, end := range []int{page, page - 7} { // at the guard page, and before it
			lit := mem[end-n : end]
			copy(lit, text[:n])
			s := unsafe.String(&lit[0], n)
			for base := 0; base < n; base += blockSize {
				wu, wbs, wchg := naiveLiteralMasks(text[:n], base)
				if u, bs, chg := literalMasks(s, base); u != wu || bs != wbs || chg != wchg {
					t.Fatalf("literalMasks(%q, %d) at page end-%d = %064b %064b %064b, want %064b %064b %064b",
						s, base, page-end, u, bs, chg, wu, wbs, wchg)
				}
			}
		}
	}
}

// TestAppendDecoded_PageEnd: a string whose last, partial block ends where readable memory
// ends is decoded from a copy without a fault, and one that ends inside a page is decoded
// in place, the bytes after it (backslashes, \u escapes, escaped letters) leaving no
// mark; for every length up to three blocks, each as encoding/json decodes it.
func TestAppendDecoded_PageEnd(t *testing.T) {
	mem, page := guardedPage(t)
	filler := strings.Repeat(`\\u00e9\n\"\`, page/12+1)[:page]
	text := strings.Repeat(`{\"a\":\"b\\c\n\u003e\"},`, 12)
	for n := 1; n <= 3*blockSize; n++ {
		lit := text[:n]
		want := decodeString(`"` + lit + `"`)
		if strings.HasPrefix(want, "<invalid") {
			continue // cut inside an escape
		}
		for _, end := range []int{page, page - 7} { // at the guard page, and before it
			copy(mem[:page], filler) // what the last string left after this one's end
			at := mem[end-n : end]
			copy(at, lit)
			if got := AppendDecoded(nil, unsafe.String(&at[0], n)); string(got) != want {
				t.Fatalf("AppendDecoded(%q) at page end-%d = %q, encoding/json %q", lit, page-end, got, want)
			}
		}
	}
}

// TestAppendLiteral_PageEnd: a literal whose last, partial block ends where readable
// memory ends is read from a copy without a fault, and one that ends inside a page is
// read in place, the bytes after it (backslashes, quotes, '<', escaped letters) leaving
// no mark; for every length up to three blocks, each written as AppendString writes its
// value.
func TestAppendLiteral_PageEnd(t *testing.T) {
	mem, page := guardedPage(t)
	filler := strings.Repeat(`\\u00e9<\/"\`+"\x01\xff", page/13+1)[:page]
	for _, text := range []string{
		strings.Repeat(`{\"a\":\"b\\c\n\"},`, 12),
		strings.Repeat(`x<y & \u00e9\/z`, 16),
	} {
		for n := 1; n <= 3*blockSize; n++ {
			lit := text[:n]
			value := decodeString(`"` + lit + `"`)
			if strings.HasPrefix(value, "<invalid") {
				continue // cut inside an escape
			}
			want := string(AppendString(nil, value))
			for _, end := range []int{page, page - 7} { // at the guard page, and before it
				copy(mem[:page], filler)
				at := mem[end-n : end]
				copy(at, lit)
				if got := AppendLiteral(nil, unsafe.String(&at[0], n)); string(got) != want {
					t.Fatalf("AppendLiteral(%q) at page end-%d = %s, want %s", lit, page-end, got, want)
				}
			}
		}
	}
}
