package sse

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestParserEventBound pins the event size bound: an event of exactly MaxEventBytes (its
// lines, line ends not counted) is dispatched, one byte more is ErrEventTooLarge, however
// the input is split.
func TestParserEventBound(t *testing.T) {
	const max = 64
	tests := []struct {
		name    string
		in      string
		wantErr bool
	}{
		{"one line at the bound", "data: " + strings.Repeat("x", max-6) + "\n\n", false},
		{"one line over the bound", "data: " + strings.Repeat("x", max-5) + "\n\n", true},
		{"unfinished line over the bound", "data: " + strings.Repeat("x", max), true},
		{"lines together over the bound", "data: " + strings.Repeat("x", 30) + "\ndata: " + strings.Repeat("x", 30) + "\n\n", true},
		{"comment lines count", ": " + strings.Repeat("x", max) + "\n", true},
		{"the bound is per event", strings.Repeat("data: "+strings.Repeat("x", 40)+"\n\n", 5), false},
		{"crlf line ends not counted", "data: " + strings.Repeat("x", max-6) + "\r\n\r\n", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for i := 0; i <= len(tt.in); i++ {
				p := Parser{MaxEventBytes: max}
				fn := func(typ, data []byte) error { return nil }
				err := p.Feed([]byte(tt.in[:i]), fn)
				if err == nil {
					err = p.Feed([]byte(tt.in[i:]), fn)
				}
				if tt.wantErr != errors.Is(err, ErrEventTooLarge) || (err != nil && !tt.wantErr) {
					t.Fatalf("split at %d: err = %v, want ErrEventTooLarge: %v", i, err, tt.wantErr)
				}
			}
		})
	}
}

// TestParserDefaultBound checks that the zero Parser bounds an endless line at
// DefaultMaxEventBytes.
func TestParserDefaultBound(t *testing.T) {
	var p Parser
	chunk := append([]byte("data: "), bytes.Repeat([]byte("x"), 64<<10)...)
	fed := 0
	for {
		err := p.Feed(chunk, func(typ, data []byte) error { return nil })
		fed += len(chunk)
		if err != nil {
			if !errors.Is(err, ErrEventTooLarge) {
				t.Fatalf("err = %v, want ErrEventTooLarge", err)
			}
			break
		}
		if fed > 2*DefaultMaxEventBytes {
			t.Fatalf("fed %d bytes of one line without an error", fed)
		}
		chunk = chunk[6:]
	}
	if fed <= DefaultMaxEventBytes {
		t.Errorf("error after %d bytes, before the bound %d", fed, DefaultMaxEventBytes)
	}
}

// FuzzParserBound checks that the event bound does not depend on how the input is
// split: fed whole or in two pieces, a parser with a small bound dispatches the same
// events and fails, or not, the same way.
func FuzzParserBound(f *testing.F) {
	f.Add([]byte("data: x\r\n\r\n"), uint16(7), uint8(4))
	f.Add([]byte(": comment\ndata: abc\ndata: def\n\nevent: e\ndata: 0123456789\r\r"), uint16(20), uint8(12))
	f.Fuzz(func(t *testing.T, in []byte, split uint16, max uint8) {
		s := int(split) % (len(in) + 1)
		run := func(chunks ...[]byte) ([]ev, error) {
			p := Parser{MaxEventBytes: int(max) + 1}
			var got []ev
			for _, c := range chunks {
				if err := p.Feed(c, func(typ, data []byte) error {
					got = append(got, ev{string(typ), string(data)})
					return nil
				}); err != nil {
					return got, err
				}
			}
			return got, nil
		}
		whole, werr := run(in)
		parts, perr := run(in[:s], in[s:])
		if diff := cmp.Diff(whole, parts); diff != "" {
			t.Fatalf("split at %d differs (-whole +split):\n%s", s, diff)
		}
		if (werr == nil) != (perr == nil) {
			t.Fatalf("split at %d: error %v whole, %v split", s, werr, perr)
		}
		if werr != nil && !errors.Is(werr, ErrEventTooLarge) {
			t.Fatalf("unexpected error %v", werr)
		}
	})
}

// BenchmarkLongLine feeds one 16 MiB data line in 4 KiB reads, as a slow upstream would
// send it. Its cost must grow linearly with the line, not with its square.
func BenchmarkLongLine(b *testing.B) {
	const size, read = 16 << 20, 4 << 10
	line := append([]byte("data: "), bytes.Repeat([]byte("x"), size)...)
	line = append(line, "\n\n"...)
	fn := func(typ, data []byte) error { return nil }
	b.ReportAllocs()
	b.SetBytes(int64(len(line)))
	for b.Loop() {
		p := Parser{MaxEventBytes: 32 << 20}
		for off := 0; off < len(line); off += read {
			if err := p.Feed(line[off:min(off+read, len(line))], fn); err != nil {
				b.Fatal(err)
			}
		}
	}
}
