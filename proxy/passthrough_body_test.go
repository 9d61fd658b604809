package proxy

import (
	"bytes"
	"compress/flate"
	"compress/gzip"
	"encoding/binary"
	"encoding/json"
	"hash/crc32"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func gzipped(t *testing.T, write func(w io.Writer)) []byte {
	t.Helper()
	var b bytes.Buffer
	zw, err := gzip.NewWriterLevel(&b, gzip.DefaultCompression)
	if err != nil {
		t.Fatal(err)
	}
	write(zw)
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// gzipBomb returns one gzip member (RFC 1952) that decodes to prefix, mib MiB of zeros
// (mib >= 2) and suffix, in some 1 KB a MiB, without compressing mib MiB: at BestSpeed
// that took some 2 s of CPU for 65 MiB under -race (#54). It is what a compressor writes
// with a sync flush after each MiB: the DEFLATE blocks of the second MiB (ended by that
// flush, so byte-aligned) refer back only to zeros, so after the first MiB they decode to
// a MiB of zeros wherever they stand, and stand for every MiB after it. The header is
// gzip's own; the trailer's CRC-32 and size are the whole content's.
func gzipBomb(t *testing.T, prefix string, mib int, suffix string) []byte {
	t.Helper()
	if mib < 2 {
		t.Fatalf("gzipBomb of %d MiB: want at least 2", mib)
	}
	var head bytes.Buffer
	zw, err := gzip.NewWriterLevel(&head, gzip.BestSpeed)
	if err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	var body bytes.Buffer
	fw, err := flate.NewWriter(&body, flate.BestSpeed)
	if err != nil {
		t.Fatal(err)
	}
	zeros := make([]byte, 1<<20)
	fw.Write([]byte(prefix))
	fw.Write(zeros)
	fw.Flush()
	first := body.Len()
	fw.Write(zeros)
	fw.Flush()
	block := bytes.Clone(body.Bytes()[first:])
	for range mib - 2 {
		body.Write(block)
	}
	fw.Write([]byte(suffix))
	if err := fw.Close(); err != nil {
		t.Fatal(err)
	}
	crc := crc32.ChecksumIEEE([]byte(prefix))
	for range mib {
		crc = crc32.Update(crc, crc32.IEEETable, zeros)
	}
	crc = crc32.Update(crc, crc32.IEEETable, []byte(suffix))
	out := append(head.Bytes()[:10:10], body.Bytes()...) // the 10-byte header: no name, no comment
	out = binary.LittleEndian.AppendUint32(out, crc)
	return binary.LittleEndian.AppendUint32(out, uint32(len(prefix)+mib<<20+len(suffix)))
}

// TestGzipBomb: gzipBomb's member decodes, checksum and size checked by gzip's reader, to
// what it stands for.
func TestGzipBomb(t *testing.T) {
	t.Parallel()
	for _, mib := range []int{2, 3} { // the blocks of the second MiB alone, and repeated
		zr, err := gzip.NewReader(bytes.NewReader(gzipBomb(t, `{"pad":"`, mib, `"}`)))
		if err != nil {
			t.Fatal(err)
		}
		zr.Multistream(false)
		got, err := io.ReadAll(zr)
		if err != nil {
			t.Fatalf("%d MiB: %v", mib, err)
		}
		if want := `{"pad":"` + strings.Repeat("\x00", mib<<20) + `"}`; string(got) != want {
			t.Errorf("%d MiB: decodes to %d bytes, not the %d of prefix, zeros and suffix", mib, len(got), len(want))
		}
	}
}

// TestUpstreamBody_OverBound: a non-streamed upstream body over the backend's
// max_response_bytes is a 502 naming the backend and the bound, never a 200 with the body
// cut short; a gzip body that decodes past the bound (a decompression bomb) is the same
// 502, read no further than the bound. Proved at a configured bound of 1 MiB (the default
// 64 MiB is upstream's TestClient_MaxResponseBytes and config's): a 64 MiB body cost seconds
// of CPU under -race, most of it page faults (#54).
func TestUpstreamBody_OverBound(t *testing.T) {
	t.Parallel() // its own gateway, fakes and servers (#54)
	const bound = 1 << 20
	const over = bound + 1<<20
	// The bomb: one gzip member, 2 MiB of zeros in some 3 KB.
	bomb := gzipBomb(t, `{"id":"x","object":"chat.completion","choices":[],"pad":"`, over>>20, `"}`)
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
			cfg := strings.Replace(passthroughConfig, "retries: {max: 0}", "retries: {max: 0}\n    max_response_bytes: "+strconv.Itoa(bound), 1)
			g := startGateway(t, cfg, map[string]string{"UP": up.v1()})
			got := decodeError(t, g.chat("sk-alice", rawBody(t, userParams("gpt", "hi"), false)))
			if got.Status != 502 || !strings.Contains(got.Message, "backend up") || !strings.Contains(got.Message, "bound of 1 MiB") {
				t.Errorf("got %+v, want a 502 naming backend up and the 1 MiB bound", got)
			}
		})
	}
}

// TestUpstreamBody_Gzip: the gateway asks upstreams for identity encoding, and decodes an
// upstream that gzips anyway, streamed or not: the client gets JSON, not gzip bytes.
func TestUpstreamBody_Gzip(t *testing.T) {
	t.Parallel() // nothing shared, no clock or environment of the process (#54)
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
