package hugetext

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// testdata/gateway.maps is /proc/<pid>/maps of the gateway (go build ./cmd/gateway, Go
// 1.26, linux/amd64) serving config.example.yaml on the development machine, its path
// replaced by /usr/local/bin/gateway.
func gatewayMaps(t testing.TB) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/gateway.maps")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestParseMaps: each line gives its range, permissions, offset and path (anonymous memory
// has none; a path may hold spaces); a line of any other form, or out of address order, is
// an error naming the line.
func TestParseMaps(t *testing.T) {
	maps, err := parseMaps(gatewayMaps(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(maps) != 66 {
		t.Fatalf("%d mappings, want the file's 66", len(maps))
	}
	want := []mapping{
		{start: 0x400000, end: 0xbe9000, perms: "r-xp", offset: 0, path: "/usr/local/bin/gateway"},
		{start: 0xbe9000, end: 0x14c0000, perms: "r--p", offset: 0x7e9000, path: "/usr/local/bin/gateway"},
		{start: 0x14c0000, end: 0x1559000, perms: "rw-p", offset: 0x10c0000, path: "/usr/local/bin/gateway"},
		{start: 0x1559000, end: 0x35c1000, perms: "rw-p"},
		{start: 0xd547000, end: 0xd568000, perms: "rw-p", path: "[heap]"},
	}
	for i, w := range want {
		if maps[i] != w {
			t.Errorf("mapping %d = %+v, want %+v", i, maps[i], w)
		}
	}
	if last := maps[len(maps)-1]; last.start != 0xffffffffff600000 || last.path != "[vsyscall]" || last.perms != "--xp" {
		t.Errorf("last mapping %+v", last)
	}

	m, err := parseMaps([]byte("7f00-8000 r-xp 00001000 fe:00 12  /opt/my app/gateway (deleted)\n\n"))
	if err != nil || len(m) != 1 || m[0].path != "/opt/my app/gateway (deleted)" || m[0].offset != 0x1000 {
		t.Errorf("path with spaces: %+v, %v", m, err)
	}

	for _, tt := range []struct{ name, text, want string }{
		{"too few fields", "400000-500000 r-xp 0 fe:00", "line 1: too few fields"},
		{"no range", "400000 r-xp 0 fe:00 1", "line 1: no address range"},
		{"bad hex", "40000g-500000 r-xp 0 fe:00 1", `line 1: strconv.ParseUint: parsing "40000g"`},
		{"bad offset", "400000-500000 r-xp zz fe:00 1", `line 1: strconv.ParseUint: parsing "zz"`},
		{"empty range", "500000-500000 r-xp 0 fe:00 1", "line 1: empty address range"},
		{"short permissions", "400000-500000 r-x 0 fe:00 1", "line 1: permissions are not 4 characters"},
		{"out of order", "400000-500000 r-xp 0 fe:00 1\n480000-600000 r--p 0 fe:00 1", "line 2: out of order"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseMaps([]byte(tt.text))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want one containing %q", err, tt.want)
			}
		})
	}
}

// TestSpan: the range moved is the code mapping widened to huge pages over memory of the
// same file that is readable and not writable, else narrowed to the huge pages it holds;
// no range when the code is not in a file's executable mapping or holds no huge page.
func TestSpan(t *testing.T) {
	const exe = " fe:00 7 /bin/gw"
	tests := []struct {
		name   string
		maps   string
		pc     uintptr
		lo, hi uintptr
		err    string
	}{
		{name: "the gateway: code from 4 MiB, the last huge page taking in read-only data",
			maps: string(gatewayMaps(t)), pc: 0xb1f040, lo: 0x400000, hi: 0xc00000},
		{name: "writable data right after the code: the last partial huge page stays",
			maps: "400000-be9000 r-xp 0" + exe + "\nbe9000-c10000 rw-p 7e9000" + exe,
			pc:   0x500000, lo: 0x400000, hi: 0xa00000},
		{name: "a gap after the code",
			maps: "400000-be9000 r-xp 0" + exe + "\nbea000-c10000 r--p 7ea000" + exe,
			pc:   0x500000, lo: 0x400000, hi: 0xa00000},
		{name: "another file's pages after the code",
			maps: "400000-be9000 r-xp 0" + exe + "\nbe9000-c10000 r--p 0 fe:00 8 /lib/other.so",
			pc:   0x500000, lo: 0x400000, hi: 0xa00000},
		{name: "position-independent: read-only headers of the file before the code",
			maps: "55d000000000-55d000101000 r--p 0" + exe + "\n55d000101000-55d000a00000 r-xp 101000" + exe + "\n55d000a00000-55d000c00000 r--p a00000" + exe,
			pc:   0x55d000200000, lo: 0x55d000000000, hi: 0x55d000a00000},
		{name: "anonymous memory before the code: the first partial huge page stays",
			maps: "55d000000000-55d000101000 rw-p 0 00:00 0 \n55d000101000-55d000a00000 r-xp 101000" + exe,
			pc:   0x55d000200000, lo: 0x55d000200000, hi: 0x55d000a00000},
		{name: "code moved already (anonymous)",
			maps: "400000-c00000 r-xp 0 00:00 0 \nc00000-14c0000 r--p 800000" + exe,
			pc:   0x500000, err: "not in an executable file mapping"},
		{name: "pc in data", maps: "400000-be9000 r-xp 0" + exe + "\nbe9000-c10000 rw-p 7e9000" + exe,
			pc: 0xbf0000, err: "not in an executable file mapping"},
		{name: "pc not mapped", maps: "400000-be9000 r-xp 0" + exe, pc: 0x100, err: "not mapped"},
		{name: "less than a huge page of code",
			maps: "401000-5ff000 r-xp 1000 " + exe + "\n5ff000-600000 rw-p 0" + exe,
			pc:   0x500000, err: "no whole huge page"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			maps, err := parseMaps([]byte(tt.maps))
			if err != nil {
				t.Fatal(err)
			}
			lo, hi, err := span(maps, tt.pc)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("span = %#x-%#x, %v; want an error containing %q", lo, hi, err, tt.err)
				}
				return
			}
			if err != nil || lo != tt.lo || hi != tt.hi {
				t.Fatalf("span = %#x-%#x, %v; want %#x-%#x", lo, hi, err, tt.lo, tt.hi)
			}
		})
	}
}

// FuzzParseMaps: whatever the text, parseMaps returns an error or mappings that are
// non-empty, in address order, with 4-character permissions, which span then handles
// without panicking and answers within them.
func FuzzParseMaps(f *testing.F) {
	f.Add(gatewayMaps(f))
	f.Add([]byte("400000-be9000 r-xp 0 fe:00 7 /bin/gw\nbe9000-c10000 r--p 7e9000 fe:00 7 /bin/gw\n"))
	f.Add([]byte("7f00-8000 r-xp 00001000 fe:00 12  /opt/my app/gateway (deleted)"))
	f.Fuzz(func(t *testing.T, b []byte) {
		maps, err := parseMaps(b)
		if err != nil {
			return
		}
		for i, m := range maps {
			if m.start >= m.end || len(m.perms) != 4 || i > 0 && m.start < maps[i-1].end {
				t.Fatalf("mapping %d: %+v", i, m)
			}
			lo, hi, err := span(maps, m.start)
			if err == nil && (lo%Size != 0 || hi%Size != 0 || lo >= hi || hi > maps[len(maps)-1].end+Size) {
				t.Fatalf("span of %+v = %#x-%#x", m, lo, hi)
			}
		}
	})
}

func Example() {
	r, err := Remap()
	if err != nil {
		fmt.Println("code stays on small pages:", err)
		return
	}
	fmt.Printf("code %#x-%#x, %d MiB of it on huge pages\n", r.Start, r.End, r.HugeBytes>>20)
}
