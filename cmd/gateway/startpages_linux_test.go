package main

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

// testdata/smaps.txt is /proc/<pid>/smaps of an idle gateway (this repository's, built with
// cgo, Linux 6.18), trimmed to the executable's three mappings, its Go heap arena, libc's
// read-only mappings and the vDSO, with the executable's path changed to
// /usr/local/bin/gateway; its last region is libc's relocated read-only block (16 kB copied
// on write by the dynamic linker) given the executable's path and an address after it, as a
// position-independent build's RELRO segment would be.

// TestExeMappings: of the regions of /proc/self/smaps, dropStartPages unmaps only the
// executable's private read-only ones whose every page is the file's.
func TestExeMappings(t *testing.T) {
	smaps, err := os.ReadFile("testdata/smaps.txt")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		exe  string
		want []mapping
	}{
		{
			name: "the gateway: its code and read-only data, not its data (written) nor its relocated block (copied)",
			exe:  "/usr/local/bin/gateway",
			want: []mapping{
				{start: 0x00400000, end: 0x01279000, rss: 10724 << 10}, // r-xp: the code
				{start: 0x01279000, end: 0x02268000, rss: 9916 << 10},  // r--p: read-only data
			},
		},
		{name: "another path: nothing", exe: "/usr/local/bin/other"},
		{name: "a library's path: not the executable, nothing", exe: "/usr/lib/x86_64-linux-gnu/libc"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := exeMappings(smaps, tt.exe)
			if len(got) != len(tt.want) {
				t.Fatalf("exeMappings = %+v, want %+v", got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Errorf("region %d = %+v, want %+v", i, got[i], tt.want[i])
				}
			}
		})
	}
}

// rssFileKB returns the RssFile of this process (/proc/self/status), in kB.
func rssFileKB(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "RssFile:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb
		}
	}
	t.Fatal("no RssFile in /proc/self/status")
	return 0
}

// TestDropStartPages: in this test binary, the pages of its code and read-only data leave
// its resident set, and the code goes on running (every page comes back when touched).
func TestDropStartPages(t *testing.T) {
	before := rssFileKB(t)
	dropped := dropStartPages()
	after := rssFileKB(t)
	t.Logf("RssFile %d -> %d kB, %d kB dropped", before, after, dropped>>10)
	if dropped <= 0 {
		t.Fatalf("dropStartPages dropped %d bytes", dropped)
	}
	if after >= before {
		t.Errorf("RssFile %d kB after, %d kB before: nothing left the resident set", after, before)
	}
	// Code the test binary had run before and runs again now: the page cache maps it back.
	if _, err := runtimeTuning("", []string{envRuntimeTuning + "=off"}); err != nil {
		t.Fatal(err)
	}
}

// FuzzExeMappings: whatever the text, exeMappings does not panic and returns only regions
// of the executable's path that are not empty.
func FuzzExeMappings(f *testing.F) {
	smaps, err := os.ReadFile("testdata/smaps.txt")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(smaps)
	f.Add(smaps[:len(smaps)/2])
	f.Add([]byte("00400000-01279000 r-xp 00000000 fe:00 1 /usr/local/bin/gateway\nRss: 12 kB\nAnonymous: x kB\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, m := range exeMappings(b, "/usr/local/bin/gateway") {
			if m.end <= m.start {
				t.Errorf("empty region %+v", m)
			}
		}
	})
}
