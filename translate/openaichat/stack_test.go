package openaichat

import (
	"os"
	"sync"
	"testing"

	"github.com/agate-gateway/agate/internal/stacktest"
)

// TestParseRequest_StageStack: a parse with a Stage takes no more than an 8 KiB stack
// (fasthttp's connection goroutine keeps what the parse grew it to through a stream:
// 16 KiB stacks at 100 streams are 0.8 MB more, and as much again in the collector's
// goal); one without a Stage stages on its stack and takes more, which shows that the
// measure sees a parser's frame.
func TestParseRequest_StageStack(t *testing.T) {
	if stacktest.Race {
		t.Skip("frames are larger under the race detector")
	}
	small := `{"max_tokens":1024,"messages":[{"role":"system","content":"You are a helpful assistant."},{"role":"user","content":"Write a short paragraph about the history of the bicycle."}],"model":"claude-bench","temperature":0.7,"stream":true}`
	read := func(name string) string {
		b, err := os.ReadFile("testdata/" + name)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	const n, bound = 256, stacktest.Grown
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
			var failed sync.Once
			perG := stacktest.PerGoroutine(t, n, 0, func(i int) {
				st := &stages[i]
				if !tc.stage {
					st = nil
				}
				if _, err := ParseRequestLazyString(tc.body, &scratches[i], st); err != nil {
					failed.Do(func() { t.Error(err) })
				}
			})
			t.Logf("%d bytes of stack a goroutine", perG)
			if tc.stage && perG > bound {
				t.Errorf("a parse with a Stage left %d bytes of stack a goroutine, want at most %d (a parser on the stack again?)", perG, bound)
			}
			if !tc.stage && perG <= bound {
				t.Errorf("a parse without a Stage left %d bytes of stack a goroutine, want more than %d (the measure does not see the parser)", perG, bound)
			}
		})
	}
}
