package upstream

import (
	"net"
	"time"
)

// idleConn bounds the silence between reads of an upstream connection: the response-header
// deadline fasthttp sets applies to the first read after it is set, and every later read
// (the streamed body) gets the stream-idle timeout afresh.
//
// Moving a deadline costs a timer update in the runtime's poller, once per read of a
// stream. So a read moves it only when the last move is more than idle/16 old: the
// deadline then lies between 15/16 of idle and idle after the last read, never later.
// Likewise the read and write deadlines fasthttp sets before each request (now plus the
// connect and header timeouts) leave the one in force when that is at most slack
// earlier, never later: on a busy connection most requests set none.
type idleConn struct {
	net.Conn
	idle time.Duration
	// slack is how much earlier than asked a deadline fasthttp sets may stay in force.
	slack   time.Duration
	pending time.Time // a deadline set by the client for the next read
	// moved is when the idle deadline was last set; zero means it is not in force (the
	// client's deadline is, or none).
	moved time.Time
	// rd and wd are the read and write deadlines in force; zero: none.
	rd, wd time.Time
}

// keeps reports whether the deadline in force, cur, may stand for t: both are set and
// cur is not later than t, nor more than slack earlier.
func (c *idleConn) keeps(cur, t time.Time) bool {
	return !cur.IsZero() && !t.IsZero() && !cur.After(t) && t.Sub(cur) <= c.slack
}

func (c *idleConn) SetReadDeadline(t time.Time) error {
	c.pending, c.moved = t, time.Time{}
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
	c.pending, c.moved, c.rd, c.wd = t, time.Time{}, t, t
	return c.Conn.SetDeadline(t)
}

func (c *idleConn) Read(p []byte) (int, error) {
	if !c.pending.IsZero() {
		c.pending = time.Time{} // header phase: keep the client's deadline for this read
	} else if c.moved.IsZero() || time.Since(c.moved) > c.idle/16 {
		// time.Since reads only the monotonic clock (moved has a reading of it), half of
		// what time.Now costs: most reads of a stream stop here.
		now := time.Now()
		c.rd = now.Add(c.idle)
		_ = c.Conn.SetReadDeadline(c.rd)
		c.moved = now
	}
	return c.Conn.Read(p)
}
