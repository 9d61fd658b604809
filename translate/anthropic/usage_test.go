package anthropic

import (
	"os"
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
