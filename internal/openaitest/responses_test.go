package openaitest

import (
	"strings"
	"testing"
)

func events(evs ...string) []byte {
	var b strings.Builder
	for _, e := range evs {
		typ := e[strings.Index(e, `"type":"`)+8:]
		typ = typ[:strings.IndexByte(typ, '"')]
		b.WriteString("event: " + typ + "\ndata: " + e + "\n\n")
	}
	return []byte(b.String())
}

// TestCheckResponseEvents: the checker accepts a valid stream (gaps in the numbering
// allowed) and refuses each broken rule.
func TestCheckResponseEvents(t *testing.T) {
	created := `{"type":"response.created","sequence_number":0,"response":{}}`
	delta := func(n string) string {
		return `{"type":"response.function_call_arguments.delta","sequence_number":` + n + `,"item_id":"fc","output_index":0,"delta":"{}"}`
	}
	done := func(n string) string {
		return `{"type":"response.completed","sequence_number":` + n + `,"response":{}}`
	}
	tests := []struct {
		name    string
		body    []byte
		wantErr string // a substring of the first failure; "" for none
	}{
		{name: "valid", body: events(created, delta("1"), done("2"))},
		{name: "valid with a gap", body: events(created, delta("5"), done("6"))},
		{name: "repeated number", body: events(created, delta("1"), delta("1"), done("3")), wantErr: "not strictly increasing"},
		{name: "restarted count", body: events(created, delta("1"), delta("0"), done("3")), wantErr: "not strictly increasing"},
		{name: "missing number", body: events(created, `{"type":"response.output_item.done","output_index":0}`, done("2")), wantErr: "no sequence_number"},
		{name: "not an integer", body: events(created, delta("1.5"), done("2")), wantErr: "not an integer"},
		{name: "no terminal", body: events(created, delta("1")), wantErr: "0 terminal events"},
		{name: "event after the terminal", body: events(created, done("1"), delta("2")), wantErr: "not the last"},
		{name: "name differs from type", body: []byte("event: x\ndata: " + created + "\n\n"), wantErr: "event name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &recorder{TB: t}
			CheckResponseEvents(r, tt.body)
			switch {
			case tt.wantErr == "" && len(r.errs) > 0:
				t.Errorf("unexpected failures: %q", r.errs)
			case tt.wantErr != "" && (len(r.errs) == 0 || !strings.Contains(r.errs[0], tt.wantErr)):
				t.Errorf("failures %q, want one with %q", r.errs, tt.wantErr)
			}
		})
	}
}
