package jsonx

import (
	"math/bits"
	"unsafe"
)

// StringIndex is where the strings of a JSON text end, found a block at a time before a
// walk reads them: for each 64-byte block from an offset on, the mask of its quotes that
// are not escaped and that of its backslashes. A walk that reads a text token by token
// from that offset on (every byte outside a string read as a token) meets each string at
// a quote of the index, and the string ends at the index's next quote, a bit search
// instead of a scan of its bytes: SkipStringIn and StrIn read a string so. Its memory is
// reused by the next Build. The zero value is empty: the methods then read as the
// Scanner does.
type StringIndex struct {
	from, base int      // the offset built from, and its block's
	words      []uint64 // two a block from base: quotes not escaped, backslashes
}

// Build indexes s from offset from on, which must be outside any string. It reports
// whether the index holds; it does not, and is empty, when s from there on holds a byte
// below 0x20 (whitespace between tokens too: the index is for compact texts), a
// backslash before a byte JSON does not allow after one, or a \u escape without four hex
// digits: a text the Scanner alone reads (to its error, or through its whitespace).
func (x *StringIndex) Build(s string, from int) bool {
	x.words = x.words[:0]
	if from < 0 || from >= len(s) {
		return false
	}
	base := from &^ (blockSize - 1)
	n := (len(s) - base + blockSize - 1) / blockSize * 2
	if cap(x.words) < n {
		x.words = make([]uint64, 0, n)
	}
	words := x.words[:n]
	var carry uint64
	for blk := base; blk < len(s); {
		var k int
		var look, ctrl uint64
		if whole := (len(s) - blk) &^ (blockSize - 1); blk >= from && whole > 0 {
			// At most buildRun bytes a call: a text with whitespace between its tokens
			// (pretty-printed) is refused after its first run, not at its end.
			whole = min(whole, buildRun)
			k, carry, look, ctrl = indexBlocks(unsafe.StringData(s[blk:]), whole, &words[(blk-base)/blockSize*2], carry)
		} else {
			// The first block, from inside it, or the last, partial one: from a copy, with
			// spaces for the bytes before from and past the end.
			var b [blockSize]byte
			for j := range b {
				b[j] = ' '
			}
			lo := max(from-blk, 0)
			copy(b[lo:], s[blk+lo:])
			k, carry, look, ctrl = indexBlocks(&b[0], blockSize, &words[(blk-base)/blockSize*2], carry)
		}
		if ctrl != 0 {
			return false
		}
		if blk += k; look != 0 {
			// The escaped bytes to look at of the block before blk: each must be a u with
			// four hex digits after it.
			for ; look != 0; look &= look - 1 {
				i := blk - blockSize + bits.TrailingZeros64(look)
				if i+4 >= len(s) || s[i] != 'u' || !isHex(s[i+1]) || !isHex(s[i+2]) || !isHex(s[i+3]) || !isHex(s[i+4]) {
					return false
				}
			}
		}
	}
	x.from, x.base, x.words = from, base, words
	return true
}

// Cap is the number of words the index's memory holds (two a 64-byte block).
func (x *StringIndex) Cap() int { return cap(x.words) }

// buildRun is the most Build reads in one call of its kernel: a text it refuses for a
// byte below 0x20 costs it at most this much more.
const buildRun = 4096

// quoteFrom returns the offset of the index's first quote at or after i, which is at or
// after its from, or -1 if there is none.
func (x *StringIndex) quoteFrom(i int) int {
	b := uint(i-x.base) / blockSize * 2 // unsigned: a shift
	words := x.words
	if b >= uint(len(words)) {
		return -1
	}
	if w := words[b] >> (i & (blockSize - 1)); w != 0 {
		return i + bits.TrailingZeros64(w)
	}
	for b += 2; b < uint(len(words)); b += 2 {
		if w := words[b]; w != 0 {
			return x.base + int(b/2*blockSize) + bits.TrailingZeros64(w)
		}
	}
	return -1
}

// escapes reports whether s[i:end] holds a backslash, by the index (x.from <= i <= end).
func (x *StringIndex) escapes(i, end int) bool {
	b, last := uint(i-x.base)/blockSize*2+1, uint(end-x.base)/blockSize*2+1 // unsigned: shifts
	words := x.words
	if last >= uint(len(words)) || b > last {
		return true // not so for an index kept to; read as escaped, which holds for any
	}
	w := words[b] &^ (1<<(i&(blockSize-1)) - 1)
	for b < last {
		if w != 0 {
			return true
		}
		b += 2
		w = words[b]
	}
	return w&(1<<(end&(blockSize-1))-1) != 0
}

// SkipStringIn is SkipString by x, an index of the Scanner's input that holds (Build
// reported true) and that the walk to the cursor kept to (see StringIndex): the string
// at the cursor ends at the index's next quote. A cursor before x's offset, or an empty
// x, is read by SkipString.
func (sc *Scanner) SkipStringIn(x *StringIndex) bool {
	if len(x.words) == 0 || sc.i < x.from {
		return sc.SkipString()
	}
	end := x.quoteFrom(sc.i + 1)
	if end < 0 {
		return sc.fail()
	}
	sc.i = end + 1
	return true
}

// StrIn is Str by x, as SkipStringIn: the string's value, decoded when the index has a
// backslash in it.
func (sc *Scanner) StrIn(x *StringIndex) (string, bool) {
	if len(x.words) == 0 || sc.i < x.from {
		return sc.Str()
	}
	start := sc.i + 1
	// A string that ends in its first block (a role, an id, a name): one word each for
	// its end and its backslashes.
	if b := uint(start-x.base) / blockSize * 2; b+1 < uint(len(x.words)) {
		if q := x.words[b] >> (start & (blockSize - 1)); q != 0 {
			n := bits.TrailingZeros64(q)
			if x.words[b+1]>>(start&(blockSize-1))&(1<<n-1) == 0 {
				sc.i = start + n + 1
				return sc.s[start : start+n], true
			}
		}
	}
	end := x.quoteFrom(start)
	if end < 0 {
		return "", sc.fail()
	}
	sc.i = end + 1
	if !x.escapes(start, end) {
		return sc.s[start:end], true
	}
	return sc.unescape(sc.s[start:end], len(sc.s)-start), true
}
