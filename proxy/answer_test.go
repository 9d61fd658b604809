package proxy

import (
	"bytes"
	"context"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/valyala/fasthttp"
)

// TestAnswerBody_Ownership: a body fasthttp read whole is read where it is, in the
// response's own buffer; one it streams (or that is encoded) is read into the model
// call's pooled buffer. After dropAnswer (an error that may quote the body) the bytes
// stay as they were whatever the response is then used for, as fasthttp reuses a
// released response; after releaseBuf the pooled buffer goes back to the pool.
func TestAnswerBody_Ownership(t *testing.T) {
	const answer = `{"id":"x","choices":[]}`
	tests := []struct {
		name     string
		streamed bool // the response has a body stream (Response.StreamBody)
		pooled   bool // the body is read into c.buf, not used in place
	}{
		{name: "read whole by fasthttp", streamed: false, pooled: false},
		{name: "streamed", streamed: true, pooled: true},
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
			x := &exchange{resp: resp}
			c := &modelCall{bufs: &sync.Pool{}}
			body, err := c.answerBody(context.Background(), x, "up")
			if err != nil || string(body) != answer {
				t.Fatalf("answerBody = %q, %v", body, err)
			}
			if inPlace := len(resp.Body()) > 0 && &resp.Body()[0] == &body[0]; inPlace == tt.pooled {
				t.Errorf("body in the response's own buffer: %v, want %v", inPlace, !tt.pooled)
			}
			if (c.buf != nil) != tt.pooled {
				t.Errorf("c.buf set: %v, want %v", c.buf != nil, tt.pooled)
			}
			c.dropAnswer(x)
			resp.Reset() // as the next exchange given this response would
			resp.SetBodyStream(io.NopCloser(bytes.NewReader(nil)), 0)
			resp.SetBodyString(strings.Repeat("z", len(answer)))
			if string(body) != answer {
				t.Errorf("after dropAnswer and reuse, body = %q", body)
			}
			if c.buf != nil {
				t.Error("dropAnswer kept c.buf for the pool")
			}
		})
	}
}
