package proxy

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"testing"
	"time"
)

// clockConn is a connection whose reads time out when its read deadline (set, recorded
// in armed) has passed on its clock (now), and otherwise return one byte.
type clockConn struct {
	net.Conn
	now   time.Time
	dl    time.Time
	armed []time.Time
}

func (c *clockConn) SetReadDeadline(t time.Time) error {
	c.dl = t
	c.armed = append(c.armed, t)
	return nil
}

func (c *clockConn) Read(p []byte) (int, error) {
	if !c.dl.IsZero() && !c.now.Before(c.dl) {
		return 0, os.ErrDeadlineExceeded
	}
	return 1, nil
}

// TestClientConn_LazyReadDeadline: a read deadline no earlier than the one armed is only
// recorded; a read past the armed one but before the one asked for arms that and goes on;
// a read past the one asked for times out; an earlier deadline is armed at once. The
// reads here run on the real clock (the deadlines are far from it) except where a row
// moves the fake connection's clock past the armed deadline.
func TestClientConn_LazyReadDeadline(t *testing.T) {
	t0 := time.Now()
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	type step struct {
		set     *time.Time    // SetReadDeadline(*set); nil: none
		connNow time.Duration // the connection's clock for the read after it
		wantErr bool          // the read times out
	}
	deadline := func(d time.Duration) *time.Time { t := at(d); return &t }
	zero := &time.Time{}
	tests := []struct {
		name      string
		steps     []step
		wantArmed []time.Time
	}{
		{name: "the first deadline is armed",
			steps:     []step{{set: deadline(time.Hour)}},
			wantArmed: []time.Time{at(time.Hour)}},
		{name: "later ones are recorded, not armed (idle, then read, then idle)",
			steps:     []step{{set: deadline(time.Hour)}, {set: deadline(2 * time.Hour)}, {set: deadline(time.Hour + time.Second)}, {set: deadline(3 * time.Hour)}},
			wantArmed: []time.Time{at(time.Hour)}},
		{name: "an earlier one is armed at once",
			steps:     []step{{set: deadline(time.Hour)}, {set: deadline(time.Hour - time.Millisecond)}},
			wantArmed: []time.Time{at(time.Hour), at(time.Hour - time.Millisecond)}},
		{name: "a read past the armed deadline arms the one asked for and reads on",
			steps:     []step{{set: deadline(time.Hour)}, {set: deadline(2 * time.Hour), connNow: time.Hour + time.Minute}},
			wantArmed: []time.Time{at(time.Hour), at(2 * time.Hour)}},
		{name: "no deadline asked for: the armed one is cleared when it passes",
			steps:     []step{{set: deadline(time.Hour)}, {set: zero, connNow: time.Hour + time.Minute}},
			wantArmed: []time.Time{at(time.Hour), {}}},
		{name: "no deadline at all: nothing is armed",
			steps: []step{{set: zero}, {}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fc := &clockConn{now: t0}
			c := &clientConn{Conn: fc}
			for i, st := range tt.steps {
				if st.set != nil {
					if err := c.SetReadDeadline(*st.set); err != nil {
						t.Fatal(err)
					}
				}
				fc.now = at(st.connNow)
				_, err := c.Read(make([]byte, 1))
				if gotErr := err != nil; gotErr != st.wantErr {
					t.Fatalf("step %d: read error %v, want error %v", i, err, st.wantErr)
				}
			}
			if fmt.Sprint(fc.armed) != fmt.Sprint(tt.wantArmed) {
				t.Errorf("armed %v, want %v", fc.armed, tt.wantArmed)
			}
		})
	}
	t.Run("a read past the deadline asked for times out", func(t *testing.T) {
		fc := &clockConn{now: t0}
		c := &clientConn{Conn: fc}
		_ = c.SetReadDeadline(time.Now().Add(-time.Second)) // already passed, on both clocks
		if _, err := c.Read(make([]byte, 1)); !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("read error %v, want a timeout", err)
		}
		_ = c.SetReadDeadline(time.Now().Add(-time.Millisecond)) // later, so only recorded
		fc.now = time.Now()
		if _, err := c.Read(make([]byte, 1)); !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("read error %v, want a timeout: the deadline asked for has passed", err)
		}
	})
}

// TestClientTimeouts: through the gateway, server.idle_timeout bounds the wait between
// two requests of a connection and server.read_timeout the reading of one, each on its
// own (the read deadline is set lazily, see clientConn). The bounds are far apart so
// that a loaded machine cannot blur them; the test waits only for what it asserts.
func TestClientTimeouts(t *testing.T) {
	t.Parallel() // it waits on real deadlines (#54)
	const readTimeout, idleTimeout = 700 * time.Millisecond, 2500 * time.Millisecond
	g := startGateway(t, fmt.Sprintf("server: {read_timeout: %s, idle_timeout: %s}\n", readTimeout, idleTimeout)+`
backends: {offline: {type: mock}}
models: {demo: {backend: offline}}
keys: {alice: {key: sk-alice, models: ["*"]}}
`, nil)
	request := "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer sk-alice\r\n" +
		"Content-Type: application/json\r\nContent-Length: " + fmt.Sprint(len(helloDemo)) + "\r\n\r\n" + helloDemo

	t.Run("a keep-alive connection idle past read_timeout but within idle_timeout serves its next request", func(t *testing.T) {
		t.Parallel() // each on its own connection
		c := dialGateway(t, g)
		br := bufio.NewReader(c)
		for i := range 3 {
			if i > 0 {
				// Past the read deadline armed for the request before; no sleep after
				// the last request, which no request follows (#54).
				time.Sleep(2 * readTimeout)
			}
			io.WriteString(c, request)
			if r := readResponse(t, br); r.status != 200 {
				t.Fatalf("request %d: status %d", i, r.status)
			}
		}
	})
	t.Run("a connection idle past idle_timeout is closed", func(t *testing.T) {
		t.Parallel() // each on its own connection
		c := dialGateway(t, g)
		br := bufio.NewReader(c)
		io.WriteString(c, request)
		readResponse(t, br)
		start := time.Now()
		if _, err := br.ReadByte(); err != io.EOF {
			t.Fatalf("read %v, want the server to close the connection", err)
		}
		if waited := time.Since(start); waited < idleTimeout-100*time.Millisecond {
			t.Errorf("closed after %v idle, before idle_timeout %v", waited, idleTimeout)
		}
	})
	t.Run("a request still arriving after read_timeout is cut off", func(t *testing.T) {
		t.Parallel() // each on its own connection
		c := dialGateway(t, g)
		io.WriteString(c, request[:len(request)-10]) // all but the body's last bytes
		start := time.Now()
		out, _ := io.ReadAll(c) // the server answers (408) or just closes
		if waited := time.Since(start); waited < readTimeout-100*time.Millisecond || waited > idleTimeout {
			t.Errorf("cut off after %v, want about read_timeout %v", waited, readTimeout)
		}
		if len(out) > 0 && !strings.HasPrefix(string(out), "HTTP/1.1 4") {
			t.Errorf("answer %q, want a 4xx or none", out)
		}
	})
}

// TestShutdown_SilentConnections: a connection that has sent nothing does not hold a
// graceful shutdown until server.read_timeout; it is closed once it is silentAge old. A
// client that connected before the shutdown and sends its request within silentAge is
// still answered. read_timeout is far beyond silentAge so that the two cannot be confused.
// The server's age is set to 2 s instead of silentAge's 5 (the same code, one field): it
// waits that long for real, in the parallel phase, whose last test it often was (#54).
func TestShutdown_SilentConnections(t *testing.T) {
	t.Parallel() // it waits the age for real (#54)
	g := startGatewayWith(t, `server: {read_timeout: 10m}
backends: {offline: {type: mock}}
models: {demo: {backend: offline}}
keys: {alice: {key: sk-alice, models: ["*"]}}
`, nil, gatewayOptions{noCleanupShutdown: true})
	if g.srv.silentAge != silentAge {
		t.Fatalf("New set silentAge %v, want the constant %v", g.srv.silentAge, silentAge)
	}
	age := 2 * time.Second
	g.srv.silentAge = age // before Shutdown, which starts the goroutine that reads it
	silent, late := dialGateway(t, g), dialGateway(t, g)
	eventually(t, "the gateway to accept both connections", func() bool {
		g.srv.listenersMu.Lock()
		defer g.srv.listenersMu.Unlock()
		if len(g.srv.listeners) == 0 { // Serve, started in a goroutine, has not registered it yet
			return false
		}
		l := g.srv.listeners[0]
		l.mu.Lock()
		defer l.mu.Unlock()
		return l.open == 2
	})

	start := time.Now()
	shutdown := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		shutdown <- g.srv.Shutdown(ctx)
	}()
	time.Sleep(age / 10) // the late client speaks 1.8 s before its connection's age is reached
	io.WriteString(late, "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer sk-alice\r\n"+
		"Content-Type: application/json\r\nContent-Length: "+fmt.Sprint(len(helloDemo))+"\r\n\r\n"+helloDemo)
	if r := readResponse(t, bufio.NewReader(late)); r.status != 200 {
		t.Errorf("the request sent after the shutdown started: status %d, want 200", r.status)
	}

	if err := <-shutdown; err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if took := time.Since(start); took > age+5*time.Second {
		t.Errorf("Shutdown took %v; the silent connection should have been closed after about %v", took, age)
	}
	if n, err := silent.Read(make([]byte, 1)); n != 0 || err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("the silent connection: read %d, %v; want it closed by the gateway", n, err)
	}
	if err := <-g.done; err != nil {
		t.Errorf("Serve: %v", err)
	}
	if logs := g.logText(); strings.Contains(logs, "error when serving connection") {
		t.Errorf("closing the silent connection was logged as an error:\n%s", logs)
	}
}

// discardConn accepts every write and deadline.
type discardConn struct{ net.Conn }

func (discardConn) Write(p []byte) (int, error)      { return len(p), nil }
func (discardConn) SetWriteDeadline(time.Time) error { return nil }

// BenchmarkClientConnWrite is the overhead clientConn adds to each write to a client
// (a streamed event's): a clock reading, and now and then a write deadline moved.
func BenchmarkClientConnWrite(b *testing.B) {
	c := &clientConn{Conn: discardConn{}, l: &clientListener{writeTimeout: time.Minute}}
	p := []byte("data: {}\n\n")
	b.ReportAllocs()
	for b.Loop() {
		_, _ = c.Write(p)
	}
}
