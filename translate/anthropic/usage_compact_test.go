package anthropic

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/agate-gateway/agate/internal/jsonx"
)

// TestMergeCompact holds the byte reader of the Messages API's usage layout to what it
// takes and what it leaves to the scanner: every row it takes merges as mergeGeneral
// does, over counts seen before; the rows it refuses leave u as it was.
func TestMergeCompact(t *testing.T) {
	prior := anthropicCounts{input: 1, output: 2, cacheRead: 3, cacheWrite: 4}
	for _, c := range []struct {
		in   string
		want anthropicCounts // when taken
		take bool
	}{
		{`{"input_tokens":412,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"cache_creation":{"ephemeral_5m_input_tokens":0,"ephemeral_1h_input_tokens":0},"output_tokens":187,"service_tier":"standard"}`,
			anthropicCounts{input: 412, output: 187}, true},
		{`{"output_tokens":15}`, anthropicCounts{input: 1, output: 15, cacheRead: 3, cacheWrite: 4}, true},
		{`{"input_tokens":5,"input_tokens":6,"server_tool_use":{"web_search_requests":1},"output_tokens":null}`, anthropicCounts{input: 6, output: 2, cacheRead: 3, cacheWrite: 4}, true},
		{`{"output_tokens":"7","x y":"z","inference_geo":"us","cache_creation":{}}`, prior, true},
		{`{}`, prior, true},
		// Left to the scanner.
		{`{"input_tokens":10,"iterations":[{"input_tokens":100}]}`, prior, false},
		{`{"iterations":null}`, prior, false},
		{`{"input_tokens": 1}`, prior, false},
		{`{"input_tokens":-1}`, prior, false},
		{`{"input_tokens":1.5}`, prior, false},
		{`{"input_tokens":true}`, prior, false},
		{`{"service_tier":"st\u0061ndard"}`, prior, false},
		{`{"cache_creation":{"a":{"b":1}}}`, prior, false},
		{`{"cache_creation":{"a":"b"}}`, prior, false},
		{`{"cache_creation":{"iterations":1}}`, prior, false}, // countName refuses the name anywhere
		{`{"a":[]}`, prior, false},
		{`{"input_tokens":1,}`, prior, false},
		{`{"input_tokens":1`, prior, false},
		{`{"input_tokens":nul}`, prior, false},
	} {
		u := anthropicUsage{top: prior}
		end, ok := u.mergeCompact(c.in, 0)
		if ok != c.take {
			t.Errorf("mergeCompact(%s) took it: %v, want %v", c.in, ok, c.take)
			continue
		}
		if u.top != c.want {
			t.Errorf("mergeCompact(%s): %+v, want %+v", c.in, u.top, c.want)
		}
		if ok && end != len(c.in) {
			t.Errorf("mergeCompact(%s) ended at %d of %d", c.in, end, len(c.in))
		}
	}
}

// FuzzMergeCompactMatchesGeneral holds mergeCompact to the scanner's reader it is a
// shortcut of, over counts seen before: on any input it takes, the input is a JSON object
// there, and mergeGeneral takes the same counts and ends at the same offset. Seeded with
// the usage objects of the recorded Messages responses and usageSeeds.
func FuzzMergeCompactMatchesGeneral(f *testing.F) {
	paths, err := filepath.Glob("../../testdata/fixtures/anthropic/json/*.json")
	if err != nil {
		f.Fatal(err)
	}
	paths = append(paths, "testdata/bench-response.json")
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		if i := bytes.Index(b, []byte(`"usage":`)); i >= 0 {
			f.Add(b[i+len(`"usage":`):])
		}
	}
	for _, s := range usageSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s := string(data)
		if len(s) == 0 || s[0] != '{' {
			return
		}
		prior := anthropicUsage{top: anthropicCounts{input: 1, output: 2, cacheRead: 3, cacheWrite: 4}}
		one := prior
		end, ok := one.mergeCompact(s, 0)
		if !ok {
			if one != prior {
				t.Fatalf("mergeCompact refused %q but changed the counts: %+v", s, one)
			}
			return
		}
		if !jsonx.Valid(s[:end]) {
			t.Fatalf("mergeCompact took %q, which is not JSON", s[:end])
		}
		two := prior
		sc := jsonx.NewScanner(s)
		if !two.mergeGeneral(&sc) || one != two || sc.Pos() != end {
			t.Fatalf("on %q\nmergeCompact %+v end %d\nmergeGeneral %+v end %d", s, one, end, two, sc.Pos())
		}
	})
}
