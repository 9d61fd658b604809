package openaichat

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/agate-gateway/agate/internal/jsonx"
	"github.com/agate-gateway/agate/translate"
)

// headCases are bodies ParseHead vouches for (head true: it returns them without
// messages) or leaves to the full parse (head false), accepted or refused.
var headCases = []struct {
	name, body string
	head       bool
}{
	{"plain", `{"model":"m","messages":[{"role":"user","content":"hi"}]}`, true},
	{"model after messages", `{"messages":[{"role":"user","content":"hi"}],"model":"m","stream":true}`, true},
	{"tool turn", `{"model":"m","messages":[{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function",` +
		`"function":{"name":"f","arguments":"{\"a\":1}"}}]},{"role":"tool","tool_call_id":"c1","content":"ok"}]}`, true},
	{"spaced and reordered", `{ "model" : "m" , "messages" : [ { "content" : "hi" , "name" : null , "role" : "user" } ] }`, true},
	{"refusal only", `{"model":"m","messages":[{"role":"assistant","refusal":"no"}]}`, true},
	{"tool without content", `{"model":"m","messages":[{"role":"tool","tool_call_id":"c"}]}`, true},
	{"escaped role", `{"model":"m","messages":[{"role":"\u0075ser","content":"hi"}]}`, true},
	{"roles compared", `{"model":"m","messages":[{"role":"system","content":"s"},{"role":"user","content":"u"},` +
		`{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"f"}}]},{"role":"tool","tool_call_id":"c"}]}`, true},
	{"a role's look-alikes", `{"model":"m","messages":[{"role":"users","content":"x"}]}`, false},
	{"a role's prefix", `{"model":"m","messages":[{"role":"assistant\u0020","content":"x"}]}`, false},
	{"escaped type", `{"model":"m","messages":[{"role":"assistant","tool_calls":[{"id":"c","type":"functio\u006e","function":{"name":"f"}}]}]}`, true},
	{"a type's look-alike", `{"model":"m","messages":[{"role":"assistant","tool_calls":[{"id":"c","type":"functions","function":{"name":"f"}}]}]}`, false},
	{"empty tool_calls on a user", `{"model":"m","messages":[{"role":"user","content":"x","tool_calls":[]}]}`, true},
	{"content parts", `{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}]}`, false},
	{"thinking blocks", `{"model":"m","messages":[{"role":"assistant","content":"x","thinking_blocks":[]}]}`, false},
	{"other member", `{"model":"m","messages":[{"role":"user","content":"x","cache":1}]}`, false},
	{"carried id", `{"model":"m","messages":[{"role":"assistant","tool_calls":[{"id":"c~1zAAAA","function":{"name":"f"}}]}]}`, true},
	{"carried raw id", `{"model":"m","messages":[{"role":"assistant","tool_calls":[{"id":"c~1rAAAA","function":{"name":"f"}}]}]}`, true},
	{"unknown role", `{"model":"m","messages":[{"role":"bot","content":"x"}]}`, false},
	{"user without content", `{"model":"m","messages":[{"role":"user"}]}`, false},
	{"null content", `{"model":"m","messages":[{"role":"system","content":null}]}`, false},
	{"assistant with nothing", `{"model":"m","messages":[{"role":"assistant","content":null}]}`, true},
	{"assistant missing all", `{"model":"m","messages":[{"role":"assistant"}]}`, false},
	{"tool_calls on a user", `{"model":"m","messages":[{"role":"user","content":"x","tool_calls":[{"id":"c","function":{"name":"f"}}]}]}`, false},
	{"tool without id", `{"model":"m","messages":[{"role":"tool","content":"x"}]}`, false},
	{"duplicate role", `{"model":"m","messages":[{"role":"user","role":"user","content":"x"}]}`, false},
	// The straight lines' edges: duplicates and members after them, a line broken.
	{"content twice", `{"model":"m","messages":[{"role":"user","content":"a","content":"b"}]}`, false},
	{"tool_call_id twice", `{"model":"m","messages":[{"role":"tool","content":"r","tool_call_id":"c","tool_call_id":"d"}]}`, false},
	{"tool_calls twice", `{"model":"m","messages":[{"role":"assistant","content":null,"tool_calls":[],"tool_calls":[]}]}`, false},
	{"tool call id twice", `{"model":"m","messages":[{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"},"id":"d"}]}]}`, false},
	{"function name twice", `{"model":"m","messages":[{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}","name":"g"}}]}]}`, false},
	{"members after the straight line", `{"model":"m","messages":[{"role":"tool","content":"r","tool_call_id":"c","name":"n"},` +
		`{"role":"assistant","content":"x","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}],"refusal":"r"}]}`, true},
	{"a straight line broken", `{"model":"m","messages":[{"role":"user","name":"n","content":"x"},` +
		`{"role":"assistant","tool_calls":[{"id":"c","function":{"arguments":"{}","name":"f"},"type":"function"}]}]}`, true},
	{"an empty tool_call_id", `{"model":"m","messages":[{"role":"tool","content":"r","tool_call_id":""}]}`, false},
	{"an id not a string", `{"model":"m","messages":[{"role":"assistant","tool_calls":[{"id":1,"type":"function","function":{"name":"f"}}]}]}`, false},
	// The straight lines' values read with their names (sixteenth session).
	{"a user's null content", `{"model":"m","messages":[{"role":"user","content":null}]}`, false},
	{"a null content's tail", `{"model":"m","messages":[{"role":"assistant","content":nullx}]}`, false},
	{"content after a space", `{"model":"m","messages":[{"role":"user","content": "x"}]}`, true},
	{"a tool's null tool_call_id", `{"model":"m","messages":[{"role":"tool","content":"r","tool_call_id":null}]}`, false},
	{"a tool's escaped tool_call_id", `{"model":"m","messages":[{"role":"tool","content":"r","tool_call_id":"\u0063"}]}`, true},
	{"a tool_call_id on a user", `{"model":"m","messages":[{"role":"user","content":"x","tool_call_id":"c"}]}`, true},
	{"tool_call_id twice on a user", `{"model":"m","messages":[{"role":"user","content":"x","tool_call_id":"c","tool_call_id":"d"}]}`, false},
	{"an escaped id and name", `{"model":"m","messages":[{"role":"assistant","tool_calls":[{"id":"c\u0031","type":"function","function":{"name":"f\u0031","arguments":"{}"}}]}]}`, true},
	{"null arguments", `{"model":"m","messages":[{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":null}}]}]}`, true},
	{"an empty name", `{"model":"m","messages":[{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"","arguments":"{}"}}]}]}`, false},
	{"an empty id", `{"model":"m","messages":[{"role":"assistant","tool_calls":[{"id":"","type":"function","function":{"name":"f","arguments":"{}"}}]}]}`, false},
	{"a type null", `{"model":"m","messages":[{"role":"assistant","tool_calls":[{"id":"c","type":null,"function":{"name":"f","arguments":"{}"}}]}]}`, false},
	{"a system role in the straight line", `{"model":"m","messages":[{"role":"developer","content":"d"},{"role":"system","content":"s"}]}`, true},
	{"key case", `{"model":"m","messages":[{"Role":"user","content":"x"}]}`, false},
	{"no messages", `{"model":"m","messages":[]}`, false},
	{"syntax error in a message", `{"model":"m","messages":[{"role":"user","content":"x\q"}]}`, false},
	{"syntax error after", `{"model":"m","messages":[{"role":"user","content":"x"}],}`, false},
	{"field error after", `{"model":"m","messages":[{"role":"user","content":"x"}],"temperature":9}`, false},
	{"field error before", `{"model":7,"messages":[{"role":"user","content":"x"}]}`, false},
	{"tool call type", `{"model":"m","messages":[{"role":"assistant","tool_calls":[{"id":"c","type":"x","function":{"name":"f"}}]}]}`, false},
	{"tool call arguments object", `{"model":"m","messages":[{"role":"assistant","tool_calls":[{"id":"c","function":{"name":"f","arguments":{}}}]}]}`, false},
}

func TestParseHead(t *testing.T) {
	for _, tt := range headCases {
		t.Run(tt.name, func(t *testing.T) {
			headed := checkHead(t, []byte(tt.body), nil, nil, nil)
			if headed != tt.head {
				t.Errorf("messages left unbuilt = %v, want %v", headed, tt.head)
			}
		})
	}
	for _, file := range []string{"testdata/history-10k.json", "testdata/history-100k.json", "testdata/bench-request.json"} {
		body, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if !checkHead(t, body, nil, nil, nil) {
			t.Errorf("%s: ParseHead built the messages: the passthrough's histories are the first pass's to vouch for", file)
		}
	}
}

// TestParseHeadPasses: a model passes refuses has its messages built at once, whether the
// body names it before or after messages, and a wrong guess (a member named model in a
// tool's schema after the real one) is mended by a second parse.
func TestParseHeadPasses(t *testing.T) {
	onlyM := func(model string) bool { return model == "m" }
	// big makes the messages' content long enough for the model after them to be guessed.
	big := `"` + strings.Repeat("hi ", guessFrom/3) + `"`
	for _, tt := range []struct {
		name, body string
		head       bool
	}{
		{"before, passed", `{"model":"m","messages":[{"role":"user","content":"hi"}]}`, true},
		{"before, translated", `{"model":"x","messages":[{"role":"user","content":"hi"}]}`, false},
		{"after, small: built", `{"messages":[{"role":"user","content":"hi"}],"model":"m"}`, false},
		{"after, passed", `{"messages":[{"role":"user","content":` + big + `}],"model":"m"}`, true},
		{"after, translated", `{"messages":[{"role":"user","content":` + big + `}],"model":"x"}`, false},
		{"guessed wrong, translated", `{"messages":[{"role":"user","content":` + big + `}],"model":"x",` +
			`"tools":[{"type":"function","function":{"name":"f","parameters":{"properties":{"a":{"model":"m"}}}}}]}`, false},
		{"guessed wrong, passed", `{"messages":[{"role":"user","content":` + big + `}],"model":"m",` +
			`"tools":[{"type":"function","function":{"name":"f","parameters":{"properties":{"a":{"model":"x"}}}}}]}`, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := checkHead(t, []byte(tt.body), onlyM, nil, nil); got != tt.head {
				t.Errorf("messages left unbuilt = %v, want %v", got, tt.head)
			}
		})
	}
}

// checkHead holds ParseHead to ParseRequestLazyStringWithin for body: the same error, or
// the same request once Build has completed it (and then the same request decoded). It
// reports whether ParseHead left the messages to Build.
func checkHead(t *testing.T, body []byte, passes func(string) bool, scratch *Scratch, stage *Stage) bool {
	t.Helper()
	want, werr := ParseRequestLazyStringWithin(string(body), nil, nil, 1<<20)
	if scratch != nil {
		scratch.Reset()
		stage.Reset()
	}
	got, complete, gerr := ParseHead(string(body), scratch, stage, 1<<20, passes)
	if !reflect.DeepEqual(gerr, werr) {
		t.Fatalf("ParseHead's error %v, the full parse's %v", gerr, werr)
	}
	if werr != nil {
		if !complete {
			t.Fatalf("a refused body is not complete")
		}
		return false
	}
	if !complete {
		if got.Messages != nil {
			t.Fatalf("an incomplete request has messages: %+v", got.Messages)
		}
		// Every member the passthrough forwards or rewrites is the full parse's before
		// the messages are built: the body, the model and the spans it splices.
		head := *got
		head.Messages, head.Carried = want.Messages, want.Carried
		if !reflect.DeepEqual(&head, want) {
			t.Fatalf("ParseHead's request differs:\n%+v\nwant\n%+v", &head, want)
		}
		if err := Build(got, stage, 1<<20); err != nil {
			t.Fatalf("Build refused what ParseHead accepted: %v", err)
		}
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("request differs:\n%+v\nwant\n%+v", got, want)
	}
	Decode(want)
	DecodeInto(got, scratch)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("decoded request differs:\n%+v\nwant\n%+v", got, want)
	}
	return !complete
}

// FuzzParseHeadMatchesParse holds ParseHead (and Build after it) to the full lazy parse:
// the same acceptance and error for every body, the same request, and so the same bytes
// forwarded (the passthrough writes Body with the model and stream members spliced at
// the spans compared here), with and without a Scratch and a Stage reused across inputs,
// and with passes refusing models that start with x.
func FuzzParseHeadMatchesParse(f *testing.F) {
	addLazySeeds(f, "testdata/history-10k.json", "testdata/history-100k.json")
	for _, tt := range headCases {
		f.Add([]byte(tt.body))
	}
	scratch, stage := new(Scratch), new(Stage)
	notX := func(model string) bool { return len(model) == 0 || model[0] != 'x' }
	f.Fuzz(func(t *testing.T, body []byte) {
		checkHead(t, body, nil, nil, nil)
		checkHead(t, body, notX, scratch, stage)
	})
}

// BenchmarkParseHead is the passthrough's first pass over scenario d's histories, against
// the lazy parse into a scratch it replaces (BenchmarkParseRequest10KLazy/view+scratch);
// 100k-indented is the 100 KB history pretty-printed (json.Indent), a body whose
// whitespace between tokens the first pass's string index refuses (jsonx.StringIndex).
func BenchmarkParseHead(b *testing.B) {
	for _, c := range []struct {
		file   string
		indent bool
	}{{"testdata/history-10k.json", false}, {"testdata/history-100k.json", false}, {"testdata/history-100k.json", true}} {
		body, err := os.ReadFile(c.file)
		if err != nil {
			b.Fatal(err)
		}
		name := c.file[len("testdata/history-") : len(c.file)-len(".json")]
		if c.indent {
			var out bytes.Buffer
			if err := json.Indent(&out, body, "", "  "); err != nil {
				b.Fatal(err)
			}
			body, name = out.Bytes(), name+"-indented"
		}
		view := string(body)
		for _, head := range []bool{false, true} {
			name := name
			if head {
				name += "/head"
			} else {
				name += "/lazy"
			}
			b.Run(name, func(b *testing.B) {
				b.ReportAllocs()
				b.SetBytes(int64(len(body)))
				var sc Scratch
				var st Stage
				for b.Loop() {
					sc.Reset()
					st.Reset()
					var req *translate.Request
					var err error
					if head {
						req, _, err = ParseHead(view, &sc, &st, translate.DefaultMaxInflated, nil)
					} else {
						req, err = ParseRequestLazyStringWithin(view, &sc, &st, translate.DefaultMaxInflated)
					}
					if err != nil || req == nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

func TestGuessModel(t *testing.T) {
	for _, tt := range []struct{ body, want string }{
		{`{"messages":[],"model":"m","tools":[{"a":"b"}]}`, "m"},
		{`{"messages":[] , "model" : "m\u0031" }`, "m1"},
		{`{"model":"a","tools":[{"x":{"model":"b"}}]}`, "b"},
		{`{"model":7}`, ""},
		{`{"model" :"a","x":{"model":7}}`, ""},
		{`{"model"` + "\n:" + `"a","xmodel":"b"}`, "a"},
		{`{"model":"a","x":"model:"}`, "a"},
		{`{"messages":[]}`, ""},
		{`"model":`, ""},
		{`:`, ""},
		{``, ""},
	} {
		if got := guessModel(tt.body); got != tt.want {
			t.Errorf("guessModel(%s) = %q, want %q", tt.body, got, tt.want)
		}
	}
}

// BenchmarkGuessModel: the search from the end of scenario d's 100 KB history, whose
// model is followed by some 1 KB of tools.
func BenchmarkGuessModel(b *testing.B) {
	body, err := os.ReadFile("testdata/history-100k.json")
	if err != nil {
		b.Fatal(err)
	}
	s := string(body)
	for b.Loop() {
		if guessModel(s) == "" {
			b.Fatal("no model")
		}
	}
}

// guessModelByIndex is guessModel as a reader of it would write it, the test's oracle:
// strings.LastIndexByte for each colon from the end.
func guessModelByIndex(s string) string {
	const name = `"model"`
	for end := len(s); ; {
		i := strings.LastIndexByte(s[:end], ':')
		if i < 0 {
			return ""
		}
		j := i
		for j > 0 && s[j-1] <= ' ' {
			j--
		}
		if j >= len(name) && s[j-len(name):j] == name {
			sc := jsonx.NewScanner(s[i+1:])
			if sc.Peek() != '"' {
				return ""
			}
			m, _ := sc.Str()
			return m
		}
		end = j
	}
}

// TestGuessModelMatchesIndex holds guessModel to guessModelByIndex on every string of up
// to five pieces from pieces that make and break the member's name, its colon, its value
// and the word test's neighbours of a colon (';', whose borrow the test marks too), at
// every offset within a word (the padding).
func TestGuessModelMatchesIndex(t *testing.T) {
	pieces := []string{`"model"`, `:`, ` `, `"m"`, `;`, `l":`, `"`, `model`, `7`, `:;`}
	var build func(prefix string, n int)
	build = func(prefix string, n int) {
		for pad := 0; pad < 8; pad++ {
			s := strings.Repeat("a", pad) + prefix
			if got, want := guessModel(s), guessModelByIndex(s); got != want {
				t.Fatalf("guessModel(%q) = %q, want %q", s, got, want)
			}
		}
		if n == 0 {
			return
		}
		for _, p := range pieces {
			build(prefix+p, n-1)
		}
	}
	build("", 5)
}

// FuzzGuessModel holds guessModel to guessModelByIndex, seeded with the recorded bodies.
func FuzzGuessModel(f *testing.F) {
	for _, name := range []string{"bench-request.json", "history-10k.json"} {
		b, err := os.ReadFile("testdata/" + name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(b))
	}
	f.Add(`{"messages":[] , "model" : "m\u0031" }`)
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := guessModel(s), guessModelByIndex(s); got != want {
			t.Fatalf("guessModel(%q) = %q, want %q", s, got, want)
		}
	})
}

// partsBody is a request whose one user message has n text parts, each naming tag and its
// index: past the parser's 32 fixed entries, its parts spill.
func partsBody(tag string, n int) string {
	var b strings.Builder
	b.WriteString(`{"model":"m","messages":[{"role":"user","content":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"type":"text","text":"%s %d"}`, tag, i)
	}
	b.WriteString(`]}]}`)
	return b.String()
}

// TestStageSpillReused: one Stage and Scratch, reused across bodies of more messages and
// parts than the parser's fixed arrays hold, then fewer, then more again, parse each as a
// fresh parse does: a stash's spill, which keeps the last parse's entries, never hands
// one of them on (the parts' add writes over them; fails if it appends past them).
func TestStageSpillReused(t *testing.T) {
	var bodies []string
	for _, file := range []string{"testdata/history-100k.json", "testdata/history-10k.json"} {
		body, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		bodies = append(bodies, string(body))
	}
	bodies = append(bodies, partsBody("a", 70), partsBody("b", 40), bodies[1], partsBody("c", 33),
		bodies[0], partsBody("d", 3), partsBody("e", 100))
	var sc Scratch
	var st Stage
	for i, body := range bodies {
		want, werr := ParseRequestLazyStringWithin(body, nil, nil, 1<<20)
		if werr != nil {
			t.Fatalf("body %d: %v", i, werr)
		}
		sc.Reset()
		st.Reset()
		got, err := ParseRequestLazyStringWithin(body, &sc, &st, 1<<20)
		if err != nil {
			t.Fatalf("body %d: with the reused Stage: %v", i, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("body %d: with the reused Stage the request differs:\n%+v\nwant\n%+v", i, got, want)
		}
	}
}
