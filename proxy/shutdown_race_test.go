package proxy

import (
	"context"
	"net"
	"testing"
	"time"
)

// TestShutdown_EndsAServeNotYetAccepting: Shutdown ends every Serve of the server, one
// called after it (which returns at once) and one that had not reached fasthttp's accept
// loop when it ran. Before, fasthttp's shutdown found no listener to close and that Serve
// accepted forever (a test gateway started and shut down at once hung its cleanup).
func TestShutdown_EndsAServeNotYetAccepting(t *testing.T) {
	for _, order := range []string{"shutdown first", "together"} {
		t.Run(order, func(t *testing.T) {
			g := startGatewayWith(t, bodyLimitConfig, nil, gatewayOptions{noCleanupShutdown: true})
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			served := make(chan error, 1)
			shutdown := func() {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				if err := g.srv.Shutdown(ctx); err != nil {
					t.Errorf("Shutdown: %v", err)
				}
			}
			if order == "shutdown first" {
				shutdown()
				go func() { served <- g.srv.Serve(ln) }()
			} else {
				go func() { served <- g.srv.Serve(ln) }()
				shutdown()
			}
			for _, done := range []chan error{served, g.done} {
				select {
				case <-done:
				case <-time.After(10 * time.Second):
					t.Fatal("a Serve still runs 10 s after Shutdown returned")
				}
			}
			if c, err := net.DialTimeout("tcp", ln.Addr().String(), time.Second); err == nil {
				c.Close()
				t.Error("the listener still accepts after Shutdown")
			}
		})
	}
}
