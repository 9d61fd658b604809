package proxy

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agate-gateway/agate/config"
	"github.com/agate-gateway/agate/upstream"
)

// TestAnswerBody_Ownership: a body fasthttp read whole is read where it is, in the
// response's own buffer; one it streams (or that is encoded) is read into the model
// call's pooled buffer (upstream.Buffer). After DropAnswer (an error that may quote the body) the bytes
// stay as they were whatever the response is then used for, as fasthttp reuses a
// released response (the next exchange's); after Release the pooled buffer goes back
// to the pool. (upstream's TestExchange_BodyOwnership holds the response's side.)
func TestAnswerBody_Ownership(t *testing.T) {
	const answer = `{"id":"x","choices":[]}`
	var n sync.Mutex
	calls := 0
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		n.Lock()
		calls++
		first := calls%2 == 1
		n.Unlock()
		if first {
			w.Write([]byte(answer))
		} else {
			w.Write([]byte(strings.Repeat("z", len(answer)))) // the next exchange
		}
	})
	b, err := newBackend("up", config.Backend{Type: "openai", BaseURL: up.v1(), MaxConns: 1,
		Timeouts: config.Timeouts{Connect: 5 * time.Second, Header: 5 * time.Second, StreamIdle: 5 * time.Second, PoolWait: 5 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		streamed bool // the response has a body stream (Response.StreamBody)
		pooled   bool // the body is read into c.body, not used in place
	}{
		{name: "read whole by fasthttp", streamed: false, pooled: false},
		{name: "streamed", streamed: true, pooled: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			c := &modelCall{body: upstream.Buffer{Pool: &sync.Pool{}}}
			x, err := b.client.Send(ctx, "/chat/completions", nil, []byte(`{}`), tt.streamed, &c.x)
			if err != nil {
				t.Fatal(err)
			}
			body, err := c.body.Answer(ctx, x, "up")
			if err != nil || string(body) != answer {
				t.Fatalf("Answer = %q, %v", body, err)
			}
			own, buffered := x.Buffered()
			if inPlace := buffered && len(own) > 0 && &own[0] == &body[0]; inPlace == tt.pooled {
				t.Errorf("body in the response's own buffer: %v, want %v", inPlace, !tt.pooled)
			}
			if (c.body.Bytes() != nil) != tt.pooled {
				t.Errorf("c.body holds a buffer: %v, want %v", c.body.Bytes() != nil, tt.pooled)
			}
			c.body.DropAnswer(x)
			x.Close()
			next, err := b.client.Send(ctx, "/chat/completions", nil, []byte(`{}`), false, &c.x)
			if err != nil {
				t.Fatal(err)
			}
			defer next.Close()
			if string(body) != answer {
				t.Errorf("after DropAnswer and reuse, body = %q", body)
			}
			if c.body.Bytes() != nil {
				t.Error("DropAnswer kept the buffer for the pool")
			}
		})
	}
}
