// Package hugetext moves the running program's machine code onto transparent huge pages.
//
// A gateway runs a long path of code for every request: the HTTP server and client, the
// parser, the translator, metrics and the access log, spread over some 8 MB of text. Mapped
// in 4 KiB pages, each request touches a hundred or more of them, and on a busy machine
// (other processes, other cores) their translations have left the TLB between one request
// and the next: every page costs a page walk, which on a virtual machine is itself a chain
// of memory accesses. On 2 MiB pages the same code is four TLB entries.
//
// Linux maps an executable's code from its file in 4 KiB pages unless the kernel was built
// with CONFIG_READ_ONLY_THP_FOR_FS; anonymous memory can have huge pages whenever
// transparent huge pages are "always" or "madvise". Remap therefore copies the code into
// anonymous memory advised for huge pages and moves that memory over the original
// mapping, at the same addresses: the program, its stack traces and its profiles see the
// same code at the same places.
//
// What it costs: the moved code is private memory, resident from the start (about the size
// of the text, instead of the pages of it used so far) and not shared with other processes
// running the same file. The last huge page may take in the start of the read-only data
// after the code, which then becomes executable as well (never writable). Tools that map
// addresses to the file through /proc/<pid>/maps, such as perf, no longer find the file for
// the moved range; Go's own profiler is not affected.
package hugetext

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
)

// Size is the size of a huge page on the platforms Remap supports (x86-64, arm64 with 4
// KiB base pages).
const Size = 2 << 20

// ErrUnavailable reports that the kernel has no transparent huge pages for the program:
// not Linux, transparent huge pages disabled ("never") or absent.
var ErrUnavailable = errors.New("hugetext: transparent huge pages are not available")

// Report is what Remap did: the code in [Start, End) now lies in anonymous memory, of which
// HugeBytes are backed by huge pages (0 if the kernel had none free).
type Report struct {
	Start, End uintptr
	HugeBytes  int64
}

// mapping is one line of /proc/<pid>/maps: the range [start, end), its permissions
// ("r-xp"), the offset in the mapped file and the file's path ("" for anonymous memory).
type mapping struct {
	start, end uintptr
	perms      string
	offset     uint64
	path       string
}

// parseMaps parses the text of /proc/<pid>/maps. Each line is "start-end perms offset dev
// inode [path]", the addresses and offset in hexadecimal; the path runs to the end of the
// line and may contain spaces. Lines are in address order and do not overlap; a line
// breaking that, or any other form, is an error.
func parseMaps(b []byte) ([]mapping, error) {
	var maps []mapping
	for n := 1; len(b) > 0; n++ {
		line := b
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			line, b = b[:i], b[i+1:]
		} else {
			b = nil
		}
		if len(line) == 0 {
			continue
		}
		m, err := parseMapping(line)
		if err != nil {
			return nil, fmt.Errorf("hugetext: maps line %d: %w", n, err)
		}
		if k := len(maps); k > 0 && m.start < maps[k-1].end {
			return nil, fmt.Errorf("hugetext: maps line %d: out of order", n)
		}
		maps = append(maps, m)
	}
	return maps, nil
}

func parseMapping(line []byte) (mapping, error) {
	var f [5][]byte
	rest := line
	for i := range f {
		rest = bytes.TrimLeft(rest, " ")
		j := bytes.IndexByte(rest, ' ')
		if j < 0 {
			if i < len(f)-1 {
				return mapping{}, errors.New("too few fields")
			}
			j = len(rest)
		}
		f[i], rest = rest[:j], rest[j:]
	}
	lo, hi, ok := bytes.Cut(f[0], []byte{'-'})
	if !ok {
		return mapping{}, errors.New("no address range")
	}
	start, err1 := strconv.ParseUint(string(lo), 16, 64)
	end, err2 := strconv.ParseUint(string(hi), 16, 64)
	off, err3 := strconv.ParseUint(string(f[2]), 16, 64)
	if err := errors.Join(err1, err2, err3); err != nil {
		return mapping{}, err
	}
	if start >= end {
		return mapping{}, errors.New("empty address range")
	}
	if len(f[1]) != 4 {
		return mapping{}, errors.New("permissions are not 4 characters")
	}
	return mapping{start: uintptr(start), end: uintptr(end), perms: string(f[1]), offset: off,
		path: string(bytes.TrimLeft(rest, " "))}, nil
}

// span returns the range [lo, hi), aligned to huge pages, to move for the code mapping that
// holds pc: that mapping widened to the huge pages around it where the memory it takes in
// is mapped from the same file, readable and never writable (the whole range becomes
// read-and-execute), otherwise narrowed to the huge pages within it. It fails if pc is not
// in a file's executable mapping (as after an earlier Remap) or if no whole huge page
// remains.
func span(maps []mapping, pc uintptr) (lo, hi uintptr, err error) {
	i := -1
	for k, m := range maps {
		if m.start <= pc && pc < m.end {
			i = k
			break
		}
	}
	if i < 0 {
		return 0, 0, errors.New("hugetext: the code address is not mapped")
	}
	code := maps[i]
	if code.perms != "r-xp" || code.path == "" {
		return 0, 0, fmt.Errorf("hugetext: the code is not in an executable file mapping (%s %q): already moved?", code.perms, code.path)
	}
	lo, hi = code.start&^(Size-1), (code.end+Size-1)&^(Size-1)
	if !readOnlyFile(maps, i, lo, code.start) {
		lo = (code.start + Size - 1) &^ (Size - 1)
	}
	if !readOnlyFile(maps, i, code.end, hi) {
		hi = code.end &^ (Size - 1)
	}
	if hi <= lo {
		return 0, 0, errors.New("hugetext: the code holds no whole huge page")
	}
	return lo, hi, nil
}

// readOnlyFile reports whether [a, b) is covered, without a gap, by mappings of the file of
// maps[i] that are readable and not writable.
func readOnlyFile(maps []mapping, i int, a, b uintptr) bool {
	for _, m := range maps {
		if a >= b {
			break
		}
		if m.end <= a || m.start > a {
			continue
		}
		if m.path != maps[i].path || m.perms[0] != 'r' || m.perms[1] == 'w' {
			return false
		}
		a = m.end
	}
	return a >= b
}
