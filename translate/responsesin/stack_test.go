package responsesin

import (
	"bytes"
	"fmt"
	"os"
	"reflect"
	"testing"

	"github.com/agate-gateway/agate/internal/stacktest"
	"github.com/agate-gateway/agate/translate"
)

// TestParseHead_StageStack: the server's parse of a Responses request
// (Stage.ParseHeadLazy, passed through or translated) under a connection goroutine's
// frames (ServerFrames) leaves that goroutine at 8 KiB of stack. fasthttp's connection
// goroutine keeps what the parse grew it to through a stream: 16 KiB stacks at 100
// streams are 0.8 MB more, and as much again in the collector's goal. A parse without a
// Stage works on its stack and grows it to 16 KiB, which shows that the measure sees a
// parser's frame.
func TestParseHead_StageStack(t *testing.T) {
	// The bench's small request (scripts/bench/apis.patch's responsesSmall), streamed.
	small := `{"input":[{"content":"Write a short paragraph about the history of the bicycle.","role":"user"}],"instructions":"You are a helpful assistant. Answer concisely and accurately.","max_output_tokens":1024,"model":"claude-bench","store":false,"stream":true,"temperature":0.7}`
	b, err := os.ReadFile("testdata/history-10k.json")
	if err != nil {
		t.Fatal(err)
	}
	history := string(b)
	pass := func(string) bool { return true }
	translated := func(string) bool { return false }
	const n = 256
	stages := make([]Stage, n)
	stacktest.ExpectParses(t, n, []stacktest.Parse{
		{Name: "small, passed through", Body: small, Passes: pass, Staged: true},
		{Name: "small, translated", Body: small, Passes: translated, Staged: true},
		{Name: "bench request, passed through", Body: benchRequest, Passes: pass, Staged: true},
		{Name: "bench request, translated", Body: benchRequest, Passes: translated, Staged: true},
		{Name: "10 KB history, passed through", Body: history, Passes: pass, Staged: true},
		{Name: "10 KB history, translated", Body: history, Passes: translated, Staged: true},
		{Name: "small, passed through, without a Stage", Body: small, Passes: pass, Staged: false},
		{Name: "10 KB history, translated, without a Stage", Body: history, Passes: translated, Staged: false},
	}, func(i int, body []byte, row stacktest.Parse) error {
		if row.Staged {
			_, _, err := stages[i].ParseHeadLazy(body, translate.DefaultMaxInflated, row.Passes)
			return err
		}
		_, _, err := ParseHeadLazy(body, translate.DefaultMaxInflated, row.Passes)
		return err
	})
}

// TestStage_Reused: one Stage parsing every body of the first pass's corpus in turn,
// passed through and translated, and building what it read incomplete, never Reset (the
// server resets it, but nothing a parse reads may depend on that), returns what the
// package's functions, each on a fresh Stage of its own, return.
func TestStage_Reused(t *testing.T) {
	var st Stage
	for _, body := range headBodies(t) {
		for _, passes := range []func(string) bool{nil, func(string) bool { return false }} {
			r, complete, err := st.ParseHeadLazy(bytes.Clone(body), translate.DefaultMaxInflated, passes)
			want, wcomplete, werr := ParseHeadLazy(bytes.Clone(body), translate.DefaultMaxInflated, passes)
			if fmt.Sprint(err) != fmt.Sprint(werr) || complete != wcomplete || !reflect.DeepEqual(r, want) {
				t.Fatalf("Stage.ParseHeadLazy(%q) = %+v, %v, %v; ParseHeadLazy's %+v, %v, %v", body, r, complete, err, want, wcomplete, werr)
			}
			if err != nil || complete {
				continue
			}
			err, werr = st.Build(r), Build(want)
			if fmt.Sprint(err) != fmt.Sprint(werr) || !reflect.DeepEqual(r, want) {
				t.Fatalf("Stage.Build(%q) = %+v, %v; Build's %+v, %v", body, r, err, want, werr)
			}
		}
	}
}
