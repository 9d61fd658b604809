package openaichat

import (
	"os"
	"testing"

	"github.com/agate-gateway/agate/internal/stacktest"
)

// TestParseRequest_StageStack: a parse with a Stage takes no more than an 8 KiB stack
// (fasthttp's connection goroutine keeps what the parse grew it to through a stream:
// 16 KiB stacks at 100 streams are 0.8 MB more, and as much again in the collector's
// goal); one without a Stage stages on its stack and takes more, which shows that the
// measure sees a parser's frame.
func TestParseRequest_StageStack(t *testing.T) {
	small := `{"max_tokens":1024,"messages":[{"role":"system","content":"You are a helpful assistant."},{"role":"user","content":"Write a short paragraph about the history of the bicycle."}],"model":"claude-bench","temperature":0.7,"stream":true}`
	read := func(name string) string {
		b, err := os.ReadFile("testdata/" + name)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	const n = 256
	for _, tc := range []struct {
		name  string
		body  string
		stage bool
	}{
		{"small, with a Stage", small, true},
		{"bench request, with a Stage", read("bench-request.json"), true},
		{"10 KB history, with a Stage", read("history-10k.json"), true},
		{"small, without a Stage", small, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			scratches, stages := make([]Scratch, n), make([]Stage, n)
			stacktest.Expect(t, n, 0, tc.stage, func(i int) error {
				st := &stages[i]
				if !tc.stage {
					st = nil
				}
				_, err := ParseRequestLazyString(tc.body, &scratches[i], st)
				return err
			})
		})
		// ParseHead and Build, the server's parse of a chat request, as the same rows.
		t.Run("head: "+tc.name, func(t *testing.T) {
			scratches, stages := make([]Scratch, n), make([]Stage, n)
			stacktest.Expect(t, n, 0, tc.stage, func(i int) error {
				st := &stages[i]
				if !tc.stage {
					st = nil
				}
				req, complete, err := ParseHead(tc.body, &scratches[i], st, 0, func(string) bool { return true })
				if err != nil || complete {
					return err
				}
				return Build(req, st, 0)
			})
		})
	}
}
