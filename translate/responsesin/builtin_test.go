package responsesin

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/tidwall/gjson"

	"github.com/agate-gateway/agate/translate"
	"github.com/agate-gateway/agate/translate/anthropic"
	"github.com/agate-gateway/agate/translate/internal/spectest"
	"github.com/agate-gateway/agate/translate/responses"
)

// TestBuiltinItems_ResponsesUpstream: a Responses client on the translated path to a
// responses backend (a key with server tools) gets the upstream's built-in tool items (a
// recorded web search) back as output items, as the upstream wrote them, in the stream
// and in the final Response, every event satisfying the published schema; and an
// Anthropic upstream's server tool blocks, which are not Responses items, are dropped.
func TestBuiltinItems_ResponsesUpstream(t *testing.T) {
	eventSchema, responseSchema := schemas(t)
	tests := []struct {
		name     string
		provider translate.Provider
		stream   []byte
		want     []string // the built-in items the client sees, compact
	}{
		{
			name: "responses web search", provider: responses.New(),
			stream: reframe(readFixture(t, filepath.Join("responses", "vercel-chunks", "openai-web-search-tool.1.chunks.txt"))),
		},
		{
			name: "anthropic web search", provider: anthropic.New(),
			stream: readFixture(t, filepath.Join("anthropic", "stream", "web-search-cache-read-create.mirascope.sse")),
		},
	}
	// The wanted items are read from the recording: its output_item.done web_search_call items.
	for _, line := range strings.Split(string(tests[0].stream), "\n") {
		if data, ok := strings.CutPrefix(line, "data: "); ok && gjson.Get(data, "type").Str == "response.output_item.done" &&
			gjson.Get(data, "item.type").Str == "web_search_call" {
			tests[0].want = append(tests[0].want, gjson.Get(data, "item").Raw)
		}
	}
	if len(tests[0].want) < 2 {
		t.Fatalf("the recording has %d web_search_call items", len(tests[0].want))
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := replay(t, tt.provider, tt.stream)
			checkStream(t, out)
			var streamed, final []string
			for i, f := range frames(t, out) {
				if err := eventSchema.validate(f.data); err != nil {
					t.Errorf("event %d (%s) does not satisfy ResponseStreamEvent: %v\n%s", i, f.typ, err, f.data)
				}
				ev := gjson.ParseBytes(f.data)
				if f.typ == "response.output_item.done" && ev.Get("item.type").Str == "web_search_call" {
					streamed = append(streamed, ev.Get("item").Raw)
				}
				if f.typ == "response.completed" {
					if err := spectest.Validate(responseSchema, []byte(ev.Get("response").Raw)); err != nil {
						t.Errorf("final Response does not satisfy the schema: %v", err)
					}
					for _, it := range ev.Get("response.output").Array() {
						if it.Get("type").Str == "web_search_call" {
							final = append(final, it.Raw)
						}
					}
				}
			}
			if diff := cmp.Diff(tt.want, streamed); diff != "" {
				t.Errorf("streamed built-in items (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.want, final); diff != "" {
				t.Errorf("built-in items of the final Response (-want +got):\n%s", diff)
			}
		})
	}
}

// reframe rebuilds a Responses SSE stream from a vercel chunks file (one data payload a
// line), as testdata/fixtures/SOURCES.md says.
func reframe(chunks []byte) []byte {
	var out []byte
	for _, line := range strings.Split(string(chunks), "\n") {
		if line = strings.TrimSpace(line); line != "" {
			out = append(out, "event: "+gjson.Get(line, "type").Str+"\ndata: "+line+"\n\n"...)
		}
	}
	return out
}
