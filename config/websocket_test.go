package config

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestResponsesWebsocket: what responses_websocket loads to, its defaults (kept out of
// the loaded file: Effective fills them), and the errors that name a bad field.
func TestResponsesWebsocket(t *testing.T) {
	no := false
	tests := []struct {
		name string
		yaml string
		want ResponsesWebsocket // Effective(20 MiB)
		on   bool
		err  string
	}{
		{"absent", ``, ResponsesWebsocket{IdleTimeout: 5 * time.Minute, MaxMessageBytes: 20 << 20, MaxTurns: 1000}, true, ""},
		{"set", `responses_websocket: {idle_timeout: 30s, max_message_bytes: 4096, max_turns: 3}`,
			ResponsesWebsocket{IdleTimeout: 30 * time.Second, MaxMessageBytes: 4096, MaxTurns: 3}, true, ""},
		{"off", `responses_websocket: {enabled: false}`,
			ResponsesWebsocket{Enabled: &no, IdleTimeout: 5 * time.Minute, MaxMessageBytes: 20 << 20, MaxTurns: 1000}, false, ""},
		{"negative turns", `responses_websocket: {max_turns: -1}`, ResponsesWebsocket{}, false, "responses_websocket.max_turns"},
		{"negative bytes", `responses_websocket: {max_message_bytes: -1}`, ResponsesWebsocket{}, false, "responses_websocket.max_message_bytes"},
		{"negative idle", `responses_websocket: {idle_timeout: -1s}`, ResponsesWebsocket{}, false, "responses_websocket.idle_timeout"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Parse([]byte("backends: {m: {type: mock}}\n"+tt.yaml), nil)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want one naming %s", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := c.ResponsesWebsocket.Effective(c.Server.MaxBodyBytes)
			if diff := cmp.Diff(tt.want, got); diff != "" || got.On() != tt.on {
				t.Errorf("Effective (-want +got):\n%s\nOn %v", diff, got.On())
			}
		})
	}
}

// TestResponsesWebsocket_Example: the commented responses_websocket block of
// config.example.yaml loads, uncommented, to its documented defaults.
func TestResponsesWebsocket_Example(t *testing.T) {
	data, err := os.ReadFile(examplePath)
	if err != nil {
		t.Fatal(err)
	}
	_, block, ok := strings.Cut(string(data), "\n# responses_websocket:\n")
	if !ok {
		t.Fatal("no responses_websocket block in the example")
	}
	lines := []string{"responses_websocket:"}
	for line := range strings.SplitSeq(block, "\n") {
		if !strings.HasPrefix(line, "#  ") {
			break
		}
		lines = append(lines, strings.TrimPrefix(line, "# "))
	}
	c, err := Parse([]byte("backends: {m: {type: mock}}\n"+strings.Join(lines, "\n")), nil)
	if err != nil {
		t.Fatal(err)
	}
	yes := true
	want := ResponsesWebsocket{Enabled: &yes, IdleTimeout: 5 * time.Minute, MaxMessageBytes: 20 << 20, MaxTurns: 1000}
	if diff := cmp.Diff(want, c.ResponsesWebsocket); diff != "" {
		t.Errorf("example (-want +got):\n%s", diff)
	}
}
