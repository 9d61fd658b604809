package openaichat

import (
	"bytes"
	"encoding/json"
	"os"
	"testing"

	"github.com/agate-gateway/agate/translate"
)

// BenchmarkParseHeadIndented is the first pass over scenario d's 100 KB history
// pretty-printed (json.Indent): a body whose whitespace between tokens the string index
// refuses (jsonx.StringIndex.Build), read as the Scanner reads it; what the refusal costs.
func BenchmarkParseHeadIndented(b *testing.B) {
	body, err := os.ReadFile("testdata/history-100k.json")
	if err != nil {
		b.Fatal(err)
	}
	var out bytes.Buffer
	if err := json.Indent(&out, body, "", "  "); err != nil {
		b.Fatal(err)
	}
	view := out.String()
	b.ReportAllocs()
	b.SetBytes(int64(len(view)))
	var sc Scratch
	var st Stage
	for b.Loop() {
		sc.Reset()
		st.Reset()
		if _, complete, err := ParseHead(view, &sc, &st, translate.DefaultMaxInflated, nil); err != nil || complete {
			b.Fatal(err, complete)
		}
	}
}
