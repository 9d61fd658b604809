package main

import (
	"bufio"
	"bytes"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// startPagesDelay is how long after it listens the gateway calls dropStartPages: the work
// of its start goes on for a few tenths of a second after the listen (the config watcher,
// the first collections), and pages dropped before it ends come straight back (7 MB of
// the 20 in a tenth of a second, measured).
const startPagesDelay = time.Second

// dropStartPages unmaps from the process the pages of its own executable's code and
// read-only data that are resident when it is called (once, startPagesDelay after the
// gateway listens), and returns how many bytes that was.
//
// Starting the gateway runs the init work of every package linked in (cloud SDKs, the
// database drivers, OpenTelemetry, the JSON schema compilers) and the loading of its
// configuration, and each page of the executable touched on the way is mapped with the
// 15 pages around it (the kernel's fault-around of 64 KB): about 20 MB of the 47 MB binary
// resident at start, of which an idle gateway touches about 2.6 MB a second and serving
// requests some 10-13 MB (measured). madvise(MADV_DONTNEED) on a mapping of a file that
// was never written only removes the process's page table entries; the pages stay in the
// page cache, and the next touch of one maps it back (a minor fault; a read only if memory
// pressure evicted the page meanwhile, as it could have evicted a mapped one). So the
// process's resident set (its RSS, what the operator's tools and the OOM killer count)
// holds what serving touches, not what starting did.
//
// Only private mappings of the executable that are not writable and hold no anonymous page
// (/proc/self/smaps: Anonymous 0, so no page was copied on a write, as a dynamic linker's
// relocations would) are dropped: every page they hold is the page cache's (Private_Dirty
// counts a page cache page not yet written back, as of a binary just built), so nothing is
// lost. Any error (no /proc) drops nothing.
func dropStartPages() int64 {
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		return 0
	}
	smaps, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		return 0
	}
	var dropped int64
	for _, m := range exeMappings(smaps, exe) {
		if _, _, errno := unix.Syscall(unix.SYS_MADVISE, m.start, m.end-m.start, unix.MADV_DONTNEED); errno == 0 {
			dropped += m.rss
		}
	}
	return dropped
}

// mapping is one region of /proc/self/smaps that dropStartPages may unmap.
type mapping struct {
	start, end uintptr
	// rss is the region's resident bytes.
	rss int64
}

// exeMappings returns the regions of smaps (the text of /proc/<pid>/smaps) that map the
// file exe, are private and not writable, and hold no anonymous page: the pages they hold
// are the file's.
func exeMappings(smaps []byte, exe string) []mapping {
	var out []mapping
	var cur mapping
	var ok bool // cur is a candidate so far
	flush := func() {
		if ok {
			out = append(out, cur)
		}
		ok = false
	}
	sc := bufio.NewScanner(bytes.NewReader(smaps))
	for sc.Scan() {
		line := sc.Text()
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if !strings.HasSuffix(f[0], ":") { // a region's header: range perms offset dev inode path
			flush()
			if len(f) < 6 || strings.Join(f[5:], " ") != exe || len(f[1]) != 4 || f[1][1] != '-' || f[1][3] != 'p' {
				continue
			}
			lo, hi, found := strings.Cut(f[0], "-")
			start, err1 := strconv.ParseUint(lo, 16, 64)
			end, err2 := strconv.ParseUint(hi, 16, 64)
			if !found || err1 != nil || err2 != nil || end <= start {
				continue
			}
			cur, ok = mapping{start: uintptr(start), end: uintptr(end)}, true
			continue
		}
		if !ok || len(f) < 2 {
			continue
		}
		kb, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil {
			continue
		}
		switch f[0] {
		case "Rss:":
			cur.rss = kb << 10
		case "Anonymous:":
			if kb != 0 {
				ok = false
			}
		}
	}
	flush()
	return out
}
