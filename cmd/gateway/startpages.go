package main

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// The gateway's binary is large (its SDKs: AWS, Azure, Google, MCP, SQLite, OpenTelemetry),
// and starting it runs the init functions of every package it links, scattered over the
// text. Linux maps a file page with up to 15 neighbours on each fault (fault-around, 64 KiB),
// so the start leaves some 20 MB of the binary's read-only pages mapped, most of them
// never run again: more than the whole of the heap at scenario c's peak. Once the server
// listens, the gateway drops those pages from its mappings (madvise MADV_DONTNEED); the
// kernel keeps them in its page cache, and the code a request runs is mapped back in on
// first use, a minor fault per 64 KiB. -start-pages keep (env GATEWAY_START_PAGES) leaves
// them. PERFORMANCE.md, "The stream event and peak RSS, eighth session", has the figures.

const (
	startPagesRelease = "release" // the default
	startPagesKeep    = "keep"
	envStartPages     = "GATEWAY_START_PAGES"
)

// startPages returns the -start-pages setting in force: flag (when given), else
// GATEWAY_START_PAGES in environ (the last one), else release.
func startPages(flag string, environ []string) (string, error) {
	v, from := flag, "-start-pages"
	if v == "" {
		v, from = lookup(environ, envStartPages, startPagesRelease), envStartPages
	}
	switch v {
	case startPagesRelease, startPagesKeep:
		return v, nil
	}
	return "", fmt.Errorf("%s: %q is neither %s nor %s", from, v, startPagesRelease, startPagesKeep)
}

// pageRange is one mapping of /proc/self/smaps: its addresses [start, end).
type pageRange struct{ start, end uint64 }

// maxSmapsBytes bounds the /proc/self/smaps the gateway reads: a Go process has a few dozen
// mappings (about 1.2 KB of text each), so a file past 4 MiB is not one this parser was made
// for.
const maxSmapsBytes = 4 << 20

// cleanReadOnlyMappingsOf returns the mappings in smaps (the text of /proc/<pid>/smaps) of
// the file at path that are readable, not writable and hold no anonymous (copied-on-write)
// page: the binary's code and read-only data as the file has them, so dropping their pages
// loses nothing. A writable mapping (the binary's data and bss) is never returned, nor a
// read-only one a loader wrote into before protecting it (a position-independent build's
// relocated data), nor one whose Anonymous line is missing. A line that is neither a
// mapping's head nor one of its "Name: value" lines is an error naming the line.
func cleanReadOnlyMappingsOf(smaps []byte, path string) ([]pageRange, error) {
	if len(smaps) > maxSmapsBytes {
		return nil, fmt.Errorf("smaps: %d bytes, more than %d", len(smaps), maxSmapsBytes)
	}
	if path == "" {
		return nil, errors.New("smaps: no executable path")
	}
	var out []pageRange
	var cur pageRange
	candidate, clean := false, false // cur is path's, read-only; its Anonymous line read 0
	end := func() {
		if candidate && clean {
			out = append(out, cur)
		}
		candidate, clean = false, false
	}
	for n := 1; len(smaps) > 0; n++ {
		line, rest, _ := bytes.Cut(smaps, []byte{'\n'})
		smaps = rest
		f := strings.Fields(string(line))
		if len(f) == 0 {
			continue
		}
		if name, ok := strings.CutSuffix(f[0], ":"); ok { // a field of the current mapping
			if name == "Anonymous" {
				clean = len(f) == 3 && f[1] == "0" && f[2] == "kB"
			}
			continue
		}
		end()
		// address perms offset dev inode [path]; the path may hold spaces.
		if len(f) < 5 {
			return nil, fmt.Errorf("smaps: line %d: %d fields, want at least 5", n, len(f))
		}
		lo, hi, ok := strings.Cut(f[0], "-")
		start, err1 := strconv.ParseUint(lo, 16, 64)
		stop, err2 := strconv.ParseUint(hi, 16, 64)
		if !ok || err1 != nil || err2 != nil || stop <= start {
			return nil, fmt.Errorf("smaps: line %d: address range %q", n, f[0])
		}
		perms := f[1]
		if len(perms) != 4 {
			return nil, fmt.Errorf("smaps: line %d: permissions %q", n, perms)
		}
		cur = pageRange{start, stop}
		candidate = len(f) >= 6 && perms[0] == 'r' && perms[1] == '-' && strings.Join(f[5:], " ") == path
	}
	end()
	return out, nil
}
