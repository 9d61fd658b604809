package main

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/agate-gateway/agate/internal/hugetext"
	"github.com/agate-gateway/agate/internal/logjson"
)

// TestCodePlacement: AGATE_HUGE_TEXT=off leaves the code where it is and logs nothing;
// otherwise the startup log says where the code ended up: on huge pages (how much), on
// small pages because the kernel has none (info), or on small pages after a failure
// (warning). The move itself is tested in internal/hugetext, in a process of its own.
func TestCodePlacement(t *testing.T) {
	if c := placeCode("off"); c.moved {
		t.Fatalf("placeCode(off) = %+v, want nothing done", c)
	}
	tests := []struct {
		name string
		c    codePlacement
		want string
	}{
		{"off", codePlacement{}, ""},
		{"moved", codePlacement{moved: true, report: hugetext.Report{Start: 0x400000, End: 0xc00000, HugeBytes: 6 << 20}},
			`"level":"INFO","msg":"code on huge pages","code_bytes":8388608,"huge_page_bytes":6291456}`},
		{"unavailable", codePlacement{moved: true, err: hugetext.ErrUnavailable},
			`"level":"INFO","msg":"code on small pages: transparent huge pages are not available"}`},
		{"failed", codePlacement{moved: true, err: errors.New("hugetext: mremap: operation not permitted")},
			`"level":"WARN","msg":"code on small pages","error":"hugetext: mremap: operation not permitted"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			tt.c.log(slog.New(logjson.New(&buf, nil)))
			got := buf.String()
			if tt.want == "" && got != "" || tt.want != "" && (!strings.HasSuffix(got, tt.want+"\n") || strings.Count(got, "\n") != 1) {
				t.Errorf("logged %q, want one line ending %q", got, tt.want)
			}
		})
	}
}
