package proxy

import (
	"bytes"
	"testing"

	"github.com/agate-gateway/agate/internal/sse"
)

// TestAppendSSE_ClientReadsWhatUpstreamSent: an event the Messages passthrough forwards
// reaches the client's SSE parser with the type and data the gateway's parser read from the
// upstream, whatever lines the data spanned there.
func TestAppendSSE_ClientReadsWhatUpstreamSent(t *testing.T) {
	t.Parallel() // nothing shared, no clock or environment of the process (#54)
	for _, tc := range []struct{ name, typ, data string }{
		{"one line", "content_block_delta", `{"type":"content_block_delta","index":0}`},
		{"several data lines", "message_start", "{\"type\":\"message_start\",\n\"message\":{\"id\":\"msg_1\"}\n}"},
		{"empty lines inside", "ping", "{\n\n\"type\":\"ping\"}"},
		{"trailing line feed", "message_stop", "{\"type\":\"message_stop\"}\n"},
		{"no type", "", "{\"a\":\n1}"},
		{"empty data", "ping", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := appendSSE(nil, []byte(tc.typ), []byte(tc.data))
			var got []string
			var p sse.Parser
			if err := p.Feed(out, func(typ, data []byte) error {
				got = append(got, string(typ), string(data))
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			if len(got) != 2 || got[0] != tc.typ || got[1] != tc.data {
				t.Fatalf("client read %q from %q, want type %q data %q", got, out, tc.typ, tc.data)
			}
			if !bytes.HasSuffix(out, []byte("\n\n")) {
				t.Fatalf("event %q does not end with a blank line", out)
			}
		})
	}
}
