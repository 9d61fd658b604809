package upstream

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
)

// signerFunc is a Signer of a function.
type signerFunc func(ctx context.Context, req *fasthttp.Request) error

func (f signerFunc) Sign(ctx context.Context, req *fasthttp.Request) error { return f(ctx, req) }

// TestSend_Signer: a Signer sees the request as it will be sent (its final URI and body)
// and what it sets reaches the upstream; its failure is a 502 upstream_auth_failed that
// names the backend, never the Signer's own message (which may hold a credential), and
// nothing is sent.
func TestSend_Signer(t *testing.T) {
	var got http.Header
	calls := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls++
		got = r.Header.Clone()
		_, _ = w.Write([]byte(`{}`))
	}))
	defer srv.Close()
	tests := []struct {
		name      string
		sign      signerFunc
		wantAuth  string
		wantCode  string
		wantCalls int
	}{
		{name: "signed over the final request", wantAuth: "sig /v1/chat/completions {\"a\":1}", wantCalls: 1,
			sign: func(_ context.Context, req *fasthttp.Request) error {
				req.Header.Set("Authorization", "sig "+string(req.URI().Path())+" "+string(req.Body()))
				return nil
			}},
		{name: "a failure names no secret", wantCode: "upstream_auth_failed",
			sign: func(context.Context, *fasthttp.Request) error {
				return errors.New("token endpoint said: secret=hunter2")
			}},
		{name: "an AuthFailed is returned as it is", wantCode: "upstream_auth_failed",
			sign: func(context.Context, *fasthttp.Request) error { return AuthFailed("up", "AZURE_CLIENT_SECRET") }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			calls = 0
			c, err := New(Backend{Name: "up", BaseURL: srv.URL + "/v1", Signer: tt.sign, Timeouts: Timeouts{Connect: 5 * time.Second, Header: 5 * time.Second, StreamIdle: 5 * time.Second}}, provider("openai"))
			if err != nil {
				t.Fatal(err)
			}
			var x Exchange
			ex, err := c.Send(context.Background(), "/chat/completions", nil, []byte(`{"a":1}`), false, &x)
			if ex != nil {
				ex.Close()
			}
			if calls != tt.wantCalls {
				t.Fatalf("upstream called %d times, want %d", calls, tt.wantCalls)
			}
			if tt.wantCode == "" {
				if err != nil || got.Get("Authorization") != tt.wantAuth {
					t.Fatalf("err %v, Authorization %q; want %q", err, got.Get("Authorization"), tt.wantAuth)
				}
				return
			}
			ue := AsError(err)
			if ue == nil || ue.Status != 502 || ue.Code != tt.wantCode || ue.Retryable || !strings.Contains(ue.Message, "backend up") || strings.Contains(ue.Message, "hunter2") {
				t.Fatalf("error %#v; want a 502 %s naming backend up and no secret", err, tt.wantCode)
			}
		})
	}
}
