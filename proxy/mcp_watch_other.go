//go:build !(linux || darwin)

package proxy

import "net"

// watchGone does nothing here: a client that leaves an MCP stream is noticed at the next
// write to it (see mcp_watch_unix.go).
func watchGone(net.Conn, func()) {}
