package proxy

import (
	"context"
	"testing"
	"time"

	"github.com/agate-gateway/agate/breaker"
	"github.com/agate-gateway/agate/translate"
	"github.com/agate-gateway/agate/upstream"
)

// TestRecordCircuit: what an attempt's outcome tells its circuit (failures: 1, so one
// counted failure opens it).
func TestRecordCircuit(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	tests := []struct {
		name     string
		err      error
		accepted bool
		want     breaker.State
		held     bool
	}{
		{"success", nil, true, breaker.Closed, false},
		{"503", &translate.UpstreamError{Status: 503, Retryable: true}, false, breaker.Open, false},
		{"529 (as 503)", &translate.UpstreamError{Status: 503, Type: "api_error", Code: "overloaded_error", Retryable: true}, false, breaker.Open, false},
		{"reset", &translate.UpstreamError{Status: 502, Retryable: true}, false, breaker.Open, false},
		{"timeout", upstream.TimeoutFault("b", "sent nothing"), false, breaker.Open, false},
		{"400 is an answer", &translate.UpstreamError{Status: 400, Type: "invalid_request_error"}, false, breaker.Closed, false},
		{"misbehaving body (not retryable)", upstream.Fault("b", "sent a body too large"), false, breaker.Closed, false},
		{"429 with Retry-After holds", &translate.UpstreamError{Status: 429, Retryable: true, RetryAfter: 5 * time.Second}, false, breaker.Closed, true},
		{"429 without counts nothing", &translate.UpstreamError{Status: 429, Retryable: true}, false, breaker.Closed, false},
		{"the gateway's own pool", &translate.UpstreamError{Status: 503, Code: "upstream_busy", Retryable: true}, false, breaker.Closed, false},
		{"client left before the answer", context.Canceled, false, breaker.Closed, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set := breaker.New(breaker.Options{})
			set.Configure([]breaker.Circuit{{Key: "b/m", Policy: breaker.Policy{Failures: 1, Cooldown: time.Minute}}})
			c := &modelCall{rt: &runtime{circuits: &circuits{set: set, now: func() time.Time { return t0 }}}, accepted: tt.accepted}
			c.recordCircuit(&route{circuit: "b/m"}, tt.err)
			v := set.Check("b/m", t0.Add(time.Second))
			if st, _ := set.State("b/m", t0); st != tt.want || v.Held != tt.held {
				t.Fatalf("state %v held %v, want %v held %v", st, v.Held, tt.want, tt.held)
			}
		})
	}
}
