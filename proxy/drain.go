package proxy

import (
	"context"
	"net"
	"time"

	"github.com/valyala/fasthttp"
)

// Shutdown's first step, drainIdle, exists because fasthttp's ShutdownWithContext checks
// its count of open connections once at once and then every 100 ms: the count includes
// its accept loop and each idle keep-alive connection until their goroutines have seen
// their listener or connection closed, which they never have at that first check. So a
// shutdown of a gateway with nothing in flight took 100 ms (the tests start and stop a
// gateway hundreds of times; #54). drainIdle does first what fasthttp's first check
// does, closing the listeners and the idle connections, and waits (briefly) for those
// goroutines to end, so that fasthttp finds nothing open and returns at once. Requests in
// flight are not touched: fasthttp waits for them as before.

// drainWait bounds drainIdle's wait for the accept loops and the closed idle
// connections' goroutines to end: they end in microseconds, a loaded machine's
// scheduling aside; past it fasthttp's own polling takes over.
const drainWait = 50 * time.Millisecond

// connState is the main server's fasthttp ConnState hook: it keeps each client
// connection's serving state for drainIdle. Two atomic stores a request, no allocation.
func connState(c net.Conn, st fasthttp.ConnState) {
	cc, ok := c.(*clientConn)
	if !ok {
		return
	}
	switch st {
	case fasthttp.StateIdle:
		cc.idle.Store(true)
	case fasthttp.StateActive:
		cc.idle.Store(false)
	case fasthttp.StateClosed, fasthttp.StateHijacked:
		cc.idle.Store(false)
		cc.served.Store(true) // fasthttp no longer counts it as open
	}
}

// drainIdle closes the client listeners and the idle keep-alive connections, then waits
// until the accept loops (Serve) have returned and the closed connections' goroutines
// have ended, for at most drainWait or until ctx ends.
func (s *Server) drainIdle(ctx context.Context) {
	s.listenersMu.Lock()
	ls := append([]*clientListener(nil), s.listeners...)
	s.listenersMu.Unlock()
	var closed []*clientConn
	for _, l := range ls {
		_ = l.Close() // its Serve returns; fasthttp's close of it later is a no-op
		closed = append(closed, l.closeIdle()...)
	}
	deadline := time.Now().Add(drainWait)
	for !s.drained(closed) {
		if ctx.Err() != nil || time.Now().After(deadline) {
			return
		}
		time.Sleep(200 * time.Microsecond)
	}
}

// drained reports whether every Serve has returned and every connection of closed has
// been let go by fasthttp.
func (s *Server) drained(closed []*clientConn) bool {
	if s.serving.Load() != 0 {
		return false
	}
	for _, c := range closed {
		if !c.served.Load() {
			return false
		}
	}
	return true
}

// closeIdle closes the connections that are waiting for their next request (fasthttp's
// StateIdle) as a client's close would end them, and returns them.
func (l *clientListener) closeIdle() []*clientConn {
	var idle []*clientConn
	l.mu.Lock()
	for c := range l.conns {
		if c.idle.Load() {
			idle = append(idle, c)
		}
	}
	l.mu.Unlock()
	for _, c := range idle {
		c.silenced.Store(true) // its pending read ends as a client's close would
		_ = c.Close()          // outside mu: Close releases c under it
	}
	return idle
}

// Close closes the listener once; later calls (fasthttp's shutdown after drainIdle's)
// return what the first returned.
func (l *clientListener) Close() error {
	l.closeOnce.Do(func() { l.closeErr = l.Listener.Close() })
	return l.closeErr
}
