package proxy

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestShutdown_IdleKeepAliveAtOnce: Shutdown closes a client's idle keep-alive connection
// and returns without waiting for fasthttp's next 100 ms poll of its open connections
// (drainIdle). Each shutdown took 100 ms before; the fastest of three must take less.
func TestShutdown_IdleKeepAliveAtOnce(t *testing.T) {
	best := time.Hour
	for range 3 {
		g := startGatewayWith(t, bodyLimitConfig, nil, gatewayOptions{noCleanupShutdown: true})
		tr := &http.Transport{}
		req, _ := http.NewRequest("POST", g.base+"/v1/chat/completions",
			strings.NewReader(`{"model":"demo","messages":[{"role":"user","content":"hi"}]}`))
		req.Header.Set("Authorization", "Bearer sk-alice")
		resp, err := (&http.Client{Transport: tr}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close() // the connection is idle in the transport's pool
		if resp.StatusCode != 200 {
			t.Fatalf("status %d", resp.StatusCode)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		start := time.Now()
		err = g.srv.Shutdown(ctx)
		took := time.Since(start)
		cancel()
		tr.CloseIdleConnections()
		if err != nil {
			t.Fatalf("Shutdown: %v", err)
		}
		select {
		case <-g.done:
		case <-time.After(10 * time.Second):
			t.Fatal("Serve still runs 10 s after Shutdown returned")
		}
		t.Logf("Shutdown took %v", took)
		best = min(best, took)
	}
	if best >= 100*time.Millisecond {
		t.Errorf("the fastest Shutdown took %v; want less than fasthttp's 100 ms poll", best)
	}
}
