package main

import (
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// releaseStartPages drops the pages of the executable's clean read-only mappings
// (cleanReadOnlyMappingsOf) from the process (madvise MADV_DONTNEED, which for a private file mapping keeps the page cache's
// copy: a later touch maps it back without reading the disk). It returns the bytes of the
// mappings advised.
func releaseStartPages() (int64, error) {
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		return 0, err
	}
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		return 0, err
	}
	smaps, err := io.ReadAll(io.LimitReader(f, maxSmapsBytes+1))
	f.Close()
	if err != nil {
		return 0, err
	}
	ranges, err := cleanReadOnlyMappingsOf(smaps, exe)
	if err != nil {
		return 0, err
	}
	var n int64
	for _, r := range ranges {
		if _, _, e := unix.Syscall(unix.SYS_MADVISE, uintptr(r.start), uintptr(r.end-r.start), unix.MADV_DONTNEED); e != 0 {
			return n, e
		}
		n += int64(r.end - r.start)
	}
	return n, nil
}
