package proxy

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agate-gateway/agate/upstream"
)

func gzipped(t *testing.T, write func(w io.Writer)) []byte {
	t.Helper()
	return gzippedLevel(t, gzip.DefaultCompression, write)
}

// gzippedLevel is gzipped at a compression level.
func gzippedLevel(t *testing.T, level int, write func(w io.Writer)) []byte {
	t.Helper()
	var b bytes.Buffer
	zw, err := gzip.NewWriterLevel(&b, level)
	if err != nil {
		t.Fatal(err)
	}
	write(zw)
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestUpstreamBody_OverBound: a non-streamed upstream body over 64 MiB is a 502 naming the
// backend, never a 200 with the body cut short; a gzip body that decodes past the bound (a
// decompression bomb) is the same 502, read no further than the bound.
func TestUpstreamBody_OverBound(t *testing.T) {
	t.Parallel() // its own gateway, fakes and servers (#54)
	const over = upstream.MaxResponseBytes + 1<<20
	// BestSpeed: the same bomb (one gzip member, 65 MiB of zeros in 83 KB), compressed in a
	// fifth of the default level's time under -race.
	bomb := gzippedLevel(t, gzip.BestSpeed, func(w io.Writer) {
		w.Write([]byte(`{"id":"x","object":"chat.completion","choices":[],"pad":"`))
		zeros := make([]byte, 1<<20)
		for range over >> 20 {
			w.Write(zeros)
		}
		w.Write([]byte(`"}`))
	})
	tests := []struct {
		name    string
		handler http.HandlerFunc
	}{
		{name: "plain", handler: func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(200)
			io.WriteString(w, `{"id":"x","object":"chat.completion","choices":[],"pad":"`)
			pad := bytes.Repeat([]byte("a"), 1<<20)
			for range over >> 20 {
				if _, err := w.Write(pad); err != nil {
					return
				}
			}
			io.WriteString(w, `"}`)
		}},
		{name: "gzip bomb", handler: func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Content-Encoding", "gzip")
			w.WriteHeader(200)
			w.Write(bomb)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			up := newUpstream(t, tt.handler)
			g := passthroughGateway(t, up)
			got := decodeError(t, g.chat("sk-alice", rawBody(t, userParams("gpt", "hi"), false)))
			if got.Status != 502 || !strings.Contains(got.Message, "backend up") || !strings.Contains(got.Message, "64 MiB") {
				t.Errorf("got %+v, want a 502 naming backend up and the 64 MiB bound", got)
			}
		})
	}
}

// TestUpstreamBody_Gzip: the gateway asks upstreams for identity encoding, and decodes an
// upstream that gzips anyway, streamed or not: the client gets JSON, not gzip bytes.
func TestUpstreamBody_Gzip(t *testing.T) {
	completion := fixture(t, "json/text.mirascope.json")
	stream := fixture(t, "stream/text-include-usage.mirascope.sse")
	serve := func(ct string, body []byte) http.HandlerFunc {
		gz := gzipped(t, func(w io.Writer) { w.Write(body) })
		return func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", ct)
			w.Header().Set("Content-Encoding", "gzip")
			w.WriteHeader(200)
			w.Write(gz)
		}
	}
	t.Run("complete", func(t *testing.T) {
		up := newUpstream(t, serve("application/json", completion))
		g := passthroughGateway(t, up)
		r := g.chat("sk-alice", rawBody(t, userParams("gpt", "What is 4200 + 42?"), false))
		if r.status != 200 {
			t.Fatalf("status %d: %s", r.status, r.body)
		}
		var got, want struct {
			ID      string
			Choices []struct{ Message struct{ Content string } }
		}
		if err := json.Unmarshal(r.body, &got); err != nil {
			t.Fatalf("body is not JSON: %v: %q", err, r.body)
		}
		json.Unmarshal(completion, &want)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("completion (-want +got):\n%s", diff)
		}
		if ae := up.calls()[0].Header.Get("Accept-Encoding"); ae != "identity" {
			t.Errorf("upstream request Accept-Encoding = %q, want identity", ae)
		}
	})
	t.Run("stream", func(t *testing.T) {
		up := newUpstream(t, serve("text/event-stream", stream))
		g := passthroughGateway(t, up)
		r := g.chat("sk-alice", rawBody(t, userParams("gpt", "What is 4200 + 42?"), true))
		if r.status != 200 {
			t.Fatalf("status %d: %s", r.status, r.body)
		}
		checkChunkInvariants(t, r.body, "gpt", false)
		if ae := up.calls()[0].Header.Get("Accept-Encoding"); ae != "identity" {
			t.Errorf("upstream request Accept-Encoding = %q, want identity", ae)
		}
	})
}
