package responsesin

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/agate-gateway/agate/translate"
)

// headBodies are the first pass's specification cases: scenario d's histories, and
// bodies it vouches for or leaves to the full parse at each of its checks, accepted and
// refused.
func headBodies(t testing.TB) [][]byte {
	var bodies [][]byte
	for _, kb := range []int{10, 100} {
		body, err := os.ReadFile(filepath.Join("testdata", fmt.Sprintf("history-%dk.json", kb)))
		if err != nil {
			t.Fatal(err)
		}
		bodies = append(bodies, body)
	}
	for _, b := range []string{
		// vouched for
		`{"model":"m","input":"hi"}`,
		`{"model":"m","input":[{"role":"user","content":"hi"}]}`,
		`{"model":"m","stream":true,"store":false,"instructions":"be brief","input":[{"type":"message","role":"developer","content":[{"type":"input_text","text":"a\n\"b\""}]},` +
			`{"role":"assistant","content":[{"type":"output_text","text":"c","annotations":[]}]},{"type":"function_call","call_id":"c1","name":"f","arguments":"{\"x\":1}","id":"fc_1","status":"completed"},` +
			`{"type":"function_call_output","call_id":"c1","output":"r"},{"role":"user","content":"and now?"}],"tools":[{"type":"function","name":"f","parameters":{"type":"object"}}],"tool_choice":"auto","include":["reasoning.encrypted_content"],"metadata":{"a":"b"},"future":1}`,
		`{"model":"m","input":[{"type":"function_call","call_id":"c","name":"f","arguments":"","namespace":null}]}`,
		// vouched for, and built in the walk for a translated model: consecutive calls and
		// assistant messages joining one turn, escaped values it decodes, empty content,
		// content before role
		`{"input":[{"content":[],"role":"user"},{"content":"a\u00e9","role":"assistant"},{"type":"function_call","call_id":"c1","name":"f\u006e","arguments":"{\"x\":\"\\n\"}"},{"type":"function_call","call_id":"c2","name":"g","arguments":""},` +
			`{"type":"function_call_output","call_id":"c\u0031","output":"r\"1\""},{"type":"function_call_output","call_id":"c2","output":""},{"role":"assistant","content":[{"type":"output_text","text":"x"},{"text":"y\t","type":"output_text"}]},` +
			`{"type":"function_call","call_id":"c3","name":"h","arguments":"{}"},{"role":"system","content":"s"},{"role":"developer","content":[{"type":"input_text","text":"d"}]}],"instructions":"i","model":"m"}`,
		// the model after the input, as openai-python writes its members (sorted)
		`{"input":[{"content":"Write a short paragraph.","role":"user"}],"instructions":"Be concise.","max_output_tokens":1024,"model":"m","store":false,"temperature":0.7}`,
		`{"input":[{"role":"user","content":"x"}],"model":"m","model":"n"}`,
		`{"input":[{"role":"user","content":"x"}],"model":5}`,
		`{"input":[{"role":"user","content":"x"}],"mod\u0065l":"m"}`,
		`{"input":[{"role":"user","content":"x"}],"model" : "m","tools":[{"type":"function","name":"f","parameters":{"model":"x"}}]}`,
		`{"input":[{"role":"user","content":"x"}],"model":"m","metadata":{"model":"m\u0065"}}`,
		`{"input":[{"role":"user","content":"x"}],"tools":[},"model":"m"}`,
		// left to the full parse, accepted
		`{"model":"m","input":[{"type":"reasoning","summary":[{"type":"summary_text","text":"t"}]}]}`,
		`{"model":"m","input":[{"role":"assistant","content":[{"type":"refusal","refusal":"no"}]}]}`,
		`{"model":"m","input":[{"type":"function_call_output","call_id":"c","output":[{"type":"input_text","text":"r"}]}]}`,
		`{"model":"m","input":[{"type":"web_search_call","id":"ws"}]}`,
		`{"model":"m","input":[{"type":"m\u0065ssage","role":"user","content":"x"}]}`,
		`{"model":"m","input":[{"type":"function_call","call_id":"c","name":"f","namespace":"ns","arguments":"{}"}],"tools":[{"type":"namespace","name":"ns","description":"d","tools":[{"type":"function","name":"f"}]}]}`,
		// refused, each at one of the checks
		`{"model":"m","input":[]}`,
		`{"model":"m","input":[{"content":"x"}]}`,
		`{"model":"m","input":[{"role":"bot","content":"x"}]}`,
		`{"model":"m","input":[{"role":"user","role":"user","content":"x"}]}`,
		`{"model":"m","input":[{"role":"user","Content":"x"}]}`,
		`{"model":"m","input":[{"role":"user"}]}`,
		`{"model":"m","input":[{"role":"user","content":[{"type":"output_text","text":"x"}]}]}`,
		`{"model":"m","input":[{"role":"user","content":[{"type":"input_text","text":1}]}]}`,
		`{"model":"m","input":[{"role":"user","content":[{"type":"input_text","text":"a","text":"b"}]}]}`,
		`{"model":"m","input":[{"type":"function_call","call_id":"","name":"f","arguments":"{}"}]}`,
		`{"model":"m","input":[{"type":"function_call","call_id":"c","name":"f","arguments":{}}]}`,
		`{"model":"m","input":[{"type":"function_call_output","call_id":"c","output":1}]}`,
		`{"model":"m","input":[5]}`,
		`{"model":"m","input":null}`,
		`{"input":[{"role":"user","content":"x"}]}`,
		`{"model":"m","input":[{"role":"user","content":"x"}],"tool_choice":"required"}`,
		`{"model":"m","input":[{"role":"user","content":"x"}],"temperature":3}`,
		`{"model":"m","input":[{"role":"user","content":"x"}]} x`,
		"{\"model\":\"m\xff\",\"input\":\"x\"}",
		``,
	} {
		bodies = append(bodies, []byte(b))
	}
	return bodies
}

// TestParseHead: the first pass accepts and refuses what ParseWithin does, with its
// errors; what it vouches for, Build completes to ParseWithin's Request, and the
// incomplete Request already holds everything ParseWithin reads but the messages and
// the echo, which it makes as ParseWithin's when an Encoder asks (echoOf).
func TestParseHead(t *testing.T) {
	vouched := 0
	for i, body := range headBodies(t) {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			if checkHead(t, body) {
				vouched++
			}
		})
	}
	if vouched < 6 { // the histories and the first group above
		t.Errorf("the first pass vouched for %d bodies only", vouched)
	}
}

// FuzzParseHead is TestParseHead's property for any body.
func FuzzParseHead(f *testing.F) {
	for _, body := range headBodies(f) {
		f.Add(body)
	}
	f.Fuzz(func(t *testing.T, body []byte) { checkHead(t, body) })
}

// checkHead checks ParseHead against ParseWithin on body and reports whether the first
// pass vouched for it.
func checkHead(t *testing.T, body []byte) bool {
	want, werr := ParseWithin(bytes.Clone(body), translate.DefaultMaxInflated)
	in := bytes.Clone(body)
	r, complete, err := ParseHead(in, translate.DefaultMaxInflated, nil)
	for i := range in { // the request must not alias the caller's buffer, which a server reuses
		in[i] = 'x'
	}
	if fmt.Sprint(err) != fmt.Sprint(werr) {
		t.Fatalf("ParseHead(%q): error %v, ParseWithin's %v", body, err, werr)
	}
	if err != nil {
		return false
	}
	// A model that will be translated ends the first pass: the full parse's request.
	if full, complete, err := ParseHead(bytes.Clone(body), translate.DefaultMaxInflated,
		func(string) bool { return false }); !complete || err != nil || !reflect.DeepEqual(full, want) {
		t.Fatalf("ParseHead(%q) for a translated model = %+v, complete %v, %v; want ParseWithin's %+v", body, full, complete, err, want)
	}
	// The model is asked about once, wherever it is written: before the items are
	// checked when it is written after them (members.ModelAhead's guess, asked first, is
	// another model only when the guess was wrong: then the model is asked about too).
	var asked []string
	_, built, _ := ParseHead(bytes.Clone(body), translate.DefaultMaxInflated, func(m string) bool {
		asked = append(asked, m)
		return true
	})
	if len(asked) > 2 || len(asked) == 2 && asked[0] == asked[1] || !built && (len(asked) == 0 || asked[len(asked)-1] != want.Core.Model) {
		t.Fatalf("ParseHead(%q) asked about the models %q, want %q", body, asked, want.Core.Model)
	}
	if complete {
		if !reflect.DeepEqual(r, want) {
			t.Fatalf("ParseHead(%q) = %+v, ParseWithin's %+v", body, r, want)
		}
		return false
	}
	head, top, core, topCore := *r, *want, *r.Core, *want.Core
	topCore.Messages, topCore.Body, topCore.Edited = nil, "", false
	head.Core, top.Core = nil, nil
	if !head.echoLater { // an incomplete Request makes its echo when an Encoder asks
		t.Fatalf("ParseHead(%q) incomplete made its echo", body)
	}
	head.echo, head.echoLater = r.echoOf(), false
	// An Encoder of the incomplete Request writes ParseWithin's Response object.
	opts := EncoderOptions{ID: "resp_1", Model: "m", Created: 1, Stream: true}
	if got, w := NewEncoder(r, opts).Start(nil), NewEncoder(want, opts).Start(nil); !bytes.Equal(got, w) {
		t.Fatalf("ParseHead(%q) incomplete: the encoder's start\n%s\nParseWithin's\n%s", body, got, w)
	}
	top.lead, top.current, head.lead, head.current = nil, nil, nil, nil
	if !reflect.DeepEqual(head, top) || !reflect.DeepEqual(core, topCore) {
		t.Fatalf("ParseHead(%q) incomplete = %+v %+v, ParseWithin's %+v %+v", body, head, core, top, topCore)
	}
	c := r.Core
	if err := Build(r); err != nil {
		t.Fatalf("Build(%q): %v", body, err)
	}
	if r.Core != c || !reflect.DeepEqual(r, want) {
		t.Fatalf("Build(%q) = %+v, ParseWithin's %+v", body, r, want)
	}
	return true
}
