package upstream

import (
	"errors"
	"net"
	"os"
	"time"

	"github.com/valyala/fasthttp"
)

// idleConn bounds the silence between reads of an upstream connection: the response-header
// deadline fasthttp sets applies to the first read after it is set, and every later read
// (the streamed body) is under the stream-idle timeout.
//
// The clock is not read per read. While the idle bound is in force the read deadline is a
// tick, idle/16 ahead; a read only notes that it began (heard). When a tick passes, the
// read that saw it (a blocked one, or the next) takes the time: if a read began since the
// last tick, the silence is counted from now (quiet), else it has lasted since quiet, and
// once that is 15/16 of idle the read fails with the timeout; otherwise the next tick is
// set (never past quiet + 15/16 of idle) and the read goes on. So a read fails after
// between 15/16 of idle and idle (plus a timer's lateness) without a read begun, as when
// the deadline was moved lazily on the reads, at one clock reading a tick instead of one
// a read.
//
// Likewise the read and write deadlines fasthttp sets before each request (now plus the
// connect and header timeouts) leave the one in force when that is at most slack
// earlier, never later: on a busy connection most requests set none.
type idleConn struct {
	net.Conn
	idle time.Duration
	// slack is how much earlier than asked a deadline fasthttp sets may stay in force.
	slack   time.Duration
	pending time.Time // a deadline set by the client for the next read
	// ticking is set while the idle bound is in force (the read deadline is a tick);
	// heard, when a read began since the last tick; quiet is when the silence is
	// counted from.
	ticking, heard bool
	quiet          time.Time
	// rd and wd are the read and write deadlines in force; zero: none.
	rd, wd time.Time
}

// keeps reports whether the deadline in force, cur, may stand for t: both are set and
// cur is not later than t, nor more than slack earlier.
func (c *idleConn) keeps(cur, t time.Time) bool {
	return !cur.IsZero() && !t.IsZero() && !cur.After(t) && t.Sub(cur) <= c.slack
}

func (c *idleConn) SetReadDeadline(t time.Time) error {
	c.pending, c.ticking = t, false
	if c.keeps(c.rd, t) {
		return nil
	}
	c.rd = t
	return c.Conn.SetReadDeadline(t)
}

func (c *idleConn) SetWriteDeadline(t time.Time) error {
	if c.keeps(c.wd, t) {
		return nil
	}
	c.wd = t
	return c.Conn.SetWriteDeadline(t)
}

func (c *idleConn) SetDeadline(t time.Time) error {
	c.pending, c.ticking, c.rd, c.wd = t, false, t, t
	return c.Conn.SetDeadline(t)
}

func (c *idleConn) Read(p []byte) (int, error) {
	switch {
	case !c.pending.IsZero():
		c.pending = time.Time{} // header phase: keep the client's deadline for this read
		return c.Conn.Read(p)
	case !c.ticking:
		c.ticking, c.heard, c.quiet = true, false, time.Now()
		c.setTick(c.quiet)
	default:
		c.heard = true
	}
	for {
		n, err := c.Conn.Read(p)
		if n > 0 || err == nil || !c.ticking || !errors.Is(err, os.ErrDeadlineExceeded) || !c.tick() {
			return n, err
		}
	}
}

// tick handles a tick that passed: it reports whether the read goes on, the next tick
// set, or fails (the silence reached 15/16 of idle).
func (c *idleConn) tick() bool {
	now := time.Now()
	if c.heard {
		c.heard, c.quiet = false, now
	} else if now.Sub(c.quiet) >= c.idle-c.idle/16 {
		return false
	}
	return c.setTick(now) == nil
}

// setTick sets the read deadline to the next tick after now: idle/16 ahead, or quiet plus
// 15/16 of idle when that is sooner.
func (c *idleConn) setTick(now time.Time) error {
	c.rd = now.Add(c.idle / 16)
	if end := c.quiet.Add(c.idle - c.idle/16); end.Before(c.rd) {
		c.rd = end
	}
	return c.Conn.SetReadDeadline(c.rd)
}

// dialApart dials addr (fasthttp.DialTimeout) on a goroutine of its own and waits for it.
// A connection is dialed inside a request's send, which for a stream runs on the stream
// writer's coroutine, under the writer's and the model call's frames: the resolver and
// the socket calls below them reached 10.3 KiB of stack, where everything else a stream
// does, the send on a pooled connection and every event, stays within 8 KiB. Dialed apart,
// the writer's stack is not grown to 16 KiB, and kept so for the stream's whole life, by
// its connection's first request (PERFORMANCE.md, "The stream event and peak RSS,
// fifteenth session"). A dial is once a connection, so the goroutine costs nothing an
// event.
func dialApart(addr string, timeout time.Duration) (net.Conn, error) {
	type dialed struct {
		conn net.Conn
		err  error
	}
	ch := make(chan dialed, 1)
	go func() {
		conn, err := fasthttp.DialTimeout(addr, timeout)
		ch <- dialed{conn, err}
	}()
	d := <-ch
	return d.conn, d.err
}
