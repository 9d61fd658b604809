package upstream

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"

	"github.com/valyala/fasthttp"
)

// TestExchange_BodyOwnership: a body fasthttp read whole is read where it is, in the
// response's own buffer (Buffered); one it streams (or that is encoded) is read into the
// caller's buffer (ReadBody). After KeepBody (an error that may quote the body) the bytes
// stay as they were whatever the response is then used for, as fasthttp reuses a
// released response.
func TestExchange_BodyOwnership(t *testing.T) {
	const answer = `{"id":"x","choices":[]}`
	tests := []struct {
		name     string
		streamed bool // the response has a body stream (Response.StreamBody)
		encoded  bool // the response has a Content-Encoding
		inPlace  bool // Buffered returns the response's own buffer
	}{
		{name: "read whole by fasthttp", inPlace: true},
		{name: "streamed", streamed: true},
		{name: "encoded", encoded: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := fasthttp.AcquireResponse()
			defer fasthttp.ReleaseResponse(resp)
			if tt.streamed {
				resp.SetBodyStream(strings.NewReader(answer), len(answer))
			} else {
				resp.SetBodyString(answer)
			}
			if tt.encoded {
				resp.Header.SetContentEncoding("identity")
			}
			x := &Exchange{resp: resp}
			body, inPlace := x.Buffered()
			if inPlace != tt.inPlace {
				t.Fatalf("Buffered: %v, want %v", inPlace, tt.inPlace)
			}
			if !inPlace {
				dst := make([]byte, 0, 64)
				var err error
				body, err = ReadBody(context.Background(), x, "up", dst)
				if err != nil || string(body) != answer {
					t.Fatalf("ReadBody = %q, %v", body, err)
				}
				if &body[:1][0] != &dst[:1][0] {
					t.Error("ReadBody did not read into the caller's buffer")
				}
			} else if string(body) != answer || &resp.Body()[0] != &body[0] {
				t.Fatalf("Buffered = %q, not the response's own buffer", body)
			}
			x.KeepBody()
			resp.Reset() // as the next exchange given this response would
			resp.SetBodyStream(io.NopCloser(bytes.NewReader(nil)), 0)
			resp.SetBodyString(strings.Repeat("z", len(answer)))
			if string(body) != answer {
				t.Errorf("after KeepBody and reuse, body = %q", body)
			}
		})
	}
}
