package messagesin_test

import (
	"bytes"
	"fmt"
	"reflect"
	"testing"

	"github.com/agate-gateway/agate/translate"
	"github.com/agate-gateway/agate/translate/messagesin"
)

// headBodies are the first pass's specification cases: the lazy parse's (the recordings
// and bodies with escapes), and bodies it vouches for or leaves to the full parse at
// each of its checks, accepted and refused.
func headBodies(t testing.TB) [][]byte {
	bodies := lazyBodies(t)
	for _, b := range []string{
		// vouched for
		`{"model":"m","max_tokens":5,"messages":[{"content":"hi","role":"user"}]}`,
		// the model after the messages, as anthropic-sdk-python writes its members (sorted)
		`{"max_tokens":1024,"messages":[{"content":"Write a short paragraph.","role":"user"}],"model":"m","system":"Be concise.","temperature":0.7}`,
		`{"max_tokens":5,"messages":[{"role":"user","content":"x"}],"model":"m","model":"n"}`,
		`{"max_tokens":5,"messages":[{"role":"user","content":"x"}],"model":5}`,
		`{"max_tokens":5,"messages":[{"role":"user","content":"x"}],"mod\u0065l":"m"}`,
		`{"max_tokens":5,"messages":[{"role":"user","content":"x"}],"model" : "m","tools":[{"name":"f","input_schema":{"type":"object","model":"x"}}]}`,
		`{"max_tokens":5,"messages":[{"role":"user","content":"x"}],"model":"m","metadata":{"model":"m\u0065"}}`,
		`{"max_tokens":5,"messages":[{"role":"user","content":"x"}],"tools":[},"model":"m"}`,
		`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"a","role":"x","content":5}]}`,
		`{"model":"m","max_tokens":5,"messages":[{"role":"system","content":""},{"role":"system","content":null},{"role":"system","content":[{"type":"text","text":"s","cache_control":{"type":"ephemeral"}}]},{"role":"user","content":"hi"}]}`,
		`{"model":"m","max_tokens":5,"messages":[{"role":"assistant","content":[{"type":"server_tool_use","id":"srv~1"},{"type":"redacted_thinking","data":"x"}]}]}`,
		`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":null,"is_error":true},{"type":"tool_result","tool_use_id":"u","content":[{"type":"text","text":"r"}]}]}]}`,
		`{"model":"m","max_tokens":5,"stream":true,"tools":[{"name":"f","input_schema":{"type":"object"}},{"type":"web_search_20250305","name":"web_search"}],"tool_choice":{"type":"auto"},"thinking":{"type":"enabled","budget_tokens":5000},"future_field":1,"messages":[{"role":"user","content":"hi"}]}`,
		// vouched for, and built in the walk for a translated model: content before the
		// role, each block type the walk builds, escaped values it decodes, repeated members
		`{"max_tokens":5,"messages":[{"content":[{"text":"a\nb","type":"text","cache_control":{"type":"ephemeral"}},{"content":[{"text":"r1","type":"text"},{"cache_control":{"type":"ephemeral"},"text":"r\"2","type":"text"}],"is_error":true,"tool_use_id":"t\u0031","type":"tool_result","cache_control":{"type":"ephemeral"}},{"type":"tool_result","tool_use_id":"u","content":"s\\"},{"type":"text","text":"after"}],"role":"user"},{"content":[{"thinking":"th\nink","signature":"s\u0067","type":"thinking"},{"data":"d\/","type":"redacted_thinking"},{"type":"text","text":"t","cache_control":null},{"id":"c1","input":{"a":"\u00e9"},"name":"f\u006e","type":"tool_use"},{"id":"c2","input":"x","name":"g","type":"tool_use"},{"id":"c3","name":"h","type":"tool_use"},{"type":"server_tool_use","id":"s"}],"role":"assistant"},{"content":"","role":"system"},{"content":[{"type":"text","text":"sys"}],"role":"system"},{"content":"q","role":"user","content":5}],"model":"m","system":[{"type":"text","text":"top"}]}`,
		`{"model":"m","max_tokens":5,"messages":[{"role":"assistant","content":"a","role":"user"},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":[]}]},{"role":"assistant","content":[{"type":"thinking","thinking":"x","type":"text","thinking":"y"}]},{"role":"assistant","content":[{"type":"server_tool_use","id":"s"}]},{"role":"user","content":"u"}]}`,
		// left to the full parse, accepted
		`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":[{"type":"image","source":{"type":"url","url":"u"}}]}]}`,
		`{"model":"m","max_tokens":5,"messages":[{"role":"assistant","content":[{"type":"tool_use","id":"toolu__agate1xyz","name":"f","input":{}}]}]}`,
		`{"model":"m","max_tokens":5,"messages":[{"role":"system","content":""},{"role":"user","content":[]}],"system":"s"}`,
		// refused, each at one of the checks
		`{"model":"m","max_tokens":5,"messages":[]}`,
		`{"model":"m","max_tokens":5,"messages":[{"role":"system","content":""}]}`,
		`{"model":"m","max_tokens":5,"messages":[{"role":"user"}]}`,
		`{"model":"m","max_tokens":5,"messages":[{"role":"bot","content":"x"}]}`,
		`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":5}]}`,
		`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":[{"type":"text","text":1}]}]}`,
		`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":[{"type":"text","text":"a","cache_control":"x"}]}]}`,
		`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":[{"type":"tool_result","content":"r"}]}]}`,
		`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":4}]}]}`,
		`{"model":"m","max_tokens":5,"messages":[{"role":"assistant","content":[{"text":"a"}]}]}`,
		`{"model":"m","max_tokens":5,"messages":[{"role":"assistant","content":[{"type":"tool_use","id":"t","input":{}}]}]}`,
		`{"model":"m","max_tokens":5,"messages":[{"role":"assistant","content":["x"]}]}`,
		`{"model":"m","max_tokens":0,"messages":[{"role":"user","content":"hi"}]}`,
		`{"model":"m","messages":[{"role":"user","content":"hi"}]}`,
		`{"max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`,
		`{"model":"m","max_tokens":5,"model":"n","messages":[{"role":"user","content":"hi"}]}`,
		`{"model":"m","max_tokens":5,"Messages":[{"role":"user","content":"hi"}]}`,
		`{"model":"m","max_tokens":5,"tools":[{"name":"f"},{"name":"f"}],"messages":[{"role":"user","content":"hi"}]}`,
		`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"}]} x`,
		`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"},]}`,
		"{\"model\":\"m\xff\",\"max_tokens\":5,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}",
	} {
		bodies = append(bodies, []byte(b))
	}
	return bodies
}

// TestParseHead: the first pass accepts and refuses what ParsePass does, with its errors;
// what it vouches for, Build completes to ParsePass's request, and the incomplete request
// already holds ParsePass's top-level fields and PassBody.
func TestParseHead(t *testing.T) {
	vouched := 0
	for i, body := range headBodies(t) {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			if checkHead(t, body) {
				vouched++
			}
		})
	}
	if vouched < 10 { // the recordings and the first group above
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

// checkHead checks ParseHead against ParsePass on body and reports whether the first
// pass vouched for it.
func checkHead(t *testing.T, body []byte) bool {
	want, wpass, werr := messagesin.ParsePass(bytes.Clone(body), translate.DefaultMaxInflated)
	own := bytes.Clone(body)
	req, pass, complete, err := messagesin.ParseHead(own, translate.DefaultMaxInflated, nil)
	if fmt.Sprint(err) != fmt.Sprint(werr) {
		t.Fatalf("ParseHead(%q): error %v, ParsePass's %v", body, err, werr)
	}
	if err != nil {
		return false
	}
	// A model that will be translated ends the first pass: the full parse's request.
	if full, _, complete, err := messagesin.ParseHead(bytes.Clone(body), translate.DefaultMaxInflated,
		func(string) bool { return false }); !complete || err != nil || !reflect.DeepEqual(full, want) {
		t.Fatalf("ParseHead(%q) for a translated model = %+v, complete %v, %v; want ParsePass's %+v", body, full, complete, err, want)
	}
	// The model is asked about once, wherever it is written: before the items are
	// checked when it is written after them (members.ModelAhead's guess, asked first, is
	// another model only when the guess was wrong: then the model is asked about too).
	var asked []string
	_, _, built, _ := messagesin.ParseHead(bytes.Clone(body), translate.DefaultMaxInflated, func(m string) bool {
		asked = append(asked, m)
		return true
	})
	if len(asked) > 2 || len(asked) == 2 && asked[0] == asked[1] || !built && (len(asked) == 0 || asked[len(asked)-1] != want.Model) {
		t.Fatalf("ParseHead(%q) asked about the models %q, want %q", body, asked, want.Model)
	}
	if pass != wpass {
		t.Fatalf("ParseHead(%q): PassBody %+v, ParsePass's %+v", body, pass, wpass)
	}
	if complete {
		if !reflect.DeepEqual(req, want) {
			t.Fatalf("ParseHead(%q) = %+v, ParsePass's %+v", body, req, want)
		}
		return false
	}
	head, top := *req, *want
	top.Messages, top.Body, top.Edited = nil, "", false
	if !reflect.DeepEqual(&head, &top) {
		t.Fatalf("ParseHead(%q) incomplete = %+v, ParsePass's top level %+v", body, &head, &top)
	}
	if err := messagesin.Build(req, own, translate.DefaultMaxInflated); err != nil {
		t.Fatalf("Build(%q): %v", body, err)
	}
	if !reflect.DeepEqual(req, want) {
		t.Fatalf("Build(%q) = %+v, ParsePass's %+v", body, req, want)
	}
	return true
}
