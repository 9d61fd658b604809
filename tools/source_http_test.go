package tools

import (
	"context"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestWebhook_Request(t *testing.T) {
	var method string
	wh := newWebhook(t, func(w http.ResponseWriter, r *http.Request, body []byte) {
		method = r.Method
		io.WriteString(w, `{"temp_c":21}`)
	})
	r := newTestRegistry(t, map[string]SourceOptions{
		"weather": {Type: "http", URL: wh.srv.URL + "/weather?v=1", Headers: map[string]string{"Authorization": "Bearer hook-secret", "X-Team": "search"}},
	}, nil)
	res := r.Call(context.Background(), "weather", []byte(`{"city":"Oslo"}`))
	if diff := cmp.Diff(Result{Content: `{"temp_c":21}`}, res); diff != "" {
		t.Errorf("Call mismatch (-want +got):\n%s", diff)
	}
	wh.mu.Lock()
	defer wh.mu.Unlock()
	h := wh.headers[0]
	got := map[string]string{"method": method, "body": wh.bodies[0], "Content-Type": h.Get("Content-Type"),
		"Authorization": h.Get("Authorization"), "X-Team": h.Get("X-Team")}
	want := map[string]string{"method": "POST", "body": `{"city":"Oslo"}`, "Content-Type": "application/json",
		"Authorization": "Bearer hook-secret", "X-Team": "search"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("request mismatch (-want +got):\n%s", diff)
	}
}

func TestWebhook_Failures(t *testing.T) {
	long := strings.Repeat("x", 5000) // not hex: results are masked (TestCall_ResultsMasked)
	tests := []struct {
		name    string
		status  int
		body    string
		want    Result
		outcome string
	}{
		{name: "2xx other than 200", status: http.StatusCreated, body: "made it", want: Result{Content: "made it"}, outcome: OutcomeOK},
		{name: "client error", status: http.StatusNotFound, body: "no such city\n",
			want: Result{Content: "webhook returned HTTP 404 Not Found: no such city", IsError: true}, outcome: OutcomeError},
		{name: "server error without body", status: http.StatusServiceUnavailable,
			want: Result{Content: "webhook returned HTTP 503 Service Unavailable", IsError: true}, outcome: OutcomeError},
		{name: "long error body bounded", status: http.StatusInternalServerError, body: long,
			want: Result{Content: "webhook returned HTTP 500 Internal Server Error: " + long[:maxErrorBody], IsError: true}, outcome: OutcomeError},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wh := newWebhook(t, func(w http.ResponseWriter, r *http.Request, _ []byte) {
				w.WriteHeader(tt.status)
				io.WriteString(w, tt.body)
			})
			obs := &recordingObserver{}
			r := newTestRegistry(t, map[string]SourceOptions{"hook": {Type: "http", URL: wh.srv.URL}}, obs)
			if diff := cmp.Diff(tt.want, r.Call(context.Background(), "hook", nil)); diff != "" {
				t.Errorf("Call mismatch (-want +got):\n%s", diff)
			}
			if got := obs.lastCall().Outcome; got != tt.outcome {
				t.Errorf("outcome = %q, want %q", got, tt.outcome)
			}
		})
	}

	t.Run("unreachable", func(t *testing.T) {
		wh := newWebhook(t, echoBody)
		url := wh.srv.URL + "/secret-path?token=abc"
		wh.srv.Close()
		r := newTestRegistry(t, map[string]SourceOptions{"hook": {Type: "http", URL: url}}, nil)
		res := r.Call(context.Background(), "hook", nil)
		if !res.IsError || !strings.HasPrefix(res.Content, "tool hook failed: webhook request: ") {
			t.Errorf("Call = %+v, want an error result", res)
		}
		if strings.Contains(res.Content, "token=abc") {
			t.Errorf("error result leaks the webhook URL: %q", res.Content)
		}
	})
}

// TestWebhook_RedirectNotFollowed: a webhook answering with a redirect is a tool error; the
// redirect target receives nothing (neither the arguments nor the secret headers), and the
// result quotes neither its Location nor the body.
func TestWebhook_RedirectNotFollowed(t *testing.T) {
	for _, status := range []int{http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther,
		http.StatusTemporaryRedirect, http.StatusPermanentRedirect} {
		t.Run(http.StatusText(status), func(t *testing.T) {
			target := newWebhook(t, echoBody)
			location := target.srv.URL + "/next?token=loc-secret"
			wh := newWebhook(t, func(w http.ResponseWriter, _ *http.Request, _ []byte) {
				w.Header().Set("Location", location)
				w.WriteHeader(status)
				io.WriteString(w, "moved to "+location)
			})
			obs := &recordingObserver{}
			r := newTestRegistry(t, map[string]SourceOptions{
				"hook": {Type: "http", URL: wh.srv.URL, Headers: map[string]string{"Authorization": "Bearer hook-secret"}},
			}, obs)
			res := r.Call(context.Background(), "hook", []byte(`{"q":1}`))
			want := Result{IsError: true,
				Content: "webhook returned HTTP " + strconv.Itoa(status) + " " + http.StatusText(status) + "; redirects are not followed"}
			if diff := cmp.Diff(want, res); diff != "" {
				t.Errorf("Call mismatch (-want +got):\n%s", diff)
			}
			if got := obs.lastCall().Outcome; got != OutcomeError {
				t.Errorf("outcome = %q, want %q", got, OutcomeError)
			}
			if n := target.calls.Load(); n != 0 {
				t.Errorf("the redirect target received %d requests, want none", n)
			}
			if n := wh.calls.Load(); n != 1 {
				t.Errorf("the webhook received %d requests, want 1", n)
			}
		})
	}
}
