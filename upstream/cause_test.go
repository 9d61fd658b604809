package upstream

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestSend_TransportFailureNamesItsCause: a failure that got no answer is a retryable
// error whose client message names the class of the failure and not the address, whose
// Cause (for the log) names the class then the transport's message, and whose metric
// label is "0".
func TestSend_TransportFailureNamesItsCause(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := l.Addr().String()
	l.Close()
	plain := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer plain.Close()
	silent, err := net.Listen("tcp", "127.0.0.1:0") // accepts, reads nothing, answers nothing
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	go func() {
		for {
			c, err := silent.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	tests := []struct {
		name, baseURL, class string
		status               int
	}{
		{"refused", "http://" + closed, "connection refused", 502},
		{"dns", "http://no-such-host.invalid", "dns lookup failed", 502},
		{"tls to a plain server", "https://" + strings.TrimPrefix(plain.URL, "http://"), "tls handshake failed", 502},
		{"silent", "http://" + silent.Addr().String(), "timed out waiting for the response head", 504},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := New(Backend{Name: "b", BaseURL: tt.baseURL, Timeouts: Timeouts{Connect: 2 * time.Second, Header: 100 * time.Millisecond, StreamIdle: time.Second}}, provider("openai"))
			if err != nil {
				t.Fatal(err)
			}
			var x Exchange
			_, err = c.Send(context.Background(), "/x", nil, []byte(`{}`), false, &x)
			ue := AsError(err)
			if ue == nil || ue.Status != tt.status || !ue.Retryable {
				t.Fatalf("error %v, want a retryable %d", err, tt.status)
			}
			host := strings.TrimPrefix(strings.TrimPrefix(tt.baseURL, "http://"), "https://")
			if !strings.Contains(ue.Message, "backend b") || !strings.Contains(ue.Message, tt.class) || strings.Contains(ue.Message, host) {
				t.Errorf("message %q: want the backend and %q, not the address", ue.Message, tt.class)
			}
			if !strings.HasPrefix(ue.Cause, tt.class+": ") {
				t.Errorf("cause %q, want it to start with %q", ue.Cause, tt.class)
			}
			if got := StatusLabel(err); got != "0" {
				t.Errorf("status label %q, want 0 (no answer)", got)
			}
		})
	}
}
