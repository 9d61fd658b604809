package proxy_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// TestMessagesContinuation_HollowBlock: a stream cut right after a tool_use block's
// content_block_start (the client has the call's id and name, no byte of its input) is
// continued into that block when the new answer has the same call there; when it has
// another (here the recorded stream with the tool renamed), closing the client's block
// empty would hand it a call with no input to run, so the stream ends with the in-band
// continuation_diverged instead, and the client's block is never closed.
func TestMessagesContinuation_HollowBlock(t *testing.T) {
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
			cut := rec.index(t, `"tool_use"`, 1) + 1 // after the first tool_use's start
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
						ev = tt.again(ev)
					}
					w.Write(ev)
				}
			}))
			t.Cleanup(srv.Close)
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
