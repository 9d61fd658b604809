package responsesin

import (
	"encoding/json"
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
		// As the translated path reads it: the first pass gives up at the model, which
		// openai-python writes after the input (its members sorted, as
		// ../shared/bench writes them too), and the full parse reads the body.
		sorted := sortedMembers(b, body)
		b.Run(fmt.Sprintf("%dKB/head-sorted", kb), func(b *testing.B) {
			b.SetBytes(int64(len(sorted)))
			b.ReportAllocs()
			for b.Loop() {
				if _, complete, err := ParseHead(sorted, 1<<20, func(string) bool { return true }); err != nil || complete {
					b.Fatal(err, complete)
				}
			}
		})
		b.Run(fmt.Sprintf("%dKB/head-translated-sorted", kb), func(b *testing.B) {
			b.SetBytes(int64(len(sorted)))
			b.ReportAllocs()
			for b.Loop() {
				if _, complete, err := ParseHead(sorted, 1<<20, func(string) bool { return false }); err != nil || !complete {
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

// sortedMembers is body with every object's members in sorted order, as encoding/json
// writes a map (and SDKs that sort their parameters, openai-python, anthropic-sdk-python).
func sortedMembers(b *testing.B, body []byte) []byte {
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		b.Fatal(err)
	}
	sorted, err := json.Marshal(v)
	if err != nil {
		b.Fatal(err)
	}
	return sorted
}
