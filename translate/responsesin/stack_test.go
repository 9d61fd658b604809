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
	for _, tc := range []struct {
		name   string
		body   string
		passes func(string) bool
		stage  bool
	}{
		{"small, passed through", small, pass, true},
		{"small, translated", small, translated, true},
		{"bench request, passed through", benchRequest, pass, true},
		{"bench request, translated", benchRequest, translated, true},
		{"10 KB history, passed through", history, pass, true},
		{"10 KB history, translated", history, translated, true},
		{"small, passed through, without a Stage", small, pass, false},
		{"10 KB history, translated, without a Stage", history, translated, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body, stages := []byte(tc.body), make([]Stage, n)
			stacktest.Expect(t, n, stacktest.ServerFrames, tc.stage, func(i int) (err error) {
				if tc.stage {
					_, _, err = stages[i].ParseHeadLazy(body, translate.DefaultMaxInflated, tc.passes)
				} else {
					_, _, err = ParseHeadLazy(body, translate.DefaultMaxInflated, tc.passes)
				}
				return err
			})
		})
	}
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
