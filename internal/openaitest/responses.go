package openaitest

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/agate-gateway/agate/internal/sse"
)

// CheckResponseEvents parses a Responses stream body (POST /v1/responses with stream:
// true) the gateway sent and checks what every Responses client may rely on, translated
// or passed through: each event is a JSON object whose type is its SSE event name; each has
// an integer sequence_number strictly above the one before (the SDKs' resumption and
// ordering rest on it); exactly one terminal event (response.completed,
// response.incomplete, response.failed or error), the last.
func CheckResponseEvents(t testing.TB, body []byte) {
	t.Helper()
	var p sse.Parser
	var events [][]byte
	err := p.Feed(body, func(typ, data []byte) error {
		var head struct {
			Type string `json:"type"`
		}
		if err := json.Unmarshal(data, &head); err != nil {
			t.Errorf("event %d is not a JSON object: %v: %s", len(events), err, data)
		} else if len(typ) > 0 && head.Type != string(typ) {
			t.Errorf("event %d: event name %q, type %q", len(events), typ, head.Type)
		}
		events = append(events, bytes.Clone(data))
		return nil
	})
	if err != nil {
		t.Fatalf("SSE: %v", err)
	}
	CheckResponseEventData(t, events)
}

// CheckResponseEventData is CheckResponseEvents for the data of the events, in order, as
// a client SDK hands them over.
func CheckResponseEventData(t testing.TB, events [][]byte) {
	t.Helper()
	if len(events) == 0 {
		t.Errorf("no events")
		return
	}
	last := int64(-1)
	terminals := 0
	for i, data := range events {
		var ev struct {
			Type string           `json:"type"`
			Seq  *json.RawMessage `json:"sequence_number"`
		}
		if err := json.Unmarshal(data, &ev); err != nil {
			t.Errorf("event %d is not a JSON object: %v: %s", i, err, data)
			continue
		}
		var seq int64
		switch {
		case ev.Seq == nil:
			t.Errorf("event %d (%s) has no sequence_number", i, ev.Type)
		case json.Unmarshal(*ev.Seq, &seq) != nil:
			t.Errorf("event %d (%s): sequence_number %s is not an integer", i, ev.Type, *ev.Seq)
		case seq <= last:
			t.Errorf("event %d (%s): sequence_number %d after %d, not strictly increasing", i, ev.Type, seq, last)
		}
		if seq > last {
			last = seq
		}
		switch ev.Type {
		case "response.completed", "response.incomplete", "response.failed", "error":
			terminals++
			if i != len(events)-1 {
				t.Errorf("terminal event %d (%s) is not the last of %d", i, ev.Type, len(events))
			}
		}
	}
	if terminals != 1 {
		t.Errorf("%d terminal events, want 1", terminals)
	}
}
