package gemini

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/tools/txtar"

	"github.com/agate-gateway/agate/internal/jsonx"
	"github.com/agate-gateway/agate/internal/sse"
	"github.com/agate-gateway/agate/translate"
)

// recordedGeminiSSE returns the upstream.sse sections of the package's recordings.
func recordedGeminiSSE(t testing.TB) [][]byte {
	files, _ := filepath.Glob(filepath.Join("testdata", "*.txtar"))
	var out [][]byte
	for _, path := range files {
		ar, err := txtar.ParseFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range ar.Files {
			if s.Name == "upstream.sse" {
				out = append(out, s.Data)
			}
		}
	}
	if len(out) == 0 {
		t.Fatal("no recorded streams")
	}
	return out
}

// decodeWith decodes the SSE body with a decoder that takes the fast path for text
// candidates or (general) not, and returns what it emitted, one line per event, and how
// it ended.
func decodeWith(body []byte, general bool) string {
	dec := New().NewStreamDecoder(&translate.Options{}).(*geminiStream)
	dec.general = general
	var b strings.Builder
	emit := func(ev *translate.Event) error {
		c := *ev
		c.Block, c.Item, c.Err = nil, nil, nil // pointers: their contents are compared below
		fmt.Fprintf(&b, "%+v\n", c)
		if ev.Block != nil {
			fmt.Fprintf(&b, "  block %+v\n", *ev.Block)
		}
		if ev.Item != nil {
			fmt.Fprintf(&b, "  item %+v\n", *ev.Item)
		}
		if ev.Err != nil {
			fmt.Fprintf(&b, "  err %v\n", ev.Err)
		}
		return nil
	}
	var p sse.Parser
	err := p.Feed(body, func(typ, data []byte) error { return dec.Event(typ, data, emit) })
	if err == nil {
		err = dec.Close(emit)
	}
	fmt.Fprintf(&b, "end: %v\n", err)
	return b.String()
}

// FuzzFastTextCandidatesMatchesGeneral holds the fast path for text candidates to the
// general reader: any stream decodes to the same events and the same end with it as
// without it. Seeds: the recorded streams and near misses of the text layout.
func FuzzFastTextCandidatesMatchesGeneral(f *testing.F) {
	for _, body := range recordedGeminiSSE(f) {
		f.Add(string(body))
	}
	const head = `{"candidates": [{"content": {"parts": [{"text": `
	const tail = `}],"role": "model"},"index": 0}],"usageMetadata": {"promptTokenCount": 3,"candidatesTokenCount": 2,"totalTokenCount": 5},"modelVersion": "gemini-2.5-flash","responseId": "r1"}`
	for _, ev := range []string{
		head + `"Hello"` + tail,
		head + `"a\nb \"q\" \u00e9 \ud83d\ude00"` + tail,
		head + `"bad \x escape"` + tail,
		head + `"ctrl ` + "\x01" + `"` + tail,
		head + `""` + tail,
		head + `"unterminated`,
		head + `"a"}],"role": "model"},"index": 1}]}`,
		head + `"a"}],"role": "user"},"index": 0}]}`,
		head + `"a"}],"role": "model"},"finishReason": "STOP","index": 0}]}`,
		head + `"a"},{"text": "b"}],"role": "model"},"index": 0}]}`,
		head + `"a"}],"role": "model"},"index": 0}],"candidates": [{"content": {"parts": [{"text": "b"}]},"index": 0}]}`,
		`{"candidates": [{"content": {"parts": [{"text": "b"}]},"index": 0}],"candidates": [{"content": {"parts": [{"text": "a"}],"role": "model"},"index": 0}]}`,
		head + `"a"}],"role": "model"},"index": 0}],"error": {"code": 500, "message": "x"}}`,
		head + `"a"}],"role": "model"},"index": 0}] x`,
	} {
		f.Add("data: " + ev + "\r\n\r\n")
	}
	f.Fuzz(func(t *testing.T, body string) {
		fast, general := decodeWith([]byte(body), false), decodeWith([]byte(body), true)
		if fast != general {
			t.Fatalf("fast path:\n%s\ngeneral reader:\n%s\nbody %q", fast, general, body)
		}
	})
}

// TestFastTextCandidates_TakesTheAPILayout: every recorded chunk whose candidates are one
// text part of candidate 0 (read with encoding/json) takes the fast path, so the fuzz
// target above compares two different readers on the API's own chunks.
func TestFastTextCandidates_TakesTheAPILayout(t *testing.T) {
	taken := 0
	for _, body := range recordedGeminiSSE(t) {
		for _, line := range strings.Split(string(body), "\n") {
			data, ok := strings.CutPrefix(strings.TrimSpace(line), "data: ")
			if !ok || !oneTextPart(data) {
				continue
			}
			_, rest, _ := strings.Cut(data, `"candidates":`) // the cursor after the colon, as the decoder has it
			var sc jsonx.Scanner
			sc.Reset(rest)
			var cands, text jsonx.Value
			if matched, ok := fastTextCandidates(&sc, &cands, &text); !matched || !ok {
				t.Fatalf("a recorded text chunk took the general reader: %.160q", rest)
			}
			taken++
		}
	}
	if taken < 3 {
		t.Fatalf("only %d recorded text chunks took the fast path", taken)
	}
}

// oneTextPart reports whether the chunk's candidates are one candidate, index 0, with
// only content and index, its content only parts and the role "model", and its one part
// only a text.
func oneTextPart(data string) bool {
	var ev struct {
		Candidates []map[string]json.RawMessage `json:"candidates"`
	}
	if json.Unmarshal([]byte(data), &ev) != nil || len(ev.Candidates) != 1 {
		return false
	}
	c := ev.Candidates[0]
	var content map[string]json.RawMessage
	if len(c) != 2 || string(c["index"]) != "0" || json.Unmarshal(c["content"], &content) != nil ||
		len(content) != 2 || string(content["role"]) != `"model"` {
		return false
	}
	var parts []map[string]json.RawMessage
	if json.Unmarshal(content["parts"], &parts) != nil || len(parts) != 1 || len(parts[0]) != 1 {
		return false
	}
	_, ok := parts[0]["text"]
	return ok
}
