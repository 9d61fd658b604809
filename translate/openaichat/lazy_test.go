package openaichat

import (
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/agate-gateway/agate/translate"
)

// lazyCases have escapes in every string ParseRequestLazy leaves as written, and in
// strings it must decode because a check reads them.
var lazyCases = []struct {
	name, body string
	// raw are the strings the lazy parse leaves escaped, as they appear in the body.
	raw []string
}{
	{
		name: "string content",
		body: `{"model":"m","messages":[{"role":"user","content":"line one\nline \"two\" \u00e9"}]}`,
		raw:  []string{`line one\nline \"two\" \u00e9`},
	},
	{
		name: "text and refusal parts",
		body: `{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"a\tb"}]},` +
			`{"role":"assistant","content":[{"type":"refusal","refusal":"no\/way"}]}]}`,
		raw: []string{`a\tb`, `no\/way`},
	},
	{
		name: "tool call arguments, reasoning and refusal",
		body: `{"model":"m","messages":[{"role":"assistant","reasoning_content":"think\u2028more","refusal":"r\\s",` +
			`"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{\"city\":\"Paris\"}"}}]},` +
			`{"role":"tool","tool_call_id":"c1","content":"[{\"day\":\"Fri\",\"high_c\":23}]"}]}`,
		raw: []string{`think\u2028more`, `r\\s`, `{\"city\":\"Paris\"}`, `[{\"day\":\"Fri\",\"high_c\":23}]`},
	},
	{
		name: "surrogate pairs and a lone surrogate",
		body: `{"model":"m","messages":[{"role":"user","content":"\ud83d\ude00 and \ud800 alone"}]}`,
		raw:  []string{`\ud83d\ude00 and \ud800 alone`},
	},
	{
		name: "escaped role, model and ids are decoded for their checks",
		body: `{"model":"gpt\u002d4","messages":[{"role":"\u0075ser","content":"hi"},` +
			`{"role":"assistant","tool_calls":[{"id":"c\u0031","function":{"name":"\u0066","arguments":"{}"}}]},` +
			`{"role":"tool","tool_call_id":"c\u0031","content":"ok"}]}`,
	},
}

func TestParseRequestLazy(t *testing.T) {
	for _, tt := range lazyCases {
		t.Run(tt.name, func(t *testing.T) {
			want, err := ParseRequest([]byte(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			lazy, err := ParseRequestLazy([]byte(tt.body))
			if err != nil {
				t.Fatalf("lazy: %v", err)
			}
			if got := escapedStrings(lazy); !reflect.DeepEqual(got, tt.raw) {
				t.Errorf("strings left escaped = %q, want %q", got, tt.raw)
			}
			if lazy.Model != want.Model || lazy.Messages[0].Role != want.Messages[0].Role {
				t.Errorf("model %q role %q, want them decoded: %q %q", lazy.Model, lazy.Messages[0].Role, want.Model, want.Messages[0].Role)
			}
			Decode(lazy)
			if !reflect.DeepEqual(lazy, want) {
				t.Errorf("after Decode:\n%+v\nwant ParseRequest's\n%+v", lazy, want)
			}
			Decode(lazy) // idempotent: a decoded string with a backslash is not decoded again
			if !reflect.DeepEqual(lazy, want) {
				t.Errorf("a second Decode changed the request:\n%+v", lazy)
			}
			Decode(want) // a no-op on what ParseRequest returns
			if again, _ := ParseRequest([]byte(tt.body)); !reflect.DeepEqual(want, again) {
				t.Errorf("Decode changed ParseRequest's request:\n%+v", want)
			}
		})
	}
}

// escapedStrings lists the payload strings of req that still hold a backslash and lie
// in its body.
func escapedStrings(req *translate.Request) []string {
	var out []string
	add := func(s string) {
		if strings.Contains(s, `\`) && strings.Contains(req.Body, s) {
			out = append(out, s)
		}
	}
	for _, m := range req.Messages {
		add(m.Reasoning)
		add(m.Refusal)
		for _, p := range m.Content {
			add(p.Text)
		}
		for _, c := range m.ToolCalls {
			add(c.Arguments)
		}
	}
	return out
}

// addLazySeeds adds the lazy parse's fuzz seeds: the recorded requests, the quirks, the
// lazy cases, the bench's request and the files named (scenario d's histories).
func addLazySeeds(f *testing.F, files ...string) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s)
	}
	for _, s := range quirkSeeds {
		f.Add([]byte(s))
	}
	for _, tt := range lazyCases {
		f.Add([]byte(tt.body))
	}
	f.Add(benchRequest(f))
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
}

// FuzzLazyMatchesParse: for every body, the lazy parse fails exactly as ParseRequest does,
// and once decoded its request is ParseRequest's.
func FuzzLazyMatchesParse(f *testing.F) {
	addLazySeeds(f, "testdata/history-10k.json")
	scratch, stage := new(Scratch), new(Stage) // reused across inputs, as the gateway reuses them
	f.Fuzz(func(t *testing.T, body []byte) {
		want, werr := ParseRequest(body)
		got, gerr := ParseRequestLazy(body)
		if !reflect.DeepEqual(gerr, werr) {
			t.Fatalf("lazy error %v, ParseRequest's %v", gerr, werr)
		}
		scratch.Reset()
		stage.Reset()
		inScratch, serr := ParseRequestLazyString(string(body), scratch, stage)
		if !reflect.DeepEqual(serr, werr) {
			t.Fatalf("error parsing into a scratch %v, ParseRequest's %v", serr, werr)
		}
		if werr != nil {
			return
		}
		if DecodeInto(inScratch, scratch); !reflect.DeepEqual(inScratch, want) {
			t.Fatalf("decoded request parsed into a scratch differs:\n%+v\nwant\n%+v", inScratch, want)
		}
		Decode(got)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("decoded lazy request differs:\n%+v\nwant\n%+v", got, want)
		}
		Decode(got)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("a second Decode changed the request")
		}
	})
}

// BenchmarkParseRequest10KLazy is BenchmarkParseRequest10K's body parsed lazily, as the
// passthrough does, and lazily then decoded, as a translated request is; each from a
// byte slice (a copy) and, as the gateway does, from a view into a reused Scratch.
func BenchmarkParseRequest10KLazy(b *testing.B) { benchmarkLazy(b, "testdata/history-10k.json") }

// BenchmarkParseRequest100KLazy is BenchmarkParseRequest10KLazy for scenario d's history
// at 100 KB (-large-kb 100), some 320 messages: past the parser's 32-entry stash.
func BenchmarkParseRequest100KLazy(b *testing.B) { benchmarkLazy(b, "testdata/history-100k.json") }

func benchmarkLazy(b *testing.B, file string) {
	body, err := os.ReadFile(file)
	if err != nil {
		b.Fatal(err)
	}
	view := string(body)
	for _, bc := range []struct {
		name            string
		decode, scratch bool
	}{{"lazy", false, false}, {"lazy+decode", true, false}, {"view+scratch", false, true}, {"view+scratch+decode", true, true}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(body)))
			var sc Scratch
			var st Stage
			for b.Loop() {
				var req *translate.Request
				var err error
				if bc.scratch { // as the gateway parses: a view of its buffer, into a recycled Scratch
					sc.Reset()
					st.Reset()
					req, err = ParseRequestLazyString(view, &sc, &st)
				} else {
					req, err = ParseRequestLazy(body)
				}
				if err != nil {
					b.Fatal(err)
				}
				if bc.decode && bc.scratch {
					DecodeInto(req, &sc)
				} else if bc.decode {
					Decode(req)
				}
			}
		})
	}
}

// TestScratch_ReuseMatchesFreshParse: requests parsed one after another into one Scratch,
// Reset in between, each equal a fresh parse of their body, decoded into it (DecodeInto)
// they equal ParseRequest's, and a request no larger than the one before is built in the
// same memory.
func TestScratch_ReuseMatchesFreshParse(t *testing.T) {
	history, err := os.ReadFile("testdata/history-10k.json")
	if err != nil {
		t.Fatal(err)
	}
	bodies := []string{string(history), string(benchRequest(t))}
	for _, tt := range lazyCases {
		bodies = append(bodies, tt.body)
	}
	bodies = append(bodies, string(history))
	var sc Scratch
	var st Stage
	var first *translate.Message
	var firstTool *translate.Tool
	call := func(r *translate.Request) *translate.ToolCall {
		for k := range r.Messages {
			if len(r.Messages[k].ToolCalls) > 0 {
				return &r.Messages[k].ToolCalls[0]
			}
		}
		t.Fatal("the history has no tool calls")
		return nil
	}
	for i, body := range bodies {
		sc.Reset()
		st.Reset()
		got, err := ParseRequestLazyString(body, &sc, &st)
		if err != nil {
			t.Fatalf("body %d: %v", i, err)
		}
		want, err := ParseRequestLazy([]byte(body))
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("body %d parsed into a reused scratch:\n%+v\nwant\n%+v", i, got, want)
		}
		decoded, err := ParseRequest([]byte(body))
		if err != nil {
			t.Fatal(err)
		}
		if DecodeInto(got, &sc); !reflect.DeepEqual(got, decoded) {
			t.Fatalf("body %d decoded into a reused scratch:\n%+v\nwant\n%+v", i, got, decoded)
		}
		if i == 0 {
			first, firstTool = &got.Messages[0], &got.Tools[0]
			call(got)
		}
		if i == len(bodies)-1 {
			// The first request's tool calls outgrew the first arrays the scratch had;
			// the same body again fits the last one it kept.
			if &got.Messages[0] != first || &got.Tools[0] != firstTool || call(got) != &sc.calls[:1][0] {
				t.Error("the last request's messages, tools or tool calls are not in the scratch's memory")
			}
		}
	}
	sc.Reset()
	if sc.req.Body != "" || len(sc.msgs) != 0 || cap(sc.msgs) == 0 || sc.msgs[:cap(sc.msgs)][0].Role != "" ||
		cap(sc.tools) == 0 || sc.tools[:cap(sc.tools)][0].Name != "" || cap(sc.calls) == 0 || sc.calls[:cap(sc.calls)][0].ID != "" {
		t.Errorf("after Reset the scratch still refers to the last request, or dropped its memory")
	}
}
