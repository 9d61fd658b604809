package proxy_test

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agate-gateway/agate/internal/openaitest"
)

// TestResponses_PassthroughSequenceNumbers: a responses backend's stream passed through to
// a /v1/responses client reaches it with strictly increasing sequence_numbers, whatever
// numbering the upstream sent. The upstream is the recorded parallel function call stream
// (testdata/fixtures/responses/stream/parallel-function-calls.mirascope.sse) as recorded,
// and with the numbering of its function call events restarted at 0 for each call, as a
// stream stitched from parts is numbered; every other byte is the recording's. The events
// the upstream numbered in order keep their numbers; the others get the last one plus one.
// The stream cut before its terminal event ends with the gateway's error event, numbered
// after the rest.
func TestResponses_PassthroughSequenceNumbers(t *testing.T) {
	t.Parallel() // nothing shared, no clock or environment of the process (#54)
	recording, err := os.ReadFile(filepath.Join("..", "testdata", "fixtures", "responses", "stream", "parallel-function-calls.mirascope.sse"))
	if err != nil {
		t.Fatal(err)
	}
	seqRE := regexp.MustCompile(`"sequence_number":\d+`)
	// restarted numbers each function call's events from 0: the count starts again at
	// each output_item.added of a function_call.
	restarted := func(b []byte) []byte {
		var out [][]byte
		n := 0
		for _, ev := range bytes.SplitAfter(b, []byte("\n\n")) {
			if bytes.Contains(ev, []byte(`"type":"response.output_item.added"`)) && bytes.Contains(ev, []byte(`"type":"function_call"`)) {
				n = 0
			}
			if bytes.Contains(ev, []byte(`"type":"response.function_call_arguments.`)) || bytes.Contains(ev, []byte(`"type":"response.output_item.`)) {
				ev = seqRE.ReplaceAll(ev, []byte(`"sequence_number":`+strconv.Itoa(n)))
				n++
			}
			out = append(out, ev)
		}
		return bytes.Join(out, nil)
	}
	seqs := func(body []byte) []int {
		var s []int
		for _, m := range seqRE.FindAll(body, -1) {
			n, _ := strconv.Atoi(string(m[len(`"sequence_number":`):]))
			s = append(s, n)
		}
		return s
	}
	cut := func(b []byte) []byte {
		evs := bytes.SplitAfter(b, []byte("\n\n"))
		return bytes.Join(evs[:len(evs)-3], nil) // without response.completed
	}
	tests := []struct {
		name     string
		upstream []byte
		cutShort bool
	}{
		{name: "as recorded", upstream: recording},
		{name: "function call events numbered from 0 again", upstream: restarted(recording)},
		{name: "numbering restarted, stream cut", upstream: cut(restarted(recording)), cutShort: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := startGatewayFor(t, "responses")
			g.up.push(replay{200, "text/event-stream", tt.upstream})
			r := postJSON(t, g.url+"/responses", "k", `{"model":"client-model","input":"hi","stream":true}`)
			if r.status != 200 {
				t.Fatalf("%d %s", r.status, r.body)
			}
			openaitest.CheckResponseEvents(t, r.body)
			// The recording is numbered 0, 1, 2...: so is every stream the client gets.
			got := seqs(r.body)
			want := make([]int, len(got))
			for i := range want {
				want[i] = i
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("sequence numbers (-want +got):\n%s", diff)
			}
			if tt.cutShort && !bytes.Contains(r.body, []byte("event: error\n")) {
				t.Errorf("a cut stream does not end with an error event")
			}
		})
	}
}
