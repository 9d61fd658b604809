package main

import (
	"bytes"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"testing"
)

func TestStartPagesSetting(t *testing.T) {
	tests := []struct {
		name, flag string
		env        []string
		want       string
		wantErr    string
	}{
		{name: "default", want: startPagesRelease},
		{name: "env keep", env: []string{envStartPages + "=keep"}, want: startPagesKeep},
		{name: "the last env wins", env: []string{envStartPages + "=keep", envStartPages + "=release"}, want: startPagesRelease},
		{name: "the flag wins", flag: "keep", env: []string{envStartPages + "=release"}, want: startPagesKeep},
		{name: "bad flag", flag: "drop", wantErr: `-start-pages: "drop" is neither`},
		{name: "bad env", env: []string{envStartPages + "=off"}, wantErr: envStartPages + `: "off" is neither`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := startPages(tt.flag, tt.env)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("startPages = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

// The fixtures are /proc/<pid>/smaps of the gateway (its first mappings), built as an
// executable (the default) and position-independent (-buildmode=pie), the binary's path
// replaced.
func TestCleanReadOnlyMappingsOf(t *testing.T) {
	const exe = "/opt/agate/bin/gateway"
	tests := []struct {
		name, file, path string
		want             []pageRange
	}{
		{name: "executable: text and read-only data", file: "smaps-exec.txt", path: exe,
			want: []pageRange{{0x00400000, 0x01293000}, {0x01293000, 0x02297000}}},
		{name: "pie: the relocated read-only data is left", file: "smaps-pie.txt", path: exe,
			want: []pageRange{{0x561c1947e000, 0x561c1a2ef000}, {0x561c1a2ef000, 0x561c1b26d000}}},
		{name: "another path: nothing", file: "smaps-exec.txt", path: "/opt/agate/bin/other"},
		{name: "a prefix of the path: nothing", file: "smaps-exec.txt", path: "/opt/agate/bin/gate"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			smaps, err := os.ReadFile("testdata/" + tt.file)
			if err != nil {
				t.Fatal(err)
			}
			got, err := cleanReadOnlyMappingsOf(smaps, tt.path)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tt.want) {
				t.Fatalf("got %x, want %x", got, tt.want)
			}
		})
	}
}

func TestCleanReadOnlyMappingsOf_Refused(t *testing.T) {
	const exe = "/bin/g"
	tests := []struct {
		name, smaps, wantErr string
	}{
		{name: "short head", smaps: "00400000-00401000 r-xp 0\n", wantErr: "line 1: 3 fields"},
		{name: "range without dash", smaps: "00400000 r-xp 0 0:0 1 /bin/g\n", wantErr: `line 1: address range "00400000"`},
		{name: "range not hex", smaps: "0040000g-00401000 r-xp 0 0:0 1 /bin/g\n", wantErr: "line 1: address range"},
		{name: "empty range", smaps: "00401000-00401000 r-xp 0 0:0 1 /bin/g\n", wantErr: "line 1: address range"},
		{name: "bad permissions", smaps: "Anonymous: 0 kB\n00400000-00401000 rx 0 0:0 1 /bin/g\n", wantErr: `line 2: permissions "rx"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := cleanReadOnlyMappingsOf([]byte(tt.smaps), exe)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
	if _, err := cleanReadOnlyMappingsOf(bytes.Repeat([]byte{'\n'}, maxSmapsBytes+1), exe); err == nil {
		t.Fatal("an smaps past the bound was read")
	}
	if _, err := cleanReadOnlyMappingsOf(nil, ""); err == nil {
		t.Fatal("no path was accepted")
	}
}

func TestCleanReadOnlyMappingsOf_Fields(t *testing.T) {
	const head = "00400000-00401000 r-xp 00000000 fe:00 7 /opt/my gateway\n"
	tests := []struct {
		name, fields string
		want         bool
	}{
		{name: "clean", fields: "Rss: 4 kB\nAnonymous:  0 kB\n", want: true},
		{name: "copied on write", fields: "Anonymous: 4 kB\n"},
		{name: "no Anonymous line", fields: "Rss: 4 kB\n"},
		{name: "Anonymous in other units", fields: "Anonymous: 0 MB\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := cleanReadOnlyMappingsOf([]byte(head+tt.fields), "/opt/my gateway")
			if err != nil {
				t.Fatal(err)
			}
			if (len(got) == 1) != tt.want {
				t.Fatalf("got %x, want it returned: %v", got, tt.want)
			}
		})
	}
	for _, perms := range []string{"rw-p", "-w-p", "---p", "rwxp"} {
		smaps := strings.Replace(head, "r-xp", perms, 1) + "Anonymous: 0 kB\n"
		if got, err := cleanReadOnlyMappingsOf([]byte(smaps), "/opt/my gateway"); err != nil || len(got) != 0 {
			t.Errorf("%s: got %x, %v; want nothing", perms, got, err)
		}
	}
}

func FuzzCleanReadOnlyMappingsOf(f *testing.F) {
	for _, name := range []string{"smaps-exec.txt", "smaps-pie.txt"} {
		b, err := os.ReadFile("testdata/" + name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("00400000-00401000 r--p 0 0:0 1 /opt/agate/bin/gateway\nAnonymous: 0 kB\n"))
	f.Fuzz(func(t *testing.T, smaps []byte) {
		got, err := cleanReadOnlyMappingsOf(smaps, "/opt/agate/bin/gateway")
		if err != nil {
			return
		}
		for _, r := range got {
			if r.end <= r.start {
				t.Fatalf("empty range %x", r)
			}
		}
		// Every range returned is a read-only mapping of the path: no more ranges than
		// such head lines.
		heads := 0
		for _, line := range strings.Split(string(smaps), "\n") {
			if f := strings.Fields(line); len(f) >= 6 && strings.HasPrefix(f[1], "r-") && strings.Join(f[5:], " ") == "/opt/agate/bin/gateway" {
				heads++
			}
		}
		if len(got) > heads {
			t.Fatalf("%d ranges from %d read-only head lines of the path", len(got), heads)
		}
	})
}

// TestReleaseStartPages releases the test binary's start pages and checks that its
// read-only mappings then hold fewer resident pages, and that the code still runs.
func TestReleaseStartPages(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("Linux only")
	}
	before := exeRSS(t)
	n, err := releaseStartPages()
	if err != nil {
		t.Fatal(err)
	}
	after := exeRSS(t)
	if n <= 0 {
		t.Fatalf("released %d bytes", n)
	}
	if after >= before {
		t.Fatalf("the binary's resident read-only pages went from %d to %d kB", before, after)
	}
	t.Logf("released %d bytes of mappings; resident read-only pages of the binary %d -> %d kB", n, before, after)
	if got := versionLine(); !strings.HasPrefix(got, "agate ") { // code that ran before, mapped back in
		t.Fatalf("versionLine = %q", got)
	}
}

// exeRSS is the resident kB of the test binary's clean read-only mappings.
func exeRSS(t *testing.T) int {
	t.Helper()
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		t.Fatal(err)
	}
	smaps, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	ranges, err := cleanReadOnlyMappingsOf(smaps, exe)
	if err != nil || len(ranges) == 0 {
		t.Fatalf("mappings %x, %v", ranges, err)
	}
	total, in := 0, false
	for _, line := range strings.Split(string(smaps), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if !strings.HasSuffix(f[0], ":") {
			in = false
			for _, r := range ranges {
				var lo, hi uint64
				if _, err := fmt.Sscanf(f[0], "%x-%x", &lo, &hi); err == nil && lo == r.start && hi == r.end {
					in = true
				}
			}
			continue
		}
		if in && f[0] == "Rss:" {
			var kb int
			for _, c := range f[1] {
				kb = kb*10 + int(c-'0')
			}
			total += kb
		}
	}
	return total
}
