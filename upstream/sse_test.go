package upstream

import (
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"testing/iotest"

	"github.com/agate-gateway/agate/translate"
)

// TestPump: events reach onEvent as they are read, afterRead follows each read, onEnd a
// clean end; a stream cut mid-event or a failed read is an error naming the backend.
func TestPump(t *testing.T) {
	tests := []struct {
		name       string
		body       io.Reader
		wantEvents []string
		wantEnd    bool
		wantErr    string // in the error's message; "" for none
	}{
		{name: "clean end", body: strings.NewReader("data: a\n\nevent: x\ndata: b\n\n"), wantEvents: []string{"a", "b"}, wantEnd: true},
		{name: "one byte a read", body: iotest.OneByteReader(strings.NewReader("data: a\n\ndata: b\n\n")), wantEvents: []string{"a", "b"}, wantEnd: true},
		{name: "cut mid-event", body: strings.NewReader("data: a\n\ndata: b"), wantEvents: []string{"a"}, wantErr: "the upstream of backend up ended the stream mid-event"},
		{name: "read error", body: io.MultiReader(strings.NewReader("data: a\n\n"), iotest.ErrReader(errors.New("reset"))), wantEvents: []string{"a"},
			wantErr: "could not reach the upstream of backend up"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var events []string
			reads, ended := 0, false
			err := Pump(context.Background(), tt.body, "up", &sync.Pool{}, func(_, data []byte) error {
				events = append(events, string(data))
				return nil
			}, func() error { reads++; return nil }, func() error { ended = true; return nil })
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("Pump = %v, want %q", err, tt.wantErr)
			}
			if strings.Join(events, ",") != strings.Join(tt.wantEvents, ",") || ended != tt.wantEnd || reads == 0 {
				t.Errorf("events %q, ended %v after %d reads; want %q, ended %v", events, ended, reads, tt.wantEvents, tt.wantEnd)
			}
			if tt.wantErr != "" && AsError(err) == nil {
				t.Errorf("error %v is not an UpstreamError", err)
			}
		})
	}
}

// TestStatusLabel: the metric label of an attempt's result.
func TestStatusLabel(t *testing.T) {
	for err, want := range map[error]string{
		nil:                                   "200",
		&translate.UpstreamError{Status: 429}: "429",
		context.Canceled:                      "0",
	} {
		if got := StatusLabel(err); got != want {
			t.Errorf("StatusLabel(%v) = %q, want %q", err, got, want)
		}
	}
}
