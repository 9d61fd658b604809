package upstream

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"syscall"
	"testing"
	"time"

	"github.com/agate-gateway/agate/translate/openai"
)

// Each timeout bounds what its name says, measured against a fake OpenAI-compatible
// upstream over real sockets. fasthttp's sockets do not block durably inside a
// testing/synctest bubble, so the timeouts are real and short (tens of milliseconds) and
// each measured wait is checked against its configured value with a tolerance for
// scheduling, and against the sum of the timeouts (what an attempt waited when connect
// was added to header) it must stay well below. A loaded machine wakes every timer late:
// a plain timer of the configured length, run beside the measured wait (lateness), says
// by how much, and that lateness, which is not the timeout's doing, is not counted
// against it.
const (
	short     = 50 * time.Millisecond
	long      = 500 * time.Millisecond
	tolerance = 60 * time.Millisecond
)

// lateness starts a plain timer of d and returns a function that waits for it and says
// how much later than d it fired: the scheduling delay the machine's load adds to any
// timer at that moment.
func lateness(d time.Duration) func() time.Duration {
	start := time.Now()
	late := make(chan time.Duration, 1)
	time.AfterFunc(d, func() { late <- time.Since(start) - d })
	return func() time.Duration { return <-late }
}

// silentUpstream accepts requests and never answers; arrived receives the time each
// request reached it.
func silentUpstream(t *testing.T) (*httptest.Server, chan time.Time) {
	arrived := make(chan time.Time, 4)
	done := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived <- time.Now()
		select {
		case <-r.Context().Done():
		case <-done:
		}
	}))
	t.Cleanup(func() { close(done); srv.Close() })
	return srv, arrived
}

// stallingUpstream answers a streamed chat completion with its head and one chunk, then
// says nothing more; sent receives the time the chunk was flushed.
func stallingUpstream(t *testing.T) (*httptest.Server, chan time.Time) {
	sent := make(chan time.Time, 4)
	done := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"up","choices":[{"index":0,"delta":{"role":"assistant","content":"Hel"},"finish_reason":null}]}`+"\n\n")
		w.(http.Flusher).Flush()
		sent <- time.Now()
		select {
		case <-r.Context().Done():
		case <-done:
		}
	}))
	t.Cleanup(func() { close(done); srv.Close() })
	return srv, sent
}

// fullListener returns the address of a listener whose accept queue is full: a
// connection to it is never accepted, so dialing it waits out the connect timeout.
func fullListener(t *testing.T) string {
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Skip("no raw sockets:", err)
	}
	t.Cleanup(func() { syscall.Close(fd) })
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Listen(fd, 0); err != nil {
		t.Fatal(err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", sa.(*syscall.SockaddrInet4).Port)
	// The one connection the queue holds; the next is left waiting.
	c, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Close(c) })
	if err := syscall.Connect(c, sa); err != nil {
		t.Fatal(err)
	}
	return addr
}

// TestTimeouts_Measured: connect bounds dialing, header the wait for the head after the
// request was written, stream_idle the silence inside a streamed body, SendBy's deadline
// the wait for the head; each alone, never their sum, and each a TimedOut 504.
func TestTimeouts_Measured(t *testing.T) {
	tests := []struct {
		name     string
		timeouts Timeouts
		// deadline, when set, is SendBy's, from the start of the send.
		deadline time.Duration
		// want is the configured bound the measured wait must match.
		want time.Duration
		// sum is what the attempt would wait were the timeouts added up.
		sum time.Duration
	}{
		{name: "connect", timeouts: Timeouts{Connect: short, Header: long, StreamIdle: long}, want: short, sum: short + long},
		{name: "header", timeouts: Timeouts{Connect: long, Header: short, StreamIdle: long}, want: short, sum: long + short},
		{name: "stream_idle", timeouts: Timeouts{Connect: long, Header: long, StreamIdle: short}, want: short, sum: long + long + short},
		{name: "request deadline", timeouts: Timeouts{Connect: long, Header: long, StreamIdle: long}, deadline: short, want: short, sum: long + long},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.timeouts.PoolWait = long
			var base string
			var from chan time.Time // the moment the wait starts, when the upstream knows it
			switch tt.name {
			case "connect":
				base = "http://" + fullListener(t)
			case "stream_idle":
				srv, sent := stallingUpstream(t)
				base, from = srv.URL, sent
			default:
				srv, arrived := silentUpstream(t)
				base, from = srv.URL, arrived
			}
			c, err := New(Backend{Name: "up", BaseURL: base, MaxConns: 2, Timeouts: tt.timeouts}, openai.New())
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			late := lateness(tt.want)
			start := time.Now()
			var deadline time.Time
			if tt.deadline > 0 {
				deadline = start.Add(tt.deadline)
			}
			var mem Exchange
			x, err := c.SendBy(ctx, deadline, "/chat/completions", nil, []byte(`{"model":"up","stream":true,"messages":[]}`), tt.name == "stream_idle", &mem)
			if tt.name == "stream_idle" {
				if err != nil {
					t.Fatal(err)
				}
				body, derr := DecodedBody(x, "up")
				if derr != nil {
					t.Fatal(derr)
				}
				err = Pump(ctx, body, "up", nil, func(typ, data []byte) error { return nil }, nil, func() error { return nil })
				x.Close()
			}
			end := time.Now()
			if !TimedOut(err) || AsError(err).Status != http.StatusGatewayTimeout {
				t.Fatalf("error %v; want a TimedOut 504", err)
			}
			waited := end.Sub(start)
			if from != nil {
				waited = end.Sub(<-from)
			}
			// A plain timer's lateness meanwhile is the machine's, not the timeout's.
			machine := max(late(), 0)
			// stream_idle may cut up to 1/16 early (idleConn moves its deadline lazily).
			if waited < tt.want-tt.want/16-time.Millisecond || waited-machine > tt.want+tolerance {
				t.Errorf("configured %v, waited %v, a plain timer %v late (the sum would be %v)", tt.want, waited, machine, tt.sum)
			}
			if total := end.Sub(start); total-machine >= tt.sum {
				t.Errorf("the attempt took %v, a plain timer %v late: the sum of the timeouts (%v)", total, machine, tt.sum)
			}
			t.Logf("%s: configured %v, measured %v, a plain timer %v late (sum of the timeouts %v)", tt.name, tt.want, waited.Round(time.Millisecond), machine.Round(time.Millisecond), tt.sum)
		})
	}
}
