package gemini

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agate-gateway/agate/internal/jsonx"
	"github.com/agate-gateway/agate/translate"
	"github.com/agate-gateway/agate/translate/internal/goldentest"
	"github.com/agate-gateway/agate/translate/openaichat"

	"github.com/google/go-cmp/cmp"
	"github.com/tidwall/gjson"
	"golang.org/x/tools/txtar"

	"github.com/agate-gateway/agate/internal/sse"
)

// geminiSig is a thought signature as Gemini sends it (standard base64), from
// fixtures/gemini/json/parallel-function-calls.mirascope.json.
const geminiSig = "CtICAdHtim9BiyFrJTR8wDY7/ya4zvN0E7f/NCDBmJdBIPp4X8GlhEBD1aYLPwTQyE6WXqDOxwHUJaTe4J8tCr+CbuSknn8a4rxz5MqcVJ6GbrPcfpGtaDXmHuR1o10JO5QXhm0sfucL+GM0jXgAgKnu3n7hvCQhDWSmWFN3N3sxcrnjcwVnMKe3aaa48HvL2gmnSU/3Lx2ihqP3EKNilMeuE1NdXj9/fkTIui2f/bmU4q6KNgLivhExCW9Q2MaiYA5uqN+49CtQJANVVgIYEwuPCT58LocJQ26B+otv46X/nrlw17AWCniKIFwUi4Pe6l9eJVWy4MhXpPbDbtZPtBaMsdbaQVSREHc4k0LP9oDUPElDjkToKY/PJROhQzOnouDMGZg7bnhKpBhoK/m+YIoELMC/Jt9hvEvfxvFEtdWq6E7Eb+HU8+9X2HnhdA56ArTOxlc="

func geminiCarriedID(t testing.TB, id string, c geminiCarry) string {
	t.Helper()
	return translate.CarryID(id, appendGeminiCarry(nil, c))
}

func geminiRequest(t testing.TB, body string, opts *translate.Options) ([]byte, error) {
	t.Helper()
	req, err := openaichat.ParseRequest([]byte(body))
	if err != nil {
		t.Fatalf("ParseRequest: %v", err)
	}
	if opts == nil {
		opts = &translate.Options{}
	}
	if opts.UpstreamModel == "" {
		opts.UpstreamModel = req.Model
	}
	return New().AppendRequest(nil, req, opts)
}

// normalizeGeminiRequest decodes a Gemini body for comparison with a recorded one:
// thought signatures in either base64 alphabet compare equal, and the recorded bodies'
// empty generationConfig and systemInstruction role (both optional) are dropped.
func normalizeGeminiRequest(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	if gc, ok := v["generationConfig"].(map[string]any); ok && len(gc) == 0 {
		delete(v, "generationConfig")
	}
	if si, ok := v["systemInstruction"].(map[string]any); ok {
		delete(si, "role")
	}
	var walk func(any)
	walk = func(x any) {
		switch x := x.(type) {
		case map[string]any:
			for k, e := range x {
				if k == "thoughtSignature" {
					s := e.(string)
					if raw, err := base64.URLEncoding.DecodeString(strings.NewReplacer("+", "-", "/", "_").Replace(s)); err == nil {
						x[k] = base64.StdEncoding.EncodeToString(raw)
					}
					continue
				}
				walk(e)
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	walk(v)
	return v
}

// TestGeminiRequest_MatchesRecorded checks that the OpenAI equivalents of the recorded
// requests in testdata/fixtures/gemini translate to what the real API accepted. Tools
// differ only in the schema field: the recordings use the OpenAPI-subset `parameters`,
// Agate sends the client's JSON Schema as `parametersJsonSchema`.
func TestGeminiRequest_MatchesRecorded(t *testing.T) {
	stream := goldentest.ReadFixture(t, "gemini/stream/parallel-function-calls.mirascope.sse")
	var asm openaichat.Assembler
	if err := geminiFeed(newGeminiDecoder(), stream, asm.Add); err != nil {
		t.Fatal(err)
	}
	asm.Finish()
	msg := geminiAssistantJSON(t, asm.Message(0))
	tool := `{"type":"function","function":{"name":"secret_retrieval_tool","description":"A tool that requires a password to retrieve a secret.","parameters":{"properties":{"password":{"title":"Password","type":"string"}},"required":["password"],"type":"object"}}}`
	ids := []string{asm.Choices[0].ToolCalls[0].ID, asm.Choices[0].ToolCalls[1].ID}
	tests := []struct {
		name, fixture, body string
	}{
		{"text", "gemini/json/text.mirascope.request.json",
			`{"model":"gemini-2.5-flash","messages":[{"role":"user","content":"What is 4200 + 42?"}]}`},
		{"max-tokens", "gemini/json/max-tokens.mirascope.request.json",
			`{"model":"gemini-2.5-flash","messages":[{"role":"user","content":"List all U.S. states."}],"max_tokens":50}`},
		{"parallel-function-calls", "gemini/json/parallel-function-calls.mirascope.request.json",
			`{"model":"gemini-2.5-flash","messages":[{"role":"system","content":"Use parallel tool calling."},{"role":"user","content":"Please retrieve the secrets associated with each of these passwords: mellon,radiance"}],"tools":[` + tool + `]}`},
		{"parallel-function-calls-followup", "gemini/stream/parallel-function-calls-followup.mirascope.request.json",
			`{"model":"gemini-2.5-flash","messages":[{"role":"system","content":"Use parallel tool calling."},{"role":"user","content":"Please retrieve the secrets associated with each of these passwords: mellon,radiance"},` + msg +
				`,{"role":"tool","tool_call_id":"` + ids[0] + `","content":"Welcome to Moria!"},{"role":"tool","tool_call_id":"` + ids[1] + `","content":"Life before Death"}],"tools":[` + tool + `]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := geminiRequest(t, tt.body, nil)
			if err != nil {
				t.Fatal(err)
			}
			want := normalizeGeminiRequest(t, goldentest.ReadFixture(t, tt.fixture))
			// The recorded tool schema is the OpenAPI subset; compare ours after mapping
			// parametersJsonSchema back to its field name and types to upper case.
			gotV := normalizeGeminiRequest(t, got)
			if tools, ok := gotV["tools"].([]any); ok {
				for _, tl := range tools {
					for _, fd := range tl.(map[string]any)["functionDeclarations"].([]any) {
						fd := fd.(map[string]any)
						if s, ok := fd["parametersJsonSchema"]; ok {
							delete(fd, "parametersJsonSchema")
							fd["parameters"] = geminiUpperTypes(s)
						}
					}
				}
			}
			if diff := cmp.Diff(want, gotV); diff != "" {
				t.Errorf("differs from the recorded request (-recorded +ours):\n%s", diff)
			}
		})
	}
}

func geminiUpperTypes(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if s, ok := e.(string); ok && k == "type" {
				x[k] = strings.ToUpper(s)
				continue
			}
			x[k] = geminiUpperTypes(e)
		}
	case []any:
		for i := range x {
			x[i] = geminiUpperTypes(x[i])
		}
	}
	return v
}

// geminiFeed decodes a whole SSE body with dec into emit.
func geminiFeed(dec translate.StreamDecoder, body []byte, emit translate.Emit) error {
	var p sse.Parser
	if err := p.Feed(body, func(typ, data []byte) error { return dec.Event(typ, data, emit) }); err != nil {
		return err
	}
	return dec.Close(emit)
}

// geminiAssistantJSON renders an assembled message as a plain OpenAI client sends it back:
// only role, content and tool_calls with id, type and function name and arguments.
func geminiAssistantJSON(t testing.TB, m translate.Message) string {
	t.Helper()
	type fn struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	}
	type call struct {
		ID       string `json:"id"`
		Type     string `json:"type"`
		Function fn     `json:"function"`
	}
	out := struct {
		Role      string  `json:"role"`
		Content   *string `json:"content"`
		ToolCalls []call  `json:"tool_calls,omitempty"`
	}{Role: "assistant"}
	if len(m.Content) > 0 {
		s := m.Text()
		out.Content = &s
	}
	for _, tc := range m.ToolCalls {
		out.ToolCalls = append(out.ToolCalls, call{ID: tc.ID, Type: "function", Function: fn{tc.Name, tc.Arguments}})
	}
	b, err := json.Marshal(out)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestGeminiRoundTrip_ThoughtSignatures proves the signatures survive a client that keeps
// only standard fields: turn 1 is decoded and assembled, sent back as plain OpenAI JSON,
// and turn 2's Gemini body carries the original signature on the first functionCall.
func TestGeminiRoundTrip_ThoughtSignatures(t *testing.T) {
	tests := []struct {
		name, model string
		turn1       func(t *testing.T) []byte // the SSE body of turn 1
		wantSig     string
	}{
		{"gemini-2.5-stream", "gemini-2.5-flash", func(t *testing.T) []byte {
			return goldentest.ReadFixture(t, "gemini/stream/parallel-function-calls.mirascope.sse")
		}, "CikB0e2Kbw5tJ9dwYB9m1I9W28H1Pvbhg7iFnlQJMZT9ndxhy/OJBT3V9QptAdHtim+b6IrcZhtF6O6xQkkPMDhjrvwL3icXkpwLLWkm7JJ3R234Bd2U3pZ5l5u4roaEWO893S7XXaCgzKHLjxhFjN2sHgLLE/Hsi8UryVlawsmJhHEry727TP6p3fXGfoHF4P3+NwX0aRVDaQrOAQHR7YpvcZTnUyY/7cZcudNT4WukK1q1cnMx8pjpKbBWrByVhsOkQ9acocfYVirn1/iCK2QINNmt6lwFfDqQOr4KVY1cj1YwDRUeRN6QawgKKk0+IfpgCintbyvglLQVvA0K+FrW8l7OEqDU/ROKkwMm4g4uEHsoA2BgR0CAHd9Tnx1SsmdXOdPvXOM1FdrZGq1JQpE8r7fSBCEbhN2wHHHjAHR11O2iex12if4qjFmaxk0WD6e32VVE/ocsvy+BTeSxsfFo6v4VRanbbnKg"},
		{"gemini-3-json-array", "gemini-3-flash-preview", func(t *testing.T) []byte {
			return geminiJSONArrayToSSE(t, goldentest.ReadFixture(t, "gemini/stream-json-array/function-call-thought-signatures-gemini3.llm-gemini.json"))
		}, "Et0BCtoBAXLI2nwMB4momyXTj+K3OPELPDi5Mq6bA5ZHuiKVF9m94gyxd+zdlC+s73nWxHx1ImnA9wPRG1sKMAvENS5i0Bef0VxMS31QE4PbbJw81tSto0OCC+AJdHF0i7x3uHqBuj91gBPwmy3rhAQM+8kxmaF4FeJ0rvICgjIIjG7rBgCE8vOD9Glt/sy3WPKo//jOukERM0rVGAPpMogXNtQbJWUQ8469alaZN67hbYJNaL5XSNcsbsu4ub04B2aFPc6NJld2EWK/enYFPnarMNwobDsSstlzuMygTHQ="},
		{"gemini-3-vercel-stream", "gemini-3-pro-preview", func(t *testing.T) []byte {
			return goldentest.ReframeChunks(goldentest.ReadFixture(t, "gemini/vercel-chunks/google-tool-call-gemini3.chunks.txt"), false)
		}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			up := tt.turn1(t)
			var asm openaichat.Assembler
			if err := geminiFeed(newGeminiDecoder(), up, asm.Add); err != nil {
				t.Fatal(err)
			}
			asm.Finish()
			if asm.Choices[0].FinishReason != translate.FinishToolCalls {
				t.Fatalf("turn 1 finish %q", asm.Choices[0].FinishReason)
			}
			wantSig := tt.wantSig
			if wantSig == "" {
				// Take it from the recording itself.
				wantSig = gjson.GetBytes(bytes.TrimPrefix(bytes.SplitN(up, []byte("\r\n"), 2)[0], []byte("data: ")), "candidates.0.content.parts.0.thoughtSignature").Str
			}
			msgs := `[{"role":"user","content":"go"},` + geminiAssistantJSON(t, asm.Message(0))
			for _, tc := range asm.Choices[0].ToolCalls {
				msgs += `,{"role":"tool","tool_call_id":` + string(jsonx.AppendString(nil, tc.ID)) + `,"content":"ok"}`
			}
			msgs += "]"
			body, err := geminiRequest(t, `{"model":"`+tt.model+`","messages":`+msgs+`}`, nil)
			if err != nil {
				t.Fatal(err)
			}
			model := gjson.GetBytes(body, "contents.1")
			if model.Get("role").Str != "model" {
				t.Fatalf("contents[1] is not the model turn: %s", body)
			}
			if got := model.Get("parts.0.thoughtSignature").Str; got != wantSig {
				t.Errorf("first functionCall signature = %.40q..., want %.40q...", got, wantSig)
			}
			for i, tc := range asm.Choices[0].ToolCalls {
				fc := model.Get("parts." + string(jsonx.AppendInt(nil, i)) + ".functionCall")
				if fc.Get("name").Str != tc.Name || gjson.Get(tc.Arguments, "@ugly").Raw != fc.Get("args.@ugly").Raw {
					t.Errorf("call %d: %s, want name %s args %s", i, fc.Raw, tc.Name, tc.Arguments)
				}
				if i > 0 && model.Get("parts."+string(jsonx.AppendInt(nil, i))+".thoughtSignature").Exists() {
					t.Errorf("call %d got a signature it did not have", i)
				}
				fr := gjson.GetBytes(body, "contents.2.parts."+string(jsonx.AppendInt(nil, i))+".functionResponse")
				if fr.Get("name").Str != tc.Name {
					t.Errorf("functionResponse %d name %q, want %q", i, fr.Get("name").Str, tc.Name)
				}
			}
		})
	}
}

func TestGeminiRequest_Errors(t *testing.T) {
	tests := []struct {
		name      string
		body      string
		drop      bool
		wantParam string
		dropped   []string
	}{
		{"ExtraField", `{"model":"gemini-2.5-flash","messages":[{"role":"user","content":"hi"}],"modalities":["text"]}`, false, "modalities", nil},
		{"ExtraFieldDropped", `{"model":"gemini-2.5-flash","messages":[{"role":"user","content":"hi"}],"modalities":["text"],"service_tier":"auto"}`, true, "", []string{"modalities", "service_tier"}},
		{"User", `{"model":"gemini-2.5-flash","messages":[{"role":"user","content":"hi"}],"user":"u1"}`, false, "user", nil},
		{"Metadata", `{"model":"gemini-2.5-flash","messages":[{"role":"user","content":"hi"}],"metadata":{"a":"b"}}`, false, "metadata", nil},
		{"InvalidArguments", `{"model":"gemini-2.5-flash","messages":[{"role":"user","content":"hi"},{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}},{"id":"c2","type":"function","function":{"name":"f","arguments":"{\"a\":"}}]}]}`, false, "messages[1].tool_calls[1].function.arguments", nil},
		{"ArgumentsNotObject", `{"model":"gemini-2.5-flash","messages":[{"role":"user","content":"hi"},{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"[1]"}}]}]}`, false, "messages[1].tool_calls[0].function.arguments", nil},
		{"UnknownToolCallID", `{"model":"gemini-2.5-flash","messages":[{"role":"user","content":"hi"},{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c1","content":"x"},{"role":"tool","tool_call_id":"c9","content":"y"}]}`, false, "messages[3].tool_call_id", nil},
		{"ToolResultBeforeCall", `{"model":"gemini-2.5-flash","messages":[{"role":"tool","tool_call_id":"c1","content":"x"},{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]}]}`, false, "messages[0].tool_call_id", nil},
		{"OpenAIFileID", `{"model":"gemini-2.5-flash","messages":[{"role":"user","content":[{"type":"file","file":{"file_id":"file-abc"}}]}]}`, false, "messages[0].content[0].file.file_id", nil},
		{"UnknownAudioFormat", `{"model":"gemini-2.5-flash","messages":[{"role":"user","content":[{"type":"input_audio","input_audio":{"data":"AA==","format":"midi"}}]}]}`, false, "messages[0].content[0].input_audio.format", nil},
		{"ImageURLScheme", `{"model":"gemini-2.5-flash","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"ftp://x/y.png"}}]}]}`, false, "messages[0].content[0].image_url.url", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var dropped []string
			opts := &translate.Options{DropUnsupported: tt.drop, Dropped: func(p string) { dropped = append(dropped, p) }}
			body, err := geminiRequest(t, tt.body, opts)
			if tt.wantParam == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				if !json.Valid(body) {
					t.Fatalf("not JSON: %s", body)
				}
				if diff := cmp.Diff(tt.dropped, dropped); diff != "" {
					t.Errorf("dropped (-want +got):\n%s", diff)
				}
				return
			}
			var pe *translate.ParamError
			if !errors.As(err, &pe) {
				t.Fatalf("err = %v, want a *ParamError", err)
			}
			if pe.Param != tt.wantParam {
				t.Errorf("param = %q, want %q (%v)", pe.Param, tt.wantParam, pe)
			}
			if !errors.Is(err, translate.ErrBadRequest) {
				t.Errorf("error does not match ErrBadRequest")
			}
		})
	}
}

func TestGeminiPathAndHeaders(t *testing.T) {
	p := New()
	if got := p.Path("gemini-2.5-flash", false); got != "/v1beta/models/gemini-2.5-flash:generateContent" {
		t.Errorf("path = %s", got)
	}
	if got := p.Path("gemini-2.5-flash", true); got != "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse" {
		t.Errorf("stream path = %s", got)
	}
	want := []translate.Header{{Name: "x-goog-api-key", Value: "k"}}
	if diff := cmp.Diff(want, p.Headers("k")); diff != "" {
		t.Errorf("headers (-want +got):\n%s", diff)
	}
}

func TestGeminiCarry(t *testing.T) {
	tests := []struct {
		name string
		c    geminiCarry
	}{
		{"Base64Signature", geminiCarry{callSig: geminiSig}},
		{"RawSignature", geminiCarry{callSig: "skip_thought_signature_validator"}},
		{"UpstreamIDAndTextSig", geminiCarry{upstreamID: true, callSig: "c2ln", textSig: "not base64!"}},
		{"TextSigOnly", geminiCarry{textSig: "dGV4dA=="}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id := translate.CarryID("call_x", appendGeminiCarry(nil, tt.c))
			plain, st := translate.SplitID(id)
			if plain != "call_x" {
				t.Errorf("plain id %q", plain)
			}
			if diff := cmp.Diff(tt.c, carryOfView(viewGeminiCarry(st)), cmp.AllowUnexported(geminiCarry{})); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
	if got := carryOfView(viewGeminiCarry([]byte{1, 200})); got != (geminiCarry{}) {
		t.Errorf("garbage decoded to %+v", got)
	}
}

// carryOfView turns a carry view back into the geminiCarry appendGeminiCarry encoded.
func carryOfView(v geminiCarryView) geminiCarry {
	sig := func(b []byte, b64 bool) string {
		if b64 {
			return base64.StdEncoding.EncodeToString(b)
		}
		return string(b)
	}
	return geminiCarry{upstreamID: v.upstreamID, callSig: sig(v.call, v.callB64), textSig: sig(v.text, v.textB64)}
}

func FuzzGeminiRequest(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "request-*.txtar"))
	for _, path := range files {
		ar, err := txtar.ParseFile(path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(goldentest.Section(f, ar, "request.json"))
	}
	f.Add([]byte(`{"model":"gemini-3-pro","messages":[{"role":"tool","tool_call_id":"x~1rAAA","content":"y"}]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		req, err := openaichat.ParseRequest(body)
		if err != nil {
			return
		}
		for _, drop := range []bool{false, true} {
			opts := &translate.Options{UpstreamModel: req.Model, DropUnsupported: drop}
			out, err := New().AppendRequest(nil, req, opts)
			if err == nil && !json.Valid(out) {
				t.Fatalf("invalid JSON body for %s:\n%s", body, out)
			}
			goldentest.SameFromLiterals(t, New(), body, opts, out, err) // a LiteralReader
		}
	})
}

// BenchmarkGeminiRequest translates a ~4 KB OpenAI request with tools and a tool-calling
// history into a reused buffer; the /parse variant includes ParseRequest.
func BenchmarkGeminiRequest(b *testing.B) {
	body := []byte(geminiBenchRequest(b))
	req, err := openaichat.ParseRequest(body)
	if err != nil {
		b.Fatal(err)
	}
	opts := &translate.Options{UpstreamModel: "gemini-2.5-flash"}
	p := New()
	buf := make([]byte, 0, 8192)
	b.Run("translate", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			if buf, err = p.AppendRequest(buf[:0], req, opts); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("parse+translate", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			r, err := openaichat.ParseRequest(body)
			if err != nil {
				b.Fatal(err)
			}
			if buf, err = p.AppendRequest(buf[:0], r, opts); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func geminiBenchRequest(tb testing.TB) string {
	tb.Helper()
	sig := geminiCarriedID(tb, "call_r_0", geminiCarry{callSig: geminiSig[:120]})
	var sb strings.Builder
	sb.WriteString(`{"model":"fast","stream":true,"stream_options":{"include_usage":true},"temperature":0.3,"max_completion_tokens":1024,"messages":[`)
	sb.WriteString(`{"role":"system","content":"You are a careful assistant. Use the tools when they help, answer briefly, and cite the tool results you relied on."},`)
	for i := 0; i < 3; i++ {
		sb.WriteString(`{"role":"user","content":"What is the weather in Paris and in London today, and should I take an umbrella for a walk along the river this afternoon?"},`)
		sb.WriteString(`{"role":"assistant","content":"Let me look both up.","tool_calls":[{"id":"` + sig + `","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\",\"unit\":\"celsius\"}"}},{"id":"call_r_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"London\",\"unit\":\"celsius\"}"}}]},`)
		sb.WriteString(`{"role":"tool","tool_call_id":"` + sig + `","content":"{\"temp\":18,\"sky\":\"cloudy\",\"rain_probability\":0.4}"},`)
		sb.WriteString(`{"role":"tool","tool_call_id":"call_r_1","content":"{\"temp\":15,\"sky\":\"rain\",\"rain_probability\":0.9}"},`)
		sb.WriteString(`{"role":"assistant","content":"Paris is 18°C and cloudy with a 40% chance of rain; London is 15°C with rain likely. Take an umbrella in London."},`)
	}
	sb.WriteString(`{"role":"user","content":"And tomorrow?"}],"tools":[`)
	sb.WriteString(`{"type":"function","function":{"name":"get_weather","description":"Current weather for a city.","parameters":{"type":"object","properties":{"city":{"type":"string","description":"City name"},"unit":{"type":"string","enum":["celsius","fahrenheit"]}},"required":["city"]}}},`)
	sb.WriteString(`{"type":"function","function":{"name":"get_forecast","description":"Forecast for the next days.","parameters":{"type":"object","properties":{"city":{"type":"string"},"days":{"type":"integer","minimum":1,"maximum":7}},"required":["city","days"]}}}]}`)
	return sb.String()
}

// TestGeminiSignatureBlocks: the thought signatures a call id carries are also emitted as
// a reasoning block (Dialect gemini, the call's plain id) before the call, and a signature
// no call took as one of the turn; a request whose assistant message has those blocks and
// the plain ids (a Responses client's reasoning items) is the request the carried ids
// make, and another dialect's blocks are ignored.
func TestGeminiSignatureBlocks(t *testing.T) {
	tests := []struct {
		name   string
		chunks []string
	}{
		{"gemini's own call id, text signature before it", []string{
			`{"candidates":[{"content":{"role":"model","parts":[{"text":"Looking.","thoughtSignature":"dGV4dHNpZw=="}]}}],"responseId":"t1","modelVersion":"gemini-3-pro-preview"}`,
			`{"candidates":[{"content":{"role":"model","parts":[{"functionCall":{"name":"f","args":{"a":1},"id":"fc_1"},"thoughtSignature":"Y2FsbHNpZw=="}]},"finishReason":"STOP"}]}`}},
		{"minted ids, parallel calls", []string{
			`{"candidates":[{"content":{"role":"model","parts":[{"functionCall":{"name":"f","args":{"a":1}},"thoughtSignature":"Y2FsbHNpZw=="},{"functionCall":{"name":"g","args":{}}}]},"finishReason":"STOP"}],"responseId":"t2"}`}},
		{"text-only turn", []string{
			`{"candidates":[{"content":{"role":"model","parts":[{"text":"Three."},{"text":"","thoughtSignature":"dGV4dHNpZw=="}]},"finishReason":"STOP"}],"responseId":"t3"}`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var asm openaichat.Assembler
			var blocks []translate.ThinkingBlock
			var starts []string
			emit := func(ev *translate.Event) error {
				switch ev.Kind {
				case translate.EventReasoningBlock:
					b := *ev.Block
					b.CallID, b.Data = strings.Clone(b.CallID), strings.Clone(b.Data)
					blocks = append(blocks, b)
				case translate.EventToolCallStart:
					starts = append(starts, strings.Clone(ev.CallID))
				}
				return asm.Add(ev)
			}
			if err := geminiFeed(newGeminiDecoder(), []byte(geminiSSE(tt.chunks...)), emit); err != nil {
				t.Fatal(err)
			}
			asm.Finish()
			carried := asm.Message(0)
			plain := carried
			plain.ToolCalls = nil
			wantBlocks := 0
			for _, id := range starts {
				pid, state := translate.SplitID(id)
				plain.ToolCalls = append(plain.ToolCalls, translate.ToolCall{ID: pid, Name: carried.ToolCalls[len(plain.ToolCalls)].Name,
					Arguments: carried.ToolCalls[len(plain.ToolCalls)].Arguments})
				if state != nil {
					wantBlocks++
				}
			}
			if len(starts) == 0 {
				wantBlocks = 1 // the turn's own signature
			}
			if len(blocks) != wantBlocks {
				t.Fatalf("%d blocks, want %d: %+v", len(blocks), wantBlocks, blocks)
			}
			for _, b := range blocks {
				if b.Dialect != "gemini" || b.Type != geminiSignatureBlock {
					t.Errorf("block %+v is not a gemini signature block", b)
				}
			}
			plain.ThinkingBlocks = blocks
			foreign := plain
			foreign.ThinkingBlocks = []translate.ThinkingBlock{{Dialect: "anthropic", Type: "thinking", Thinking: "x", Signature: "s"}}
			bare := plain
			bare.ThinkingBlocks = nil
			body := func(m translate.Message) string {
				req := &translate.Request{Model: "m", Messages: []translate.Message{{Role: translate.RoleUser, Content: []translate.Part{{Type: translate.PartText, Text: "go"}}}, m}}
				for _, tc := range m.ToolCalls {
					req.Messages = append(req.Messages, translate.Message{Role: translate.RoleTool, ToolCallID: tc.ID, Content: []translate.Part{{Type: translate.PartText, Text: "1"}}})
				}
				b, err := New().AppendRequest(nil, req, &translate.Options{UpstreamModel: "gemini-2.5-flash"})
				if err != nil {
					t.Fatal(err)
				}
				return string(b)
			}
			want := body(carried)
			if len(starts) == 0 {
				// A chat client has no place for a text-only turn's signature; the blocks do.
				want = strings.Replace(body(bare), `{"text":"Three."}`, `{"text":"Three.","thoughtSignature":"dGV4dHNpZw=="}`, 1)
			}
			if diff := cmp.Diff(want, body(plain)); diff != "" {
				t.Errorf("request from blocks differs from the one from carried ids (-carried +blocks):\n%s", diff)
			}
			if got := body(foreign); strings.Contains(got, "thoughtSignature") || got != body(bare) {
				t.Errorf("another dialect's block changed the request:\n%s", got)
			}
		})
	}
}
