package messagesin_test

import (
	"bytes"
	"fmt"
	"os"
	"reflect"
	"testing"

	"github.com/agate-gateway/agate/internal/stacktest"
	"github.com/agate-gateway/agate/translate"
	"github.com/agate-gateway/agate/translate/messagesin"
)

// TestParseHead_StageStack: the server's parse of a Messages request (Stage.ParseHead,
// passed through or translated) under a connection goroutine's frames (ServerFrames)
// leaves that goroutine at 8 KiB of stack. fasthttp's connection goroutine keeps what the
// parse grew it to through a stream: 16 KiB stacks at 100 streams are 0.8 MB more, and as
// much again in the collector's goal. A parse without a Stage works on its stack and
// grows it to 16 KiB, which shows that the measure sees a parser's frame. (Stage.Build,
// the full parse of a request read incomplete, still takes more than 8 KiB with a 10 KB
// history: the full parser's own frames, PERFORMANCE.md's "Peak RSS, thirteenth session".)
func TestParseHead_StageStack(t *testing.T) {
	small := `{"max_tokens":1024,"messages":[{"content":"Write a short paragraph about the history of the bicycle.","role":"user"}],"model":"claude-bench","system":"You are a helpful assistant. Answer concisely and accurately.","temperature":0.7,"stream":true}`
	read := func(name string) string {
		b, err := os.ReadFile("testdata/" + name)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	history, claudeCode := read("history-10k.json"), read("claude-code-2.1.330.request.json")
	pass := func(string) bool { return true }
	translated := func(string) bool { return false }
	const n = 256
	stages := make([]messagesin.Stage, n)
	stacktest.ExpectParses(t, n, []stacktest.Parse{
		{Name: "small, passed through", Body: small, Passes: pass, Staged: true},
		{Name: "small, translated", Body: small, Passes: translated, Staged: true},
		{Name: "bench request, translated", Body: benchRequest, Passes: translated, Staged: true},
		{Name: "Claude Code's request, passed through", Body: claudeCode, Passes: pass, Staged: true},
		{Name: "Claude Code's request, translated", Body: claudeCode, Passes: translated, Staged: true},
		{Name: "10 KB history, passed through", Body: history, Passes: pass, Staged: true},
		{Name: "10 KB history, translated", Body: history, Passes: translated, Staged: true},
		{Name: "small, passed through, without a Stage", Body: small, Passes: pass, Staged: false},
		{Name: "10 KB history, translated, without a Stage", Body: history, Passes: translated, Staged: false},
	}, func(i int, body []byte, row stacktest.Parse) error {
		if row.Staged {
			_, _, _, err := stages[i].ParseHead(body, translate.DefaultMaxInflated, row.Passes)
			return err
		}
		_, _, _, err := messagesin.ParseHead(body, translate.DefaultMaxInflated, row.Passes)
		return err
	})
}

// TestStage_Reused: one Stage parsing every body of the first pass's corpus in turn,
// passed through and translated, and building what it read incomplete, never Reset (the
// server resets it, but nothing a parse reads may depend on that), returns what the
// package's functions, each on a fresh Stage of its own, return.
func TestStage_Reused(t *testing.T) {
	var st messagesin.Stage
	for _, body := range headBodies(t) {
		for _, passes := range []func(string) bool{nil, func(string) bool { return false }} {
			req, pass, complete, err := st.ParseHead(bytes.Clone(body), translate.DefaultMaxInflated, passes)
			want, wpass, wcomplete, werr := messagesin.ParseHead(bytes.Clone(body), translate.DefaultMaxInflated, passes)
			if fmt.Sprint(err) != fmt.Sprint(werr) || pass != wpass || complete != wcomplete || !reflect.DeepEqual(req, want) {
				t.Fatalf("Stage.ParseHead(%q) = %+v, %+v, %v, %v; ParseHead's %+v, %+v, %v, %v", body, req, pass, complete, err, want, wpass, wcomplete, werr)
			}
			if err != nil || complete {
				continue
			}
			err, werr = st.Build(req, body, translate.DefaultMaxInflated), messagesin.Build(want, body, translate.DefaultMaxInflated)
			if fmt.Sprint(err) != fmt.Sprint(werr) || !reflect.DeepEqual(req, want) {
				t.Fatalf("Stage.Build(%q) = %+v, %v; Build's %+v, %v", body, req, err, want, werr)
			}
		}
	}
}
