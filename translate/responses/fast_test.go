package responses

import (
	"strings"
	"testing"

	"github.com/agate-gateway/agate/internal/jsonx"
	"github.com/agate-gateway/agate/translate/internal/goldentest"
)

// recordedEvents returns the data of every event of the package's recorded streams.
func recordedEvents(t testing.TB) []string {
	var out []string
	for _, body := range goldentest.Seeds("upstream.sse", true, 1<<30) {
		for _, line := range strings.Split(string(body), "\n") {
			if d, ok := strings.CutPrefix(strings.TrimRight(line, "\r"), "data: "); ok {
				out = append(out, d)
			}
		}
	}
	if len(out) == 0 {
		t.Fatal("no recorded events")
	}
	return out
}

// FuzzFastDeltaMatchesRootMembers holds fastDelta to RootMembers: whatever event
// it accepts, RootMembers accepts too and reads the same type, delta and item_id, and
// nothing else Event reads. Seeds: every recorded event, and near misses of the layout.
func FuzzFastDeltaMatchesRootMembers(f *testing.F) {
	for _, ev := range recordedEvents(f) {
		f.Add(ev)
	}
	const head = `{"type":"response.output_text.delta","sequence_number":4,"item_id":"msg_1","output_index":0,"content_index":0,"delta":`
	for _, ev := range []string{
		head + `"Sure","logprobs":[],"obfuscation":"MBnKLz2xHFiT"}`,
		head + `"Sure","logprobs":[]}`,
		head + `"a\n\"b\" \u00e9 \ud83d\ude00","logprobs":[]} `,
		head + `"bad \x","logprobs":[]}`,
		head + `"a","logprobs":[],"obfuscation":"x\"}`,
		head + `"a","logprobs":[]}}`,
		head + `"a","logprobs":[],"obfuscation":"x","extra":1}`,
		head + `"a","logprobs":[{"token":"a"}]}`,
		head + `"a","logprobs":[],"delta":"b"}`,
		`{"type":"response.output_text.delta","sequence_number":04,"item_id":"m","output_index":0,"content_index":0,"delta":"a","logprobs":[]}`,
		`{"type":"response.output_text.delta","sequence_number":4,"item_id":"m","output_index":00,"content_index":0,"delta":"a","logprobs":[]}`,
		`{"type":"response.output_text.delta","sequence_number":4,"item_id":"m","output_index":0,"content_index":1e1,"delta":"a","logprobs":[]}`,
		`{"type":"response.output_text.delta","sequence_number":4,"item_id":7,"output_index":0,"content_index":0,"delta":"a","logprobs":[]}`,
		`{"type":"response.function_call_arguments.delta","sequence_number":3,"item_id":"fc_1","output_index":0,"delta":"{\"a","obfuscation":"e"}`,
		`{"type":"response.function_call_arguments.delta","sequence_number":3,"item_id":"fc_1","output_index":0,"delta":"{"}`,
		`{"type":"response.function_call_arguments.delta","sequence_number":3,"item_id":"fc_1","output_index":0,"content_index":0,"delta":"{","logprobs":[]}`,
		`{"type":"response.output_text.delta","sequence_number":3,"item_id":"m","output_index":0,"delta":"a"}`,
		`{"type":"response.function_call_arguments.delta","sequence_number":3,"item_id":"fc_1","output_index":0,"delta":"{","logprobs":[]}`,
		`{"type":"response.function_call_arguments.delt","sequence_number":3,"item_id":"fc_1","output_index":0,"delta":"{"}`,
	} {
		f.Add(ev)
	}
	f.Fuzz(func(t *testing.T, data string) {
		var fast, general jsonx.Scanner
		fast.Reset(data)
		general.Reset(data)
		var mf, mg responsesMembers
		if !fastDelta(&fast, &mf) {
			return
		}
		if _, ok := general.RootMembers(responsesMemberNames[:], mg[:]); !ok {
			t.Fatalf("fastDelta accepted what RootMembers refuses: %q", data)
		}
		if mf != mg {
			t.Fatalf("fastDelta read\n%+v\nRootMembers\n%+v\nfrom %q", mf, mg, data)
		}
	})
}

// TestFastDelta_TakesTheAPILayout: every recorded text and argument delta event in the
// wire's member order (type, then sequence_number; the recordings made through a client
// library that re-serialized the events sort their members) takes the fast path, so the
// fuzz target above compares two different readers.
func TestFastDelta_TakesTheAPILayout(t *testing.T) {
	taken, args := 0, 0
	for _, ev := range recordedEvents(t) {
		arg := strings.HasPrefix(ev, `{"type":"response.function_call_arguments.delta","sequence_number":`)
		if !strings.HasPrefix(ev, `{"type":"response.output_text.delta","sequence_number":`) && !arg {
			continue
		}
		if arg {
			args++
		}
		var sc jsonx.Scanner
		sc.Reset(ev)
		var m responsesMembers
		if !fastDelta(&sc, &m) {
			t.Fatalf("a recorded text delta took the general reader: %q", ev)
		}
		taken++
	}
	if taken < 5 || args < 5 {
		t.Fatalf("only %d recorded deltas, %d of them arguments", taken, args)
	}
}
