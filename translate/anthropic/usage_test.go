package anthropic

import (
	"os"
	"strings"
	"testing"

	"github.com/agate-gateway/agate/internal/jsonx"
)

// usageSeeds are usage objects that test what merge takes: later members of a name
// replacing earlier ones, counts that are not numbers, and usage.iterations (server-side
// compaction), repeated, empty and holding values that are not objects.
var usageSeeds = []string{
	`{"input_tokens":412,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"cache_creation":{"ephemeral_5m_input_tokens":0,"ephemeral_1h_input_tokens":0},"output_tokens":187,"service_tier":"standard"}`,
	`{"input_tokens":1,"input_tokens":2,"output_tokens":"3","cache_read_input_tokens":null,"cache_creation_input_tokens":4.5}`,
	`{"input_tokens":10,"output_tokens":5,"iterations":[{"type":"compaction","input_tokens":100,"output_tokens":20},{"type":"message","input_tokens":10,"output_tokens":5,"cache_read_input_tokens":7}]}`,
	`{"iterations":[{"input_tokens":1}],"iterations":[],"output_tokens":1}`,
	`{"iterations":[1,[{"input_tokens":9}],null,{"input_tokens":"2","output_tokens":3,"output_tokens":4}]}`,
	`{"iterations":{"input_tokens":5},"input_tokens":6}`,
	`{"input_tokens":1e3,"output_tokens":-2,"cache_read_input_tokens":99999999999999999999}`,
	`{"input_tokens":1`, `[{"input_tokens":1}]`, `"usage"`, `null`, `{}`, ` {"output_tokens" : 7 } `,
	`{"iterations":[{"input_tokens":1},]}`,
}

// FuzzMergeAtMatchesMerge holds mergeAt, which reads a usage object as it is checked, to
// the two passes it replaces (ValueRaw to check the value, then merge over it): on any
// input both accept or refuse alike, end at the same place and take the same counts.
func FuzzMergeAtMatchesMerge(f *testing.F) {
	for _, s := range usageSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		one := jsonx.NewScanner(string(data))
		var u1 anthropicUsage
		ok1 := u1.mergeAt(&one)

		two := jsonx.NewScanner(string(data))
		var u2 anthropicUsage
		var v jsonx.Value
		ok2 := two.ValueRaw(&v)
		if ok2 {
			end := two.Pos()
			u2.merge(&two, v)
			two.Seek(end)
		}
		if ok1 != ok2 {
			t.Fatalf("mergeAt ok=%v, ValueRaw ok=%v on %q", ok1, ok2, data)
		}
		if ok1 && (u1 != u2 || one.Pos() != two.Pos()) {
			t.Fatalf("on %q\nmergeAt    %+v at %d\ntwo passes %+v at %d", data, u1, one.Pos(), u2, two.Pos())
		}
	})
}

// FuzzResponseRootMatchesRootMembers holds responseRoot, DecodeResponse's one checking
// pass, to RootMembers followed by merge over the first usage member: the same answer
// whether the body is one JSON value, the same members and the same counts. Seeded with
// the recorded Messages responses and the usage seeds placed in one.
func FuzzResponseRootMatchesRootMembers(f *testing.F) {
	for _, name := range []string{"text", "parallel-tool-use", "max-tokens"} {
		b, err := os.ReadFile("../../testdata/fixtures/anthropic/json/" + name + ".mirascope.json")
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, s := range usageSeeds {
		f.Add([]byte(`{"type":"message","content":[],"usage":` + s + `,"usage":{"input_tokens":3},"stop_reason":"end_turn"}`))
	}
	f.Add([]byte(`[1]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		one := jsonx.NewScanner(string(data))
		var m1 [len(responseMembers)]jsonx.Value
		var u1 anthropicUsage
		root1, ok1 := responseRoot(&one, m1[:], &u1)

		two := jsonx.NewScanner(string(data))
		var m2 [len(responseMembers)]jsonx.Value
		root2, ok2 := two.RootMembers(responseMembers[:], m2[:])
		var u2 anthropicUsage
		if ok2 {
			u2.merge(&two, m2[respUsage])
		}
		m2[respUsage] = jsonx.Value{} // responseRoot leaves it Missing
		if ok1 != ok2 {
			t.Fatalf("responseRoot ok=%v, RootMembers ok=%v on %q", ok1, ok2, data)
		}
		if ok1 && (root1 != root2 || m1 != m2 || u1 != u2) {
			t.Fatalf("on %q\nresponseRoot %+v %+v %+v\nRootMembers  %+v %+v %+v", data, root1, m1, u1, root2, m2, u2)
		}
	})
}

// FuzzFastDeltaMatchesMembers holds fastDelta, the stream decoder's reader of a text or
// argument delta in the API's layout, to the general reader it stands in for: whatever
// it accepts is one JSON value that RootMembers reads as a content_block_delta with a
// numeric index, whose delta Members reads to the same type and string. Seeded with every
// event of the recorded streams and with near misses.
func FuzzFastDeltaMatchesMembers(f *testing.F) {
	dir := "../../testdata/fixtures/anthropic/stream/"
	entries, err := os.ReadDir(dir)
	if err != nil {
		f.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(dir + e.Name())
		if err != nil {
			f.Fatal(err)
		}
		for _, line := range strings.Split(string(b), "\n") {
			if d, ok := strings.CutPrefix(line, "data: "); ok {
				f.Add([]byte(d))
			}
		}
	}
	for _, s := range []string{
		`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}}`,
		`{"type":"content_block_delta","index":12,"delta":{"type":"input_json_delta","partial_json":"{\"a\":"}}   `,
		`{"type":"content_block_delta","index":01,"delta":{"type":"text_delta","text":"x"}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"x","text":"y"}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"x"},"delta":{}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text": "\u00e9\ud83d\ude00"}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"x\"}}`,
		`{"type":"content_block_delta","index":1234567890,"delta":{"type":"text_delta","text":"x"}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"x"}}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fast := jsonx.NewScanner(string(data))
		member, value, ok := fastDelta(&fast)
		if !ok {
			return
		}
		if member != deltaText && member != deltaPartialJSON {
			t.Fatalf("fastDelta on %q named member %d", data, member)
		}
		var got [len(deltaMembers)]jsonx.Value // what fastDelta says, as Members would fill it
		got[deltaType] = jsonx.Value{Kind: jsonx.String, Str: deltaTypes[member]}
		got[member] = jsonx.Value{Kind: jsonx.String, Str: value}
		sc := jsonx.NewScanner(string(data))
		var m anthropicMembers
		if _, ok := sc.RootMembers([]string{"type", "index", "delta", "content_block", "message", "usage"}, m[:]); !ok {
			t.Fatalf("fastDelta accepted what is not one JSON value: %q", data)
		}
		if m[0].Str != "content_block_delta" || m[1].Kind != jsonx.Number || m[2].Kind != jsonx.Object {
			t.Fatalf("fastDelta accepted %q, which reads as type %q, index %v, delta %v", data, m[0].Str, m[1].Kind, m[2].Kind)
		}
		var want [len(deltaMembers)]jsonx.Value
		sc.Members(m[2], deltaMembers[:], want[:])
		for i := range want {
			if got[i].Kind != want[i].Kind || got[i].Str != want[i].Str {
				t.Fatalf("on %q, delta member %s: fastDelta %v %q, Members %v %q", data, deltaMembers[i], got[i].Kind, got[i].Str, want[i].Kind, want[i].Str)
			}
		}
	})
}

// TestFastDelta_TakesTheAPILayout: every text and argument delta of the recorded streams
// is read by fastDelta, padding and all, so the general reader is left the rest only.
func TestFastDelta_TakesTheAPILayout(t *testing.T) {
	dir := "../../testdata/fixtures/anthropic/stream/"
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range entries {
		b, err := os.ReadFile(dir + e.Name())
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(b), "\n") {
			d, ok := strings.CutPrefix(line, "data: ")
			if !ok || !strings.Contains(d, `"text_delta"`) && !strings.Contains(d, `"input_json_delta"`) {
				continue
			}
			n++
			sc := jsonx.NewScanner(d)
			if _, _, ok := fastDelta(&sc); !ok {
				t.Errorf("%s: fastDelta declined %q", e.Name(), d)
			}
		}
	}
	if n < 50 {
		t.Fatalf("only %d recorded deltas found", n)
	}
}
