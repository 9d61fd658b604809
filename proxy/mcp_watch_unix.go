//go:build linux || darwin

package proxy

import (
	"errors"
	"net"
	"syscall"
)

// watchGone calls gone when the client closes conn before sending anything more, and
// returns at once. fasthttp reads nothing while a handler's answer streams, so a client
// that left an MCP stream (a GET stream, an SSE answer) is not noticed until something is
// written; the SDK's handler would hold the stream, and the client's reconnection to it
// (Last-Event-ID) would be refused as a second stream. The watch peeks (MSG_PEEK: it
// consumes nothing) once the connection is readable: end of file is the client gone; data
// (the connection's next request, once the answer ended) ends the watch, and so does a
// read deadline fasthttp sets, or the connection's closing.
func watchGone(conn net.Conn, gone func()) {
	if cc, ok := conn.(*clientConn); ok {
		conn = cc.Conn
	}
	sc, ok := conn.(syscall.Conn)
	if !ok {
		return
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return
	}
	go func() {
		closed := false
		var b [1]byte
		err := rc.Read(func(fd uintptr) bool {
			n, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
			if errors.Is(err, syscall.EAGAIN) || errors.Is(err, syscall.EINTR) {
				return false // nothing yet: wait for readability
			}
			closed = n == 0 || err != nil
			return true
		})
		if closed && err == nil {
			gone()
		}
	}()
}
