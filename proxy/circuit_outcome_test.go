package proxy

import (
	"context"
	"testing"
	"time"

	"github.com/agate-gateway/agate/translate"
	"github.com/agate-gateway/agate/upstream"
)

// TestCircuitOutcome: what an attempt's end tells the circuit of its deployment, the same
// for a model of one backend (recordCircuit) and for a model's deployment (outcome, told
// to the balance's Health): known false when nothing.
func TestCircuitOutcome(t *testing.T) {
	t.Parallel() // nothing shared, no clock or environment of the process (#54)
	tests := []struct {
		name            string
		err             error
		accepted, sent  bool
		known, ok       bool
		balanceOK, rest bool
	}{
		{"success", nil, true, true, true, true, true, false},
		{"503", &translate.UpstreamError{Status: 503, Retryable: true}, true, false, true, false, false, false},
		{"timeout", upstream.TimeoutFault("b", "sent nothing"), false, false, true, false, false, false},
		{"stream cut midway", upstream.Fault("b", "ended the stream early"), true, true, true, false, false, false},
		{"misbehaving body before any event", upstream.Fault("b", "sent a body too large"), true, false, true, true, true, false},
		{"rejected credential", upstream.Fault("b", "rejected the gateway's credential"), false, false, true, false, false, false},
		{"400 is an answer", &translate.UpstreamError{Status: 400}, true, false, true, true, true, false},
		{"429 tells nothing, rests it", &translate.UpstreamError{Status: 429, Retryable: true}, true, false, false, false, false, true},
		{"the gateway's own pool", &translate.UpstreamError{Status: 503, Code: "upstream_busy", Retryable: true}, false, false, false, false, true, false},
		{"client left after the answer began", context.Canceled, true, true, true, true, true, false},
		{"client left before", context.Canceled, false, false, false, true, true, false}, // ok: unused
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.err
			if tt.name == "rejected credential" {
				err = credentialFault("b", "api_key")
			}
			c := &modelCall{accepted: tt.accepted, sent: tt.sent}
			if known, ok := c.circuitOutcome(err); known != tt.known || ok != tt.ok {
				t.Errorf("circuitOutcome = known %v ok %v, want %v %v", known, ok, tt.known, tt.ok)
			}
			o := c.outcome(err, time.Time{})
			if o.Unknown != !tt.known || o.OK != tt.balanceOK || o.RateLimited != tt.rest {
				t.Errorf("outcome = %+v, want Unknown %v OK %v RateLimited %v", o, !tt.known, tt.balanceOK, tt.rest)
			}
		})
	}
}
