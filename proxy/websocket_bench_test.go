package proxy

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/coder/websocket"
)

// BenchmarkResponsesWebsocket compares a streamed Responses turn (200 text deltas) over
// the WebSocket mode with the same turn as a POST /v1/responses stream (SSE), on the
// passthrough to a responses backend and on the translated path (an OpenAI chat
// upstream). The WebSocket turns share one connection, as Codex's do; the SSE requests
// one keep-alive connection. Client and server run in this process, so ns/op and
// allocs/op include each client's own work (the WebSocket client's reads reuse one
// buffer).
//
//	go test -run XXX -bench BenchmarkResponsesWebsocket -benchmem ./proxy/
func BenchmarkResponsesWebsocket(b *testing.B) {
	up := newBenchResponsesUpstream(b)
	chat := newBenchUpstream(b)
	g := startGatewayWith(b, `
backends:
  up: {type: responses, base_url: "http://{{UP}}/v1", api_key: k, retries: {max: 0}}
  chat: {type: openai, base_url: "http://{{CHAT}}/v1", retries: {max: 0}}
models:
  gpt: {backend: up, upstream_model: up-model}
  via-chat: {backend: chat, upstream_model: up-model}
keys:
  bench: {key: sk-bench, models: ["*"]}
responses: {store: off}
`, map[string]string{"UP": up.addr, "CHAT": chat.addr}, gatewayOptions{logOut: io.Discard})
	for _, model := range []struct{ name, model string }{{"passthrough", "gpt"}, {"translated-chat", "via-chat"}} {
		b.Run(model.name+"/sse", func(b *testing.B) {
			runResponsesBench(b, strings.TrimPrefix(g.base, "http://"), fmt.Sprintf(`{"model":%q,"input":"hi","stream":true}`, model.model), true)
		})
		b.Run(model.name+"/websocket", func(b *testing.B) {
			ctx := context.Background()
			c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(g.base, "http")+"/v1/responses",
				&websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer sk-bench"}}})
			if err != nil {
				b.Fatal(err)
			}
			defer c.CloseNow()
			c.SetReadLimit(1 << 20)
			buf := make([]byte, 0, 64<<10) // the client reads each message into it, allocating nothing
			msg := []byte(fmt.Sprintf(`{"type":"response.create","model":%q,"input":"hi","store":false}`, model.model))
			turn := func() int {
				if err := c.Write(ctx, websocket.MessageText, msg); err != nil {
					b.Fatal(err)
				}
				n := 0
				for {
					p, err := readInto(ctx, c, buf[:0])
					if err != nil {
						b.Fatal(err)
					}
					buf = p
					n++
					if bytes.Contains(p[:min(len(p), 40)], []byte(`"response.completed"`)) {
						return n
					}
					if bytes.HasPrefix(p, []byte(`{"type":"error"`)) {
						b.Fatalf("error: %s", p)
					}
				}
			}
			if n := turn(); n < benchEvents {
				b.Fatalf("a turn had %d messages", n)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				turn()
			}
			b.StopTimer()
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/benchEvents, "ns/event")
		})
	}
}

// readInto reads the next message of c into dst.
func readInto(ctx context.Context, c *websocket.Conn, dst []byte) ([]byte, error) {
	_, r, err := c.Reader(ctx)
	if err != nil {
		return dst, err
	}
	for {
		if len(dst) == cap(dst) {
			dst = append(dst, 0)[:len(dst)]
		}
		n, err := r.Read(dst[len(dst):cap(dst)])
		dst = dst[:len(dst)+n]
		if err == io.EOF {
			return dst, nil
		}
		if err != nil {
			return dst, err
		}
	}
}
