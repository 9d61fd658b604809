package main

import (
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
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

// TestDropStartPages: in this test binary, the pages of its code and read-only data leave
// its resident set, and the code goes on running (every page comes back when touched).
func TestDropStartPages(t *testing.T) {
	before := procRSSFileKB(t, os.Getpid())
	dropped := dropStartPages()
	after := procRSSFileKB(t, os.Getpid())
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

// procRSSFileKB returns the RssFile of process pid, in kB.
func procRSSFileKB(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
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
	t.Fatalf("no RssFile in /proc/%d/status", pid)
	return 0
}

// TestStartPagesDropped: the gateway as the image builds it holds most of its binary's
// pages when it starts listening (the start touched them), and a few once startPagesDelay
// has passed; it serves as before.
func TestStartPagesDropped(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the gateway binary")
	}
	_, bin := imageBinary(t)
	env := []string{"PATH=" + os.Getenv("PATH"), "ALICE_KEY=alice-secret", "GOMAXPROCS=2"}
	r := startReplicaWith(t, bin, []string{"-config", gatewayConfig(t)}, env)
	pid := r.cmd.Process.Pid
	started := procRSSFileKB(t, pid)
	const want = 10 << 10 // kB; about 22 MB at the listen, 4 MB after (Linux 6.18)
	got := started
	for deadline := time.Now().Add(startPagesDelay + 2*time.Second); got >= want && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
		got = procRSSFileKB(t, pid)
	}
	t.Logf("RssFile %d kB when listening, %d kB after the drop", started, got)
	if got >= want {
		t.Errorf("RssFile %d kB %v after listening, want under %d kB", got, startPagesDelay+2*time.Second, want)
	}
	if code, _ := r.chat(t, "hi", false); code != 200 {
		t.Errorf("chat after the drop: status %d, want 200", code)
	}
}
