package responsesin

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkParseHistory parses scenario d's agentic history at 10 and 100 KB
// (testdata/history-*.json: written by proxy/history_bench_test.go's
// historyBody("responses", ...), the request BenchmarkHistory sends, after
// ../shared/bench's scenario d), as the proxy does.
func BenchmarkParseHistory(b *testing.B) {
	for _, kb := range []int{10, 100} {
		body, err := os.ReadFile(filepath.Join("testdata", fmt.Sprintf("history-%dk.json", kb)))
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("%dKB", kb), func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := ParseWithin(body, 1<<20); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
