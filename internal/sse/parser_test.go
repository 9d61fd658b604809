package sse

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	gosse "github.com/tmaxmax/go-sse"
)

type ev struct{ Type, Data string }

// collect feeds chunks to one Parser in turn and returns the events it dispatched and
// whether it holds an unfinished one. Each chunk's bytes are overwritten once Feed
// returns, as a reader reuses its buffer: an event must not keep bytes it was lent.
func collect(t testing.TB, chunks ...string) ([]ev, bool) {
	t.Helper()
	var p Parser
	var got []ev
	for _, c := range chunks {
		b := []byte(c)
		if err := p.Feed(b, func(typ, data []byte) error {
			got = append(got, ev{string(typ), string(data)})
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		for i := range b {
			b[i] = 'X'
		}
	}
	return got, p.Pending()
}

func TestParser(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    []ev
		pending bool
	}{
		{"lf", "event: a\ndata: x\n\n", []ev{{"a", "x"}}, false},
		{"crlf", "data: {\"a\": 1}\r\n\r\n", []ev{{"", `{"a": 1}`}}, false},
		{"cr", "data: x\r\rdata: y\r\r", []ev{{"", "x"}, {"", "y"}}, false},
		{"multi-line data joined with LF", "data: a\ndata: b\n\n", []ev{{"", "a\nb"}}, false},
		{"no space after colon", "data:x\n\n", []ev{{"", "x"}}, false},
		{"only one leading space removed", "data:  x\n\n", []ev{{"", " x"}}, false},
		{"comments and unknown fields ignored", ": ping\nid: 3\nretry: 10\nfoo: bar\ndata: x\n\n", []ev{{"", "x"}}, false},
		{"event without data is not dispatched and resets type", "event: a\n\ndata: x\n\n", []ev{{"", "x"}}, false},
		{"empty data is dispatched", "data\n\n", []ev{{"", ""}}, false},
		{"bom stripped", "\xEF\xBB\xBFdata: x\n\n", []ev{{"", "x"}}, false},
		{"unfinished event is pending", "data: x\n", nil, true},
		{"unfinished line is pending", "data: x", nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, pending := collect(t, tt.in)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
			if pending != tt.pending {
				t.Errorf("Pending() = %v, want %v", pending, tt.pending)
			}
			// The same input split in three at every pair of byte offsets, and byte by
			// byte, gives the same (a middle part is read from the bytes fed, the first
			// one from the parser's copy, made while it looks for a byte order mark).
			for i := 0; i <= len(tt.in); i++ {
				for j := i; j <= len(tt.in); j++ {
					got, _ := collect(t, tt.in[:i], tt.in[i:j], tt.in[j:])
					if diff := cmp.Diff(tt.want, got); diff != "" {
						t.Fatalf("split at %d and %d (-want +got):\n%s", i, j, diff)
					}
				}
			}
			bytewise := strings.Split(tt.in, "")
			got, _ = collect(t, bytewise...)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Fatalf("byte by byte (-want +got):\n%s", diff)
			}
		})
	}
}

// TestParserMatchesGoSSE checks the parser against go-sse's reader on the recorded
// provider streams.
func TestParserMatchesGoSSE(t *testing.T) {
	files, _ := filepath.Glob(recordedStreams)
	if len(files) == 0 {
		t.Fatalf("no recordings match %s", recordedStreams)
	}
	local, _ := filepath.Glob("testdata/*.sse")
	files = append(files, local...)
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		t.Run(filepath.Base(f), func(t *testing.T) {
			got, pending := collect(t, string(b))
			if pending {
				t.Errorf("recording left an unfinished event")
			}
			want := referenceEvents(t, string(b))
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("vs go-sse (-want +got):\n%s", diff)
			}
		})
	}
}

func referenceEvents(t testing.TB, in string) []ev {
	var out []ev
	for e, err := range gosse.Read(strings.NewReader(in), nil) {
		if err != nil {
			t.Fatalf("go-sse: %v", err)
		}
		out = append(out, ev{e.Type, e.Data})
	}
	return out
}

// recordedStreams are the provider streams recorded in the repository's testdata/fixtures.
const recordedStreams = "../../testdata/fixtures/*/stream/*.sse"

func FuzzParser(f *testing.F) {
	files, _ := filepath.Glob(recordedStreams)
	if len(files) == 0 {
		f.Fatalf("no recordings match %s", recordedStreams)
	}
	for _, fn := range files {
		b, _ := os.ReadFile(fn)
		f.Add(b, uint16(len(b)/2))
	}
	f.Add([]byte("data: x\r\n\r\n"), uint16(7))
	f.Fuzz(func(t *testing.T, in []byte, split uint16) {
		// Split in three: at split, and halfway between it and the end.
		s := int(split) % (len(in) + 1)
		u := s + (len(in)-s)/2
		whole, _ := collect(t, string(in))
		parts, _ := collect(t, string(in[:s]), string(in[s:u]), string(in[u:]))
		if diff := cmp.Diff(whole, parts); diff != "" {
			t.Fatalf("split at %d and %d differs (-whole +split):\n%s", s, u, diff)
		}
	})
}

func BenchmarkParser(b *testing.B) {
	in := []byte(`event: content_block_delta` + "\n" + `data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello there"}}` + "\n\n")
	benchFeed(b, in)
}

// benchFeed feeds in, whole, to one Parser once per iteration of b, which fails if no
// event came out.
func benchFeed(b *testing.B, in []byte) {
	var p Parser
	events := 0
	fn := func(typ, data []byte) error { events++; return nil }
	b.ReportAllocs()
	b.SetBytes(int64(len(in)))
	for b.Loop() {
		if err := p.Feed(in, fn); err != nil {
			b.Fatal(err)
		}
	}
	if events == 0 {
		b.Fatal("no event")
	}
}

// BenchmarkParser_LineEnds: a 64 KiB read of short events whose lines end in LF, CRLF or
// CR alone, per read. The CR-only stream must cost about what the others do: a parser
// that looked for the next LF from every line start would scan the rest of the read once
// per line.
func BenchmarkParser_LineEnds(b *testing.B) {
	for _, end := range []struct{ name, eol string }{{"lf", "\n"}, {"crlf", "\r\n"}, {"cr", "\r"}} {
		var in []byte
		for len(in) < 64<<10 {
			in = append(in, "event: content_block_delta"+end.eol+`data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello"}}`+end.eol+end.eol...)
		}
		b.Run(end.name, func(b *testing.B) {
			benchFeed(b, in)
		})
	}
}
