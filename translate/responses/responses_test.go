package responses

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agate-gateway/agate/translate"
	"github.com/agate-gateway/agate/translate/internal/goldentest"
	"github.com/agate-gateway/agate/translate/openaichat"

	"github.com/google/go-cmp/cmp"
	"github.com/tidwall/gjson"

	"github.com/agate-gateway/agate/internal/sse"
	"github.com/agate-gateway/agate/translate/internal/spectest"
)

func TestResponsesDecodeError(t *testing.T) {
	openAIBody := func(typ, code string) string {
		return `{"error":{"message":"m","type":"` + typ + `","param":null,"code":"` + code + `"}}`
	}
	long := strings.Repeat("x", 1000)
	tests := []struct {
		name   string
		status int
		body   string
		want   *translate.UpstreamError
	}{
		{"RateLimitRetryable", 429, openAIBody("requests", "rate_limit_exceeded"),
			&translate.UpstreamError{Status: 429, Type: "requests", Code: "rate_limit_exceeded", Message: "m", Retryable: true}},
		{"InsufficientQuotaNotRetryable", 429, openAIBody("insufficient_quota", "insufficient_quota"),
			&translate.UpstreamError{Status: 429, Type: "insufficient_quota", Code: "insufficient_quota", Message: "m"}},
		{"ServerError500", 500, openAIBody("server_error", ""),
			&translate.UpstreamError{Status: 500, Type: "server_error", Message: "m", Retryable: true}},
		{"Overloaded503", 503, openAIBody("", ""),
			&translate.UpstreamError{Status: 503, Type: "api_error", Message: "m", Retryable: true}},
		{"NotFound404", 404, openAIBody("invalid_request_error", "model_not_found"),
			&translate.UpstreamError{Status: 404, Type: "invalid_request_error", Code: "model_not_found", Message: "m"}},
		{"HTMLGateway502", 502, "<html>bad gateway</html>",
			&translate.UpstreamError{Status: 502, Type: "api_error", Message: "upstream returned HTTP 502: <html>bad gateway</html>", Retryable: true}},
		{"LongGarbageBounded", 500, long,
			&translate.UpstreamError{Status: 500, Type: "api_error", Message: "upstream returned HTTP 500: " + long[:256] + "...", Retryable: true}},
		{"EmptyBody", 503, "",
			&translate.UpstreamError{Status: 503, Type: "api_error", Message: "upstream returned HTTP 503: (empty body)", Retryable: true}},
		{"StringError", 400, `{"error":"bad thing"}`,
			&translate.UpstreamError{Status: 400, Type: "invalid_request_error", Message: "bad thing"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := New().DecodeError(tt.status, []byte(tt.body))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if got.RetryAfter != time.Duration(0) {
				t.Errorf("RetryAfter = %v; OpenAI bodies carry none (the proxy reads Retry-After)", got.RetryAfter)
			}
		})
	}
}

func TestResponsesDecodeResponse_Failed(t *testing.T) {
	body := `{"id":"resp_1","model":"gpt-x","status":"failed","error":{"code":"server_error","message":"boom"},"output":[]}`
	var a openaichat.Assembler
	err := New().DecodeResponse([]byte(body), a.Add)
	var ue *translate.UpstreamError
	if !errors.As(err, &ue) || ue.Message != "boom" || ue.Status != 502 || a.Err != ue {
		t.Fatalf("err = %v, assembler err = %v", err, a.Err)
	}
}

// responsesSchemaCheck returns a validator of request bodies against CreateResponse.
//
// The spec's InputItem is a oneOf in which a message with a content array matches both
// EasyInputMessage and InputMessage (neither excludes the other's shape), so no such body
// can pass as a whole. Such items are validated alone against EasyInputMessage, then the
// body is validated with their content replaced by a string.

// TestResponsesRequest_MatchesRecordings checks that for the OpenAI request equivalent to
// each recorded Responses request, Agate sends the same body, up to what Agate adds on
// purpose (store: false; include for reasoning models) and the output item ids/status a
// chat client cannot know.
func TestResponsesRequest_MatchesRecordings(t *testing.T) {
	tool := `{"type":"function","function":{"name":"secret_retrieval_tool","description":"A tool that requires a password to retrieve a secret.","parameters":{"properties":{"password":{"title":"Password","type":"string"}},"required":["password"],"additionalProperties":false,"type":"object"},"strict":false}}`
	turn1 := `{"role":"developer","content":"Use parallel tool calling."},{"role":"user","content":"Please retrieve the secrets associated with each of these passwords: mellon,radiance"}`
	tests := []struct {
		name, recorded, req string
		stream              bool
	}{
		{"text", "responses/json/text.mirascope.request.json",
			`{"model":"gpt-4o","messages":[{"role":"user","content":"What is 4200 + 42?"}]}`, false},
		{"max-output-tokens", "responses/stream/max-output-tokens-incomplete.mirascope.request.json",
			`{"model":"gpt-4o","stream":true,"max_completion_tokens":50,"messages":[{"role":"user","content":"List all U.S. states."}]}`, true},
		{"parallel-function-calls", "responses/json/parallel-function-calls.mirascope.request.json",
			`{"model":"gpt-4o","messages":[` + turn1 + `],"tools":[` + tool + `]}`, false},
		{"parallel-function-calls-followup", "responses/stream/parallel-function-calls-followup.mirascope.request.json",
			`{"model":"gpt-4o","stream":true,"messages":[` + turn1 + `,{"role":"assistant","content":null,"tool_calls":[{"id":"call_sKC7OABqf2A2PTLCm0CLeRWV","type":"function","function":{"name":"secret_retrieval_tool","arguments":"{\"password\":\"mellon\"}"}},{"id":"call_OdR3s3xop0vtgkDyWRMLafuH","type":"function","function":{"name":"secret_retrieval_tool","arguments":"{\"password\":\"radiance\"}"}}]},{"role":"tool","tool_call_id":"call_sKC7OABqf2A2PTLCm0CLeRWV","content":"Welcome to Moria!"},{"role":"tool","tool_call_id":"call_OdR3s3xop0vtgkDyWRMLafuH","content":"Life before Death"}],"tools":[` + tool + `]}`, true},
		{"reasoning-summary", "responses/stream/reasoning-summary.mirascope.request.json",
			`{"model":"gpt-5","stream":true,"reasoning_effort":"medium","messages":[{"role":"user","content":"How many primes below 400 contain 79 as a substring? Answer ONLY with the number, not sharing which primes they are."}]}`, true},
	}
	normalize := func(b []byte) any {
		var v map[string]any
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatal(err)
		}
		delete(v, "store")
		delete(v, "include")
		if in, ok := v["input"].([]any); ok {
			for _, it := range in {
				m := it.(map[string]any)
				if m["type"] == "function_call" {
					delete(m, "id")
					delete(m, "status")
				}
			}
		}
		return v
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := openaichat.ParseRequest([]byte(tt.req))
			if err != nil {
				t.Fatal(err)
			}
			got, err := New().AppendRequest(nil, req, &translate.Options{UpstreamModel: req.Model, Stream: tt.stream})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(normalize(goldentest.ReadFixture(t, tt.recorded)), normalize(got)); diff != "" {
				t.Errorf("(-recorded +agate):\n%s", diff)
			}
		})
	}
}

func TestResponsesRequest_Errors(t *testing.T) {
	tests := []struct {
		name, req, param string
	}{
		{"Stop", `{"stop":"x"}`, "stop"},
		{"NGreaterThanOne", `{"n":2}`, "n"},
		{"Logprobs", `{"logprobs":true}`, "logprobs"},
		{"TopLogprobs", `{"top_logprobs":3}`, "top_logprobs"},
		{"PresencePenalty", `{"presence_penalty":1}`, "presence_penalty"},
		{"FrequencyPenalty", `{"frequency_penalty":1}`, "frequency_penalty"},
		{"Seed", `{"seed":1}`, "seed"},
		{"ExtraField", `{"audio":{"voice":"alloy"}}`, "audio"},
		{"AudioPart", `{"messages":[{"role":"user","content":[{"type":"input_audio","input_audio":{"data":"AA","format":"wav"}}]}]}`, "messages[0].content[0].type"},
		{"InvalidToolArguments", `{"messages":[{"role":"user","content":"hi"},{"role":"assistant","tool_calls":[{"id":"c0","type":"function","function":{"name":"f","arguments":"{}"}},{"id":"c1","type":"function","function":{"name":"f","arguments":"{not json"}}]}]}`, "messages[1].tool_calls[1].function.arguments"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := tt.req[:len(tt.req)-1] + `,"model":"m"`
			if !strings.Contains(tt.req, `"messages"`) {
				body += `,"messages":[{"role":"user","content":"hi"}]`
			}
			body += "}"
			req, err := openaichat.ParseRequest([]byte(body))
			if err != nil {
				t.Fatal(err)
			}
			_, err = New().AppendRequest(nil, req, &translate.Options{UpstreamModel: "gpt-4o"})
			var pe *translate.ParamError
			if !errors.As(err, &pe) || pe.Param != tt.param || !errors.Is(err, translate.ErrBadRequest) {
				t.Fatalf("err = %v, want a ParamError for %s", err, tt.param)
			}
		})
	}
}

// TestResponsesRoundTrip_EncryptedReasoning: turn 1 streams reasoning (with encrypted
// content) and a function call; the assembled message goes back through a client that
// keeps only standard chat fields; turn 2's request restores the reasoning item, with its
// encrypted content and the function call's item id, before the function_call.
func TestResponsesRoundTrip_EncryptedReasoning(t *testing.T) {
	upstream := goldentest.ReframeChunks(goldentest.Transcript(t, "vercel-reasoning-encrypted-content-turn1", "upstream.chunks.txt"), true)

	var a openaichat.Assembler
	dec := New().NewStreamDecoder(&translate.Options{})
	emit := a.Add
	if err := feedSSE(upstream, dec, emit); err != nil {
		t.Fatal(err)
	}
	a.Finish()
	msg := a.Choices[0]
	if len(msg.ToolCalls) != 1 {
		t.Fatalf("tool calls = %+v", msg.ToolCalls)
	}
	// What a plain client sends back: standard fields only.
	type fn struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	}
	type call struct {
		ID       string `json:"id"`
		Type     string `json:"type"`
		Function fn     `json:"function"`
	}
	tc := msg.ToolCalls[0]
	history, _ := json.Marshal([]any{
		map[string]any{"role": "user", "content": "Compute ((12+7)*3)*10 with the calculator."},
		map[string]any{"role": "assistant", "content": nil, "tool_calls": []call{{tc.ID, "function", fn{tc.Name, tc.Arguments}}}},
		map[string]any{"role": "tool", "tool_call_id": tc.ID, "content": "19"},
	})
	body := `{"model":"codex","messages":` + string(history) + `,"tools":[{"type":"function","function":{"name":"calculator","parameters":{"type":"object"}}}]}`
	req, err := openaichat.ParseRequest([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	got, err := New().AppendRequest(nil, req, &translate.Options{UpstreamModel: "gpt-5.1-codex-max"})
	if err != nil {
		t.Fatal(err)
	}
	if err := spectest.ResponsesRequest(t)(got); err != nil {
		t.Errorf("turn 2 does not validate: %v", err)
	}
	// The recording's final reasoning item (output_item.done) is what must come back.
	var wantEnc, wantRS string
	for _, line := range strings.Split(string(goldentest.Transcript(t, "vercel-reasoning-encrypted-content-turn1", "upstream.chunks.txt")), "\n") {
		if gjson.Get(line, "type").Str == "response.output_item.done" && gjson.Get(line, "item.type").Str == "reasoning" {
			wantEnc, wantRS = gjson.Get(line, "item.encrypted_content").Str, gjson.Get(line, "item.id").Str
		}
	}
	in := gjson.GetBytes(got, "input").Array()
	var types []string
	for _, it := range in {
		types = append(types, it.Get("type").Str+"/"+it.Get("role").Str)
	}
	if diff := cmp.Diff([]string{"/user", "reasoning/", "function_call/", "function_call_output/"}, types); diff != "" {
		t.Fatalf("input items (-want +got):\n%s\n%s", diff, got)
	}
	r, fc, out := in[1], in[2], in[3]
	if r.Get("id").Str != wantRS || r.Get("encrypted_content").Str != wantEnc || wantEnc == "" {
		t.Errorf("reasoning item = %s", r.Raw[:min(len(r.Raw), 200)])
	}
	if !strings.HasPrefix(r.Get("summary.0.text").Str, "**Calculating step-by-step") {
		t.Errorf("summary lost: %s", r.Get("summary").Raw)
	}
	if fc.Get("call_id").Str != "call_AB6AaRZ1FYZB2RwS6A5vbdqn" || out.Get("call_id").Str != "call_AB6AaRZ1FYZB2RwS6A5vbdqn" {
		t.Errorf("call ids not plain: %s / %s", fc.Get("call_id").Str, out.Get("call_id").Str)
	}
	if fc.Get("id").Str != "fc_01830d662ab3856501693c32151234819091cfca267e98cc5f" {
		t.Errorf("function_call item id = %q", fc.Get("id").Str)
	}
	if got := gjson.GetBytes(got, "include").Raw; got != `["reasoning.encrypted_content"]` {
		t.Errorf("include = %s", got)
	}

	// The same through the non-streamed path: a JSON response with the same items.
	var b openaichat.Assembler
	jsonResp := `{"id":"resp_1","model":"gpt-5.1","status":"completed","output":[{"id":"rs_9","type":"reasoning","encrypted_content":"ENC","summary":[{"type":"summary_text","text":"why"}]},{"id":"fc_9","type":"function_call","call_id":"call_9","name":"calculator","arguments":"{}"}]}`
	if err := New().DecodeResponse([]byte(jsonResp), b.Add); err != nil {
		t.Fatal(err)
	}
	b.Finish()
	id, state := translate.SplitID(b.Choices[0].ToolCalls[0].ID)
	if id != "call_9" || string(state) != `{"id":"fc_9","reasoning":[{"id":"rs_9","summary":[{"text":"why"}],"encrypted_content":"ENC"}]}` {
		t.Errorf("json carry = %q %s", id, state)
	}
	if string(b.Choices[0].Reasoning) != "why" {
		t.Errorf("reasoning_content = %q", b.Choices[0].Reasoning)
	}
}

// TestResponsesRequest_CarriedReasoningWithoutEncryptedContent: an item with no encrypted
// content can only be resolved by a storing upstream, so it is sent only with store on.
func TestResponsesRequest_CarriedReasoningWithoutEncryptedContent(t *testing.T) {
	id := translate.CarryID("call_1", []byte(`{"id":"fc_1","reasoning":[{"id":"rs_1","summary":[]}]}`))
	body := `{"model":"m","messages":[{"role":"user","content":"hi"},{"role":"assistant","tool_calls":[{"id":"` + id + `","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"` + id + `","content":"ok"}]}`
	req, err := openaichat.ParseRequest([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	for _, store := range []bool{false, true} {
		got, err := New().AppendRequest(nil, req, &translate.Options{UpstreamModel: "gpt-4o", Store: store})
		if err != nil {
			t.Fatal(err)
		}
		has := strings.Contains(string(got), `"type":"reasoning"`)
		if has != store {
			t.Errorf("store=%v: reasoning item sent = %v\n%s", store, has, got)
		}
	}
}

func feedSSE(body []byte, dec translate.StreamDecoder, emit translate.Emit) error {
	var p sse.Parser
	if err := p.Feed(body, func(typ, data []byte) error { return dec.Event(typ, data, emit) }); err != nil {
		return err
	}
	return dec.Close(emit)
}

func FuzzResponsesRequest(f *testing.F) {
	for _, b := range goldentest.Seeds("request.json", false, 0) {
		f.Add(b)
	}
	f.Add([]byte(`{"model":"m","messages":[{"role":"assistant","tool_calls":[{"id":"c~1zAAAA","type":"function","function":{"name":"f","arguments":"[1,"}}]}]}`))
	f.Add([]byte(`{"model":"m","messages":[{"role":"assistant","tool_calls":[{"id":"` + translate.CarryID("c", []byte(`{"id":"fc","reasoning":[{"id":"rs","summary":[{"text":1}],"encrypted_content":2}]}`)) + `","type":"function","function":{"name":"f","arguments":"{}"}}]}]}`))
	p := New()
	f.Fuzz(func(t *testing.T, body []byte) {
		req, err := openaichat.ParseRequest(body)
		if err != nil {
			return
		}
		for _, drop := range []bool{false, true} {
			opts := &translate.Options{UpstreamModel: "gpt-5", DropUnsupported: drop}
			out, err := p.AppendRequest(nil, req, opts)
			if err == nil && !json.Valid(out) {
				t.Fatalf("invalid JSON out: %s", out)
			}
			goldentest.SameFromLiterals(t, p, body, opts, out, err) // a LiteralReader
		}
	})
}

// responsesBenchRequest is a ~4 KB chat request with tools and history.
func responsesBenchRequest() []byte {
	var b strings.Builder
	b.WriteString(`{"model":"m","stream":true,"temperature":0.3,"max_tokens":1024,"messages":[{"role":"system","content":"You are a careful assistant. Answer briefly and use tools when they help."}`)
	for i := 0; i < 6; i++ {
		b.WriteString(`,{"role":"user","content":"Please look up the weather in Paris and in Berlin for tomorrow, and tell me which is warmer. Also mention humidity."}`)
		b.WriteString(`,{"role":"assistant","content":"Let me check both cities.","tool_calls":[{"id":"call_a` + string(rune('0'+i)) + `","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\",\"day\":\"tomorrow\"}"}},{"id":"call_b` + string(rune('0'+i)) + `","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Berlin\",\"day\":\"tomorrow\"}"}}]}`)
		b.WriteString(`,{"role":"tool","tool_call_id":"call_a` + string(rune('0'+i)) + `","content":"{\"temp_c\":21,\"humidity\":0.55}"},{"role":"tool","tool_call_id":"call_b` + string(rune('0'+i)) + `","content":"{\"temp_c\":18,\"humidity\":0.61}"}`)
	}
	b.WriteString(`],"tools":[{"type":"function","function":{"name":"get_weather","description":"Get the weather forecast for a city and day.","parameters":{"type":"object","properties":{"city":{"type":"string","description":"City name"},"day":{"type":"string","enum":["today","tomorrow"]}},"required":["city","day"]}}},{"type":"function","function":{"name":"get_time","description":"Current time in a timezone.","parameters":{"type":"object","properties":{"tz":{"type":"string"}}}}}],"tool_choice":"auto"}`)
	return []byte(b.String())
}

func BenchmarkResponsesRequest(b *testing.B) {
	body := responsesBenchRequest()
	opts := &translate.Options{UpstreamModel: "gpt-4o", Stream: true}
	p := New()
	b.Run("AppendRequest", func(b *testing.B) {
		req, err := openaichat.ParseRequest(body)
		if err != nil {
			b.Fatal(err)
		}
		buf := make([]byte, 0, 8<<10)
		b.SetBytes(int64(len(body)))
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			if buf, err = p.AppendRequest(buf[:0], req, opts); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("ParseAndAppend", func(b *testing.B) {
		buf := make([]byte, 0, 8<<10)
		b.SetBytes(int64(len(body)))
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			req, err := openaichat.ParseRequest(body)
			if err != nil {
				b.Fatal(err)
			}
			if buf, err = p.AppendRequest(buf[:0], req, opts); err != nil {
				b.Fatal(err)
			}
		}
	})
}
