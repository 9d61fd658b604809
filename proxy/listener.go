package proxy

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/agate-gateway/agate/translate"
	"github.com/agate-gateway/agate/translate/openaichat"
)

// clientListener accepts client connections within the configured caps. A connection
// beyond a cap is answered with an OpenAI error (503 for the total, 429 for one address)
// and closed. Connections it returns are *clientConn. Safe for concurrent use.
type clientListener struct {
	net.Listener
	max, perIP int
	// writeTimeout bounds each write to a client (server.write_timeout); 0: none.
	writeTimeout time.Duration
	// refused, if not nil, is told the status of each refused connection.
	refused func(status int)
	// refusals bounds the connections being refused at once: each reads the request
	// head (so the answer does not race it) for at most refuseTimeout.
	refusals chan struct{}

	mu   sync.Mutex
	open int
	byIP map[string]int
	// conns holds the open connections, for closeSilent.
	conns map[*clientConn]struct{}
	// closeOnce closes the listener once (Close, drain.go).
	closeOnce sync.Once
	closeErr  error
}

const (
	// refuseTimeout bounds the time spent on a refused connection.
	refuseTimeout = time.Second
	// maxRefusals bounds the refused connections answered at once; beyond it a refused
	// connection is closed at once.
	maxRefusals = 64
	// drainTimeout bounds the reading of what a client still sends after its request was
	// answered with the connection closed (see clientConn.drainOnClose).
	drainTimeout = 3 * time.Second
	// silentAge is how long a connection that has sent nothing lives on once a shutdown
	// starts (closeSilent): a client that just connected has that long to send its request.
	// net/http waits as long for its connections in StateNew.
	silentAge = 5 * time.Second
)

func newClientListener(ln net.Listener, max, perIP int, writeTimeout time.Duration) *clientListener {
	return &clientListener{Listener: ln, max: max, perIP: perIP, writeTimeout: writeTimeout,
		refusals: make(chan struct{}, maxRefusals), byIP: map[string]int{}, conns: map[*clientConn]struct{}{}}
}

// Accept returns the next connection within the caps; refused ones never reach the caller.
func (l *clientListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		cc := &clientConn{Conn: c, l: l, ip: remoteIP(c), accepted: time.Now()}
		if status := l.acquire(cc); status != 0 {
			if l.refused != nil {
				l.refused(status)
			}
			l.refuse(c, status)
			continue
		}
		return cc, nil
	}
}

// acquire counts c, or returns the status refusing it.
func (l *clientListener) acquire(c *clientConn) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.max > 0 && l.open >= l.max {
		return 503
	}
	if l.perIP > 0 && l.byIP[c.ip] >= l.perIP {
		return 429
	}
	l.open++
	if l.perIP > 0 {
		l.byIP[c.ip]++
	}
	l.conns[c] = struct{}{}
	return 0
}

func (l *clientListener) release(c *clientConn) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.open--
	if l.perIP > 0 {
		if l.byIP[c.ip]--; l.byIP[c.ip] <= 0 {
			delete(l.byIP, c.ip)
		}
	}
	delete(l.conns, c)
}

// settle records what the answers on its connections left (clientConn.done).
func (l *clientListener) settle() {
	l.mu.Lock()
	conns := make([]*clientConn, 0, len(l.conns))
	for c := range l.conns {
		if c.done.pending.Load() {
			conns = append(conns, c)
		}
	}
	l.mu.Unlock()
	for _, c := range conns { // outside mu: a record may log
		c.done.flush()
	}
}

// closeSilent closes the connections that were accepted before cutoff and have sent
// nothing. A shutdown calls it: fasthttp waits for such a connection's first request
// until server.read_timeout, so one spare connection a client opened and never used
// would otherwise hold the shutdown that long.
func (l *clientListener) closeSilent(cutoff time.Time) {
	var silent []*clientConn
	l.mu.Lock()
	for c := range l.conns {
		if !c.spoke.Load() && c.accepted.Before(cutoff) {
			silent = append(silent, c)
		}
	}
	l.mu.Unlock()
	for _, c := range silent {
		c.silenced.Store(true) // its pending read ends as a client's close would
		_ = c.Close()          // outside mu: Close releases c under it
	}
}

// refuse answers c with status and closes it, in the background and within
// refuseTimeout; when too many refusals are under way it closes c at once.
func (l *clientListener) refuse(c net.Conn, status int) {
	select {
	case l.refusals <- struct{}{}:
	default:
		c.Close()
		return
	}
	go func() {
		defer func() { <-l.refusals }()
		_ = c.SetDeadline(time.Now().Add(refuseTimeout))
		readHead(c, 8<<10)
		_, _ = c.Write(refusal(status))
		drainClose(c, 64<<10)
	}()
}

// refusal is the whole HTTP response refusing a connection.
func refusal(status int) []byte {
	msg, code := "the gateway is serving its maximum number of connections (server.max_connections); retry later", "too_many_connections"
	if status == 429 {
		msg, code = "too many connections from your address (server.max_connections_per_ip); retry later", "too_many_connections_per_ip"
	}
	body := openaichat.AppendError(nil, msg, translate.ErrorType(status), "", code)
	out := []byte("HTTP/1.1 " + strconv.Itoa(status) + " " + statusText(status) + "\r\nContent-Type: application/json\r\n" +
		"Retry-After: 1\r\nConnection: close\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n")
	return append(out, body...)
}

func statusText(status int) string {
	if status == 429 {
		return "Too Many Requests"
	}
	return "Service Unavailable"
}

// readHead reads from c until the end of a request head or limit bytes.
func readHead(c net.Conn, limit int) {
	buf := make([]byte, 0, 1024)
	tmp := make([]byte, 1024)
	for len(buf) < limit {
		n, err := c.Read(tmp)
		buf = append(buf, tmp[:n]...)
		if bytes.Contains(buf, []byte("\r\n\r\n")) || err != nil {
			return
		}
	}
}

// drainClose ends the write side of c, so the client receives everything written and a
// clean end, reads and discards up to limit bytes it still sends (within c's read
// deadline), and closes c. Closing with unread input would make the kernel reset the
// connection, and a client still writing its request would then never read the answer.
func drainClose(c net.Conn, limit int64) error {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	}
	_, _ = io.CopyN(io.Discard, c, limit)
	return c.Close()
}

func remoteIP(c net.Conn) string {
	if a, ok := c.RemoteAddr().(*net.TCPAddr); ok {
		return a.IP.String()
	}
	host, _, err := net.SplitHostPort(c.RemoteAddr().String())
	if err != nil {
		return c.RemoteAddr().String()
	}
	return host
}

// clientConn is an accepted client connection, counted against the caps until closed.
//
// Its read deadline is set lazily. fasthttp moves it twice a request (the idle timeout
// before it waits for the next one, the read timeout once that starts), each move a timer
// update in the runtime's poller. A deadline no earlier than the one armed on the
// connection is only recorded (want); the armed one stays until it passes, when Read
// arms want and reads on. So a Read fails with a timeout exactly when it would have with
// every deadline set (once want has passed), and a busy connection arms a deadline about
// once per timeout instead of twice per request. SetReadDeadline and Read are called by
// one goroutine at a time (the connection's, in fasthttp).
type clientConn struct {
	net.Conn
	l  *clientListener
	ip string
	// accepted is when the connection was accepted; spoke is set once a byte was read
	// from it (see closeSilent).
	accepted time.Time
	spoke    atomic.Bool
	// silenced is set when closeSilent closes the connection: a read it ends reports
	// io.EOF, which fasthttp takes for a client that went away, not an error to log.
	silenced atomic.Bool
	drain    atomic.Int64 // bytes to read and discard before closing; 0: none
	once     sync.Once
	// writeDeadline is the write deadline last set; only Write uses it.
	writeDeadline time.Time
	// armed is the read deadline set on the connection, want the one last asked for;
	// zero: none.
	armed, want time.Time
	// done is the record the last non-streamed answer left (requestRun.finish), made by the
	// next Read, once the answer is written, or by Close or Server.Settle.
	done doneSlot
	// cred is the credential header the connection last had accepted (requestKey).
	cred connCredential
	// idle is set while fasthttp waits for the connection's next request, served once
	// fasthttp let it go (connState, for Shutdown's drainIdle).
	idle, served atomic.Bool
}

// SetReadDeadline asks for t as the read deadline; see clientConn for when it is set.
func (c *clientConn) SetReadDeadline(t time.Time) error {
	c.want = t
	if t.IsZero() || !c.armed.IsZero() && !t.Before(c.armed) {
		return nil // none, or no earlier than the armed one: Read extends it when it passes
	}
	c.armed = t
	return c.Conn.SetReadDeadline(t)
}

// SetDeadline sets both deadlines at once, the read one armed as asked.
func (c *clientConn) SetDeadline(t time.Time) error {
	c.armed, c.want, c.writeDeadline = t, t, t
	return c.Conn.SetDeadline(t)
}

// Read reads from the connection; when the armed read deadline passes before the one
// asked for, it arms that one and reads on.
func (c *clientConn) Read(p []byte) (int, error) {
	// fasthttp reads again only once the last answer is written (to wait for the next
	// request): what that answer left is recorded now, before the wait.
	c.done.flush()
	for {
		n, err := c.Conn.Read(p)
		if n > 0 && !c.spoke.Load() {
			c.spoke.Store(true)
		}
		if err != nil && c.silenced.Load() {
			return n, io.EOF
		}
		if err == nil || c.armed.Equal(c.want) || !errors.Is(err, os.ErrDeadlineExceeded) {
			return n, err
		}
		if !c.want.IsZero() && !time.Now().Before(c.want) {
			return n, err // the deadline asked for has passed too
		}
		c.armed = c.want
		if err := c.Conn.SetReadDeadline(c.want); err != nil {
			return n, err
		}
		if n > 0 {
			return n, nil
		}
	}
}

// drainOnClose makes Close first read and discard up to limit bytes the client still
// sends (for at most drainTimeout): call it when answering a request whose body is left
// unread, so the answer reaches a client that is still writing.
func (c *clientConn) drainOnClose(limit int64) { c.drain.Store(limit) }

// Write writes p, failing when the client has not accepted it within the write timeout:
// a client that stops reading ends its response (a stream's upstream is then released)
// instead of holding it forever. The bound is per write, not per response.
//
// Setting a deadline costs more than a clock read, so it is moved only when less than the
// timeout is left, to 1.25 times the timeout ahead: a write may wait between the timeout
// and 1.25 times it. Write is called by one goroutine at a time (fasthttp's).
func (c *clientConn) Write(p []byte) (int, error) {
	if d := c.l.writeTimeout; d > 0 {
		// time.Until reads only the monotonic clock once the deadline has a reading of
		// it (set from time.Now), half of what time.Now costs.
		if time.Until(c.writeDeadline) < d {
			c.writeDeadline = time.Now().Add(d + d/4)
			if err := c.Conn.SetWriteDeadline(c.writeDeadline); err != nil {
				return 0, err
			}
		}
	}
	return c.Conn.Write(p)
}

// Close closes the connection once, draining it first when asked, and releases its
// place under the caps.
func (c *clientConn) Close() error {
	c.done.flush()
	err := net.ErrClosed
	c.once.Do(func() {
		if n := c.drain.Load(); n > 0 {
			_ = c.Conn.SetDeadline(time.Now().Add(drainTimeout))
			err = drainClose(c.Conn, n)
		} else {
			err = c.Conn.Close()
		}
		c.l.release(c)
	})
	return err
}

// answerConn returns the client connection of ctx, when the gateway's listener accepted
// it; ctx may be nil.
func answerConn(ctx *fasthttp.RequestCtx) (*clientConn, bool) {
	if ctx == nil {
		return nil, false
	}
	conn, ok := ctx.Conn().(*clientConn)
	return conn, ok
}

// connCredential is the credential header a connection last had accepted and the key
// it named under rt. It is used by the connection's own goroutine only.
type connCredential struct {
	rt    *runtime
	which byte
	value []byte
	key   *apiKey
	// admitted is the fasthttp id of the request (RequestCtx.ID) whose headers named
	// key under rt when it was admitted: the handler of that same request takes the key
	// without reading and comparing the header again (requestKey). 0: none.
	admitted uint64
}
