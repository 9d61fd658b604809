package proxy

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/agate-gateway/agate/translate"
)

// FuzzPassthroughChunk: whatever an upstream sends as a chunk, the passthrough either
// rejects it or sends one JSON object whose id, object, created and model are the stream's
// (each exactly once), without usage unless the client asked for it.
func FuzzPassthroughChunk(f *testing.F) {
	for _, name := range []string{"stream/text-include-usage.mirascope.sse", "stream/parallel-tool-calls-include-usage.mirascope.sse"} {
		for _, d := range sseData(f, fixture(f, name)) {
			f.Add([]byte(d), false)
		}
	}
	for _, line := range bytes.Split(fixture(f, "stream/azure-model-router.vercel.chunks.txt"), []byte("\n")) {
		f.Add(line, true)
	}
	f.Add([]byte(`{"id":1,"id":"a","created":"x","usage":{},"usage":null,"\u0069d":"b"}`), false)
	f.Add([]byte(`[1]`), false)
	f.Add([]byte(`{"choices":[{"finish_reason":"stop"}],"error":{"message":"x"}}`), true)
	f.Fuzz(func(t *testing.T, data []byte, includeUsage bool) {
		p := passthroughChunks{backend: "up", model: []byte(`"gpt"`), fallbackID: "chatcmpl-gw", includeUsage: includeUsage}
		for range 2 { // the first chunk fixes the head; the second must keep it
			out, _, err := p.appendChunk(nil, data, func() int64 { return 42 })
			if err != nil {
				var ue *translate.UpstreamError
				if !strings.Contains(err.Error(), "backend up") || !errors.As(err, &ue) || ue.Status != 502 {
					t.Fatalf("error %v is not a 502 naming the backend", err)
				}
				return
			}
			payload, ok := bytes.CutPrefix(out, []byte("data: "))
			if !ok || !bytes.HasSuffix(payload, []byte("\n\n")) {
				t.Fatalf("not one SSE event: %q", out)
			}
			top, ok := members(payload[:len(payload)-2])
			if !ok {
				t.Fatalf("not a JSON object: %q\nfrom %q", out, data)
			}
			count := map[string]int{}
			for _, m := range top {
				count[m.name]++
			}
			for _, k := range []string{"id", "object", "created", "model"} {
				if count[k] != 1 {
					t.Fatalf("%s appears %d times: %q", k, count[k], out)
				}
			}
			if !includeUsage && count["usage"] > 0 {
				t.Fatalf("usage forwarded unasked: %q", out)
			}
			var head struct {
				Object string `json:"object"`
				Model  string `json:"model"`
			}
			if err := json.Unmarshal(payload, &head); err != nil || head.Object != "chat.completion.chunk" || head.Model != "gpt" {
				t.Fatalf("head %+v (%v): %q", head, err, out)
			}
		}
	})
}

type member struct {
	name  string
	value json.RawMessage
}

// members returns the members of a JSON object in order, repeats included.
func members(data []byte) ([]member, bool) {
	dec := json.NewDecoder(bytes.NewReader(data))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, false
	}
	var ms []member
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, false
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, false
		}
		ms = append(ms, member{name: tok.(string), value: v})
	}
	if tok, err := dec.Token(); err != nil || tok != json.Delim('}') {
		return nil, false
	}
	_, err := dec.Token()
	return ms, err != nil
}
