package proxy_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/openai/openai-go/v3/responses"

	"github.com/agate-gateway/agate/internal/gatewaytest"
)

// TestMessagesContinuation_HollowBlock: a stream cut right after a tool_use block's
// content_block_start (the client has the call's id and name, no byte of its input) is
// continued into that block when the new answer has the same call there; when it has
// another (here the recorded stream with the tool renamed), closing the client's block
// empty would hand it a call with no input to run, so the stream ends with the in-band
// continuation_diverged instead, and the client's block is never closed.
func TestMessagesContinuation_HollowBlock(t *testing.T) {
	t.Parallel() // nothing shared, no clock or environment of the process (#54)
	const file = "anthropic/stream/parallel-tool-use.mirascope.sse"
	for _, tt := range []struct {
		name  string
		again func([]byte) []byte // the second answer's events
		whole bool
	}{
		{"the same call again", func(ev []byte) []byte { return ev }, true},
		{"another call there", func(ev []byte) []byte {
			return bytes.ReplaceAll(ev, []byte(`"secret_retrieval_tool"`), []byte(`"password_lookup_tool"`))
		}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rec := newRecordedCut(t, file, -1)
			srv := alteredReplay(t, rec, rec.index(t, `"tool_use"`, 1)+1, tt.again) // cut after the first tool_use's start
			g := contGatewayAt(t, srv.URL, ", continuation: restart")
			got, types, err := streamContinued(t, g)
			if tt.whole {
				if err != nil || len(got.Content) != 3 || got.Content[1].Name != "secret_retrieval_tool" || string(got.Content[1].Input) == "{}" {
					t.Fatalf("error %v, content %+v; want the whole answer", err, got.Content)
				}
				waitFor(t, "continued", func() bool { return continuations(g, "continued") == 1 })
				return
			}
			if err == nil || !strings.Contains(err.Error(), "could not be continued") {
				t.Fatalf("error %v; want the in-band continuation_diverged", err)
			}
			if countOf(types, "content_block_stop") != 1 {
				t.Errorf("events %q: want the text block closed, the tool_use block left open", types)
			}
			waitFor(t, "diverged", func() bool { return continuations(g, "diverged") == 1 })
		})
	}
}

// TestResponsesContinuation_PartDone: a Responses stream cut after the client's
// output_text part was closed (output_text.done, content_part.done or the message's
// output_item.done reached it) is continued when the new answer repeats that text and
// closes it there too: the client gets the rest (its message's closing events once, the
// items after it, response.completed), the unbroken stream's output.
func TestResponsesContinuation_PartDone(t *testing.T) {
	t.Parallel() // its own gateways and fakes, as TestResponsesContinuation_Recorded (#54)
	// A recording's unbroken stream through the gateway, asked once (#54).
	unbroken := map[string]streamed{}
	for _, tt := range []struct {
		name, file, at string // the event to cut before: the n-th containing at
		n              int
	}{
		{"after output_text.done", "responses/stream/text-basic.mirascope.sse", `"response.content_part.done"`, 1},
		{"after content_part.done", "responses/stream/text-basic.mirascope.sse", `"response.output_item.done"`, 1},
		{"after the message's output_item.done", "responses/stream/text-basic.mirascope.sse", `"response.completed"`, 1},
		{"after output_text.done, behind reasoning", "responses/stream/reasoning-summary.mirascope.sse", `"response.content_part.done"`, 1},
		{"after the message, behind reasoning", "responses/stream/reasoning-summary.mirascope.sse", `"response.completed"`, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			want, ok := unbroken[tt.file]
			if !ok {
				whole := newRecordedCut(t, tt.file, -1)
				ref := contGatewayOn(t, "responses", whole.srv.URL+"/v1")
				want = streamResponse(t, gatewaytest.OpenAI(ref.V1(), "k"), responses.ResponseNewParams{Model: "m", Input: textInput("say it")})
				if want.err != nil || want.final == nil {
					t.Fatalf("the unbroken stream: %v", want.err)
				}
				unbroken[tt.file] = want
			}
			up := newRecordedCut(t, tt.file, 0)
			up.cut = up.index(t, tt.at, tt.n)
			g := contGatewayOn(t, "responses", up.srv.URL+"/v1")
			got := streamResponse(t, gatewaytest.OpenAI(g.V1(), "k"), responses.ResponseNewParams{Model: "m", Input: textInput("say it")})
			if got.err != nil || got.sawError || got.final == nil {
				t.Fatalf("error %v (error event %v); want the whole answer", got.err, got.sawError)
			}
			if got.final.OutputText() != want.final.OutputText() || len(got.final.Output) != len(want.final.Output) {
				t.Errorf("output %q in %d items; want the unbroken stream's %q in %d", got.final.OutputText(), len(got.final.Output),
					want.final.OutputText(), len(want.final.Output))
			}
			var types, wantTypes []string
			for _, ev := range got.events {
				types = append(types, fmt.Sprint(ev["type"]))
			}
			for _, ev := range want.events {
				wantTypes = append(wantTypes, fmt.Sprint(ev["type"]))
			}
			if !slices.Equal(types, wantTypes) {
				t.Errorf("events\n%q\nwant the unbroken stream's\n%q", types, wantTypes)
			}
			waitFor(t, "the continuation counted", func() bool { return continuations(g, "continued") == 1 })
		})
	}
}

// alteredReplay serves rec's events: the first answer cut (the connection dropped)
// before event cut, every later one whole with each event passed through again.
func alteredReplay(t *testing.T, rec *recordedCut, cut int, again func([]byte) []byte) *httptest.Server {
	var mu sync.Mutex
	var n int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		mu.Lock()
		n++
		first := n == 1
		mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(200)
		for i, ev := range rec.events {
			if first && i == cut {
				w.(http.Flusher).Flush()
				if conn, buf, err := w.(http.Hijacker).Hijack(); err == nil {
					buf.Flush()
					conn.Close()
				}
				return
			}
			if !first {
				ev = again(ev)
			}
			w.Write(ev)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestResponsesContinuation_PastDoneText: a Responses stream cut after the client's
// output_text.done, whose new answer's text goes on past that final text (the recorded
// answer with more at its end), ends with the error event continuation_diverged: the
// client's text was done, and the answers differ.
func TestResponsesContinuation_PastDoneText(t *testing.T) {
	t.Parallel() // nothing shared, no clock or environment of the process (#54)
	rec := newRecordedCut(t, "responses/stream/text-basic.mirascope.sse", -1)
	srv := alteredReplay(t, rec, rec.index(t, `"response.content_part.done"`, 1), func(ev []byte) []byte {
		if !bytes.Contains(ev, []byte(`"type":"response.output_text.delta","sequence_number":13,`)) {
			return ev
		}
		return bytes.Replace(ev, []byte(`"delta":"."`), []byte(`"delta":". And more."`), 1) // the last delta
	})
	g := contGatewayOn(t, "responses", srv.URL+"/v1")
	got := streamResponse(t, gatewaytest.OpenAI(g.V1(), "k"), responses.ResponseNewParams{Model: "m", Input: textInput("say it")})
	if !got.sawError {
		t.Fatalf("error %v; want the stream to end with the error event", got.err)
	}
	if last := got.events[len(got.events)-1]; last["code"] != "continuation_diverged" {
		t.Errorf("last event %v; want the error event continuation_diverged", last)
	}
	waitFor(t, "diverged", func() bool { return continuations(g, "diverged") == 1 })
}
