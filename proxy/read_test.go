package proxy

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/agate-gateway/agate/metrics"
)

// memConn is a client connection whose whole input is already there: each Read returns
// as much as asked, as a socket does with the data in its buffer. It counts the Reads
// that returned data.
type memConn struct {
	in    *bytes.Reader
	mu    sync.Mutex
	out   bytes.Buffer
	reads int
}

func (c *memConn) Read(p []byte) (int, error) {
	n, err := c.in.Read(p)
	if n > 0 {
		c.reads++
	}
	return n, err
}

func (c *memConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.out.Write(p)
}

func (c *memConn) Close() error                     { return nil }
func (c *memConn) LocalAddr() net.Addr              { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8080} }
func (c *memConn) RemoteAddr() net.Addr             { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 40000} }
func (c *memConn) SetDeadline(time.Time) error      { return nil }
func (c *memConn) SetReadDeadline(time.Time) error  { return nil }
func (c *memConn) SetWriteDeadline(time.Time) error { return nil }

// emptyBody is TestRequestReads's request with no padding: its message is "hi ".
const emptyBody = `{"model":"demo","messages":[{"role":"user","content":"hi "}]}`

// TestRequestReads: a chat request that has fully arrived is read from the connection with
// one read when it fits the server's 16 KiB read buffer, head and body (an agent's 10 KB
// history), and with two beyond, whatever the size: the rest of the body goes straight
// into the body buffer. (fasthttp's default 4 KiB buffer took three for 10 KB; the 8 KiB
// one used before took two for 10 KB and three beyond 16 KiB, for 8 KiB less held per
// connection.)
func TestRequestReads(t *testing.T) {
	t.Parallel() // nothing shared, no clock or environment of the process (#54)
	// A Server of its own, never served: its fasthttp server serves the test's
	// connections alone.
	reg := prometheus.NewRegistry()
	srv, err := New(Options{Config: parseConfig(t, demoConfig, nil), Metrics: metrics.New(reg), Gatherer: reg})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.closeLimiter)
	tests := []struct {
		name      string
		padding   int
		wantReads int
	}{
		{name: "small", padding: 10, wantReads: 1},
		{name: "7 KB", padding: 7 << 10, wantReads: 1},
		// Around fasthttp's prefetch: a body it read whole with the head is used where it
		// lies; one byte more is read on through the stream.
		{name: "8 KiB less 1", padding: prefetched - 1 - len(emptyBody), wantReads: 1},
		{name: "8 KiB", padding: prefetched - len(emptyBody), wantReads: 1},
		{name: "8 KiB and 1", padding: prefetched + 1 - len(emptyBody), wantReads: 1},
		{name: "10 KB history", padding: 10 << 10, wantReads: 1},
		{name: "15 KB", padding: 15<<10 - 512, wantReads: 1},
		{name: "17 KB", padding: 17 << 10, wantReads: 2},
		{name: "200 KB", padding: 200 << 10, wantReads: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := fmt.Sprintf(emptyBody[:len(emptyBody)-4]+`%s"}]}`, strings.Repeat("x", tt.padding))
			req := "POST /v1/chat/completions HTTP/1.1\r\nHost: agate\r\nAuthorization: Bearer sk-alice\r\n" +
				"Content-Type: application/json\r\nConnection: close\r\nContent-Length: " + fmt.Sprint(len(body)) + "\r\n\r\n" + body
			c := &memConn{in: bytes.NewReader([]byte(req))}
			if err := srv.srv.ServeConn(c); err != nil && err != io.EOF {
				t.Fatalf("ServeConn: %v", err)
			}
			if !strings.HasPrefix(c.out.String(), "HTTP/1.1 200") {
				t.Fatalf("response:\n%s", c.out.String())
			}
			if echo := "hi " + strings.Repeat("x", tt.padding); !strings.Contains(c.out.String(), echo) {
				t.Errorf("the answer does not echo the whole %d-byte body's message:\n%.400s", len(body), c.out.String())
			}
			if c.reads != tt.wantReads {
				t.Errorf("the request took %d reads, want %d", c.reads, tt.wantReads)
			}
		})
	}
}
