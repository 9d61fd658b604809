package responsesin

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/agate-gateway/agate/translate"
)

// BenchmarkParseHistory parses scenario d's agentic history at 10 and 100 KB
// (testdata/history-*.json: written by proxy/history_bench_test.go's
// historyBody("responses", ...), the request BenchmarkHistory sends, after
// ../shared/bench's scenario d), whole (ParseWithin) and as the passthrough does (ParseHead:
// the first pass only), and forwards it (AppendBody; walked:
// without the model's place Parse keeps).
func BenchmarkParseHistory(b *testing.B) {
	for _, kb := range []int{10, 100} {
		body, err := os.ReadFile(filepath.Join("testdata", fmt.Sprintf("history-%dk.json", kb)))
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("%dKB/parse", kb), func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := ParseWithin(body, 1<<20); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("%dKB/head", kb), func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				if _, complete, err := ParseHead(body, 1<<20, nil); err != nil || complete {
					b.Fatal(err, complete)
				}
			}
		})
		r, err := ParseWithin(body, 1<<20)
		if err != nil {
			b.Fatal(err)
		}
		walked := *r
		walked.model = translate.Span{} // as a Request Parse did not make: the body walked
		for _, w := range []struct {
			name string
			r    *Request
		}{{"passbody", r}, {"passbody-walked", &walked}} {
			b.Run(fmt.Sprintf("%dKB/%s", kb, w.name), func(b *testing.B) {
				b.SetBytes(int64(len(body)))
				b.ReportAllocs()
				dst := make([]byte, 0, len(body)+64)
				for b.Loop() {
					dst = w.r.AppendBody(dst[:0], "up-model")
				}
			})
		}
	}
}
