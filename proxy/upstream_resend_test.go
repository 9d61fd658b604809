package proxy

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"testing"

	"github.com/agate-gateway/agate/upstream"
)

// TestUpstream_ClosedUnansweredIsSentAgain: an upstream that reads a request and closes
// its connection without a byte of answer gets the request again at once, on a fresh
// connection, with the backend's own retries off: a small body sent again by the upstream
// client, one over upstream.MaxSpareBody (given back once written) built again by the
// model call (upstream.Resend).
func TestUpstream_ClosedUnansweredIsSentAgain(t *testing.T) {
	for _, size := range []int{2, upstream.MaxSpareBody + 1} {
		t.Run(strconv.Itoa(size), func(t *testing.T) {
			body := completionJSON("up-model", "hello")
			up := newRawUpstream(t, func(n int, w io.Writer) bool {
				if n == 1 {
					return true // read whole, then closed unanswered
				}
				fmt.Fprintf(w, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
				return false
			})
			g := startGateway(t, streamConfig, map[string]string{"UP": up.url})
			client := g.client("")
			r, err := client.Chat.Completions.New(context.Background(), userParams("gpt", strings.Repeat("h", size)))
			if err != nil || r.Choices[0].Message.Content != "hello" {
				t.Fatalf("request: %v", err)
			}
			if n := up.requests.Load(); n != 2 {
				t.Errorf("the upstream read %d requests, want 2", n)
			}
		})
	}
}
