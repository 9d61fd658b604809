package hugetext

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Remap moves the program's code onto huge pages (see the package comment) and reports the
// range it moved. It is meant to run once, early in main. On any error nothing has changed:
// ErrUnavailable when the kernel offers no transparent huge pages, another error when the
// code cannot be moved (already moved, too small, a system call refused).
//
// Other goroutines may run meanwhile: the move replaces the mapping in one system call,
// under the kernel's lock on the address space, and a thread that runs into the range
// while it is being replaced waits for that lock and then finds the same bytes.
func Remap() (Report, error) {
	enabled, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
	if err != nil || bytes.Contains(enabled, []byte("[never]")) {
		return Report{}, ErrUnavailable
	}
	maps, err := readMaps()
	if err != nil {
		return Report{}, err
	}
	code := codePointer()
	lo, hi, err := span(maps, uintptr(code))
	if err != nil {
		return Report{}, err
	}
	size := hi - lo
	// A fresh mapping one huge page larger than needed holds a huge-page-aligned range.
	tmp, err := unix.MmapPtr(-1, 0, nil, size+Size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return Report{}, fmt.Errorf("hugetext: mmap: %w", err)
	}
	head := int((uintptr(tmp)+Size-1)&^(Size-1) - uintptr(tmp))
	dst := unsafe.Add(tmp, head)
	src := unsafe.Add(code, int(lo)-int(uintptr(code)))
	release := func() {
		// The parts of the fresh mapping around dst, and dst itself unless it was moved.
		_ = unix.MunmapPtr(tmp, uintptr(head))
		_ = unix.MunmapPtr(unsafe.Add(dst, int(size)), Size-uintptr(head))
	}
	fresh := unsafe.Slice((*byte)(dst), size)
	if err := unix.Madvise(fresh, unix.MADV_HUGEPAGE); err != nil {
		release()
		_ = unix.MunmapPtr(dst, size)
		return Report{}, fmt.Errorf("hugetext: madvise: %w", err)
	}
	copy(fresh, unsafe.Slice((*byte)(src), size))
	if err := unix.Mprotect(fresh, unix.PROT_READ|unix.PROT_EXEC); err != nil {
		release()
		_ = unix.MunmapPtr(dst, size)
		return Report{}, fmt.Errorf("hugetext: mprotect: %w", err)
	}
	if _, err := unix.MremapPtr(dst, size, src, size, unix.MREMAP_MAYMOVE|unix.MREMAP_FIXED); err != nil {
		release()
		_ = unix.MunmapPtr(dst, size)
		return Report{}, fmt.Errorf("hugetext: mremap: %w", err)
	}
	release()
	r := Report{Start: lo, End: hi}
	r.HugeBytes, _ = anonHugeBytes(lo)
	return r, nil
}

// codePointer returns the address of Remap's own code as a pointer (obtained from the
// function value, not converted from an integer, which go vet rightly flags).
func codePointer() unsafe.Pointer {
	f := Remap
	funcval := *(*unsafe.Pointer)(unsafe.Pointer(&f)) // a func value points to its code pointer
	return *(*unsafe.Pointer)(funcval)
}

func readMaps() ([]mapping, error) {
	b, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return nil, fmt.Errorf("hugetext: %w", err)
	}
	return parseMaps(b)
}

// anonHugeBytes returns the AnonHugePages of the mapping starting at start, from
// /proc/self/smaps: its header line has the form of a maps line, its fields follow it.
func anonHugeBytes(start uintptr) (int64, error) {
	b, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		return 0, err
	}
	in := false
	for len(b) > 0 {
		line := b
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			line, b = b[:i], b[i+1:]
		} else {
			b = nil
		}
		if m, err := parseMapping(line); err == nil {
			in = m.start == start
			continue
		}
		if v, ok := bytes.CutPrefix(line, []byte("AnonHugePages:")); ok && in {
			v = bytes.TrimSpace(bytes.TrimSuffix(bytes.TrimSpace(v), []byte("kB")))
			kb, err := strconv.ParseInt(string(v), 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("hugetext: no mapping at %#x in smaps", start)
}
