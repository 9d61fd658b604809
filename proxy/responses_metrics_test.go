package proxy

import "testing"

// TestResponsesMetrics: requests are counted with api="responses" on /v1/responses and
// api="chat" on chat completions, failures and successes alike.
func TestResponsesMetrics(t *testing.T) {
	t.Parallel() // nothing shared, no clock or environment of the process (#54)
	g := startGateway(t, demoConfig, nil)
	for _, r := range []struct{ path, body string }{
		{"/v1/responses", `{"model":"demo","input":"hi"}`},
		{"/v1/responses", `{"model":"demo","input":"hi","stream":true}`},
		{"/v1/responses", `{"model":"nope","input":"hi"}`},
		{"/v1/chat/completions", `{"model":"demo","messages":[{"role":"user","content":"hi"}]}`},
	} {
		g.do("POST", r.path, "sk-alice", []byte(r.body))
	}
	tests := []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"responses 200", map[string]string{"api": "responses", "code": "200", "model": "demo"}, 2},
		{"responses 404", map[string]string{"api": "responses", "code": "404"}, 1},
		{"chat 200", map[string]string{"api": "chat", "code": "200"}, 1},
	}
	for _, tt := range tests {
		if got := g.metricValue("gateway_requests_total", tt.labels); got != tt.want {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
	if got := g.metricValue("gateway_request_duration_seconds", map[string]string{"api": "responses"}); got != 2 {
		t.Errorf("responses durations: %v, want 2", got)
	}
}
