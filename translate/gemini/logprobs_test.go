package gemini

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agate-gateway/agate/translate"
	"github.com/agate-gateway/agate/translate/internal/goldentest"

	"github.com/google/go-cmp/cmp"
	"github.com/tidwall/gjson"
	"golang.org/x/tools/txtar"

	"github.com/agate-gateway/agate/internal/sse"
	"github.com/agate-gateway/agate/translate/internal/spectest"
)

// TestGeminiLogprobs_GoldenFollowsSpecs checks the constructed logprobs golden on both
// sides: its upstream bodies are GenerateContentResponses as Gemini's spec defines them,
// and what the gateway makes of them are OpenAI chunks and completions as OpenAI's spec
// defines them (every ChatCompletionTokenLogprob field it requires). Chunks are checked
// token by token: the stream schema marks nulls with OpenAPI 3.0's nullable, which a JSON
// Schema validator does not honour.
func TestGeminiLogprobs_GoldenFollowsSpecs(t *testing.T) {
	ar, err := txtar.ParseFile(filepath.Join("testdata", "logprobs.constructed.txtar"))
	if err != nil {
		t.Fatal(err)
	}
	gemini := spectest.Schema(t, "gemini/generate-content.json", "#/components/schemas/GenerateContentResponse")
	spectest.MustRejectInvalid(t, gemini, `{"candidates":[{"logprobsResult":{"chosenCandidates":[{"token":"a","logprob":-1}]}}]}`)
	token := spectest.Schema(t, "openai/chat-and-responses.json", "#/components/schemas/ChatCompletionTokenLogprob")
	spectest.MustRejectInvalid(t, token, `{"token":"a","logprob":-1,"top_logprobs":[]}`)
	spectest.MustRejectInvalid(t, token, `{"token":"a","logprob":-1,"bytes":[97],"top_logprobs":[{"token":"a","logprob":-1}]}`)
	completion := spectest.Schema(t, "openai/chat-and-responses.json", "#/components/schemas/CreateChatCompletionResponse")
	spectest.MustRejectInvalid(t, completion, `{"id":"x","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"a","refusal":null},"finish_reason":"stop","logprobs":{"content":[{"token":"a","logprob":-1,"top_logprobs":[]}],"refusal":null}}]}`)

	var p sse.Parser
	events := 0
	if err := p.Feed(goldentest.Section(t, ar, "upstream.sse"), func(_, data []byte) error {
		events++
		if err := spectest.Validate(gemini, data); err != nil {
			t.Errorf("upstream event %d is not a GenerateContentResponse: %v", events, err)
		}
		return nil
	}); err != nil || events == 0 {
		t.Fatalf("upstream.sse: %d events, err %v", events, err)
	}
	if err := spectest.Validate(gemini, goldentest.Section(t, ar, "upstream.json")); err != nil {
		t.Errorf("upstream.json is not a GenerateContentResponse: %v", err)
	}

	withLogprobs := 0
	if err := p.Feed(goldentest.Section(t, ar, "want.sse"), func(_, data []byte) error {
		if string(data) == "[DONE]" {
			return nil
		}
		lp := gjson.GetBytes(data, "choices.0.logprobs")
		if lp.Type == gjson.Null {
			return nil
		}
		withLogprobs++
		if !lp.Get("content").IsArray() || lp.Get("refusal").Type != gjson.Null || len(lp.Map()) != 2 {
			t.Errorf("logprobs is not {content, refusal: null}: %s", lp.Raw)
		}
		lp.Get("content").ForEach(func(_, tok gjson.Result) bool {
			if err := spectest.Validate(token, []byte(tok.Raw)); err != nil {
				t.Errorf("not a ChatCompletionTokenLogprob: %v\n%s", err, tok.Raw)
			}
			return true
		})
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if withLogprobs != 2 {
		t.Errorf("%d chunks carry logprobs, want 2", withLogprobs)
	}
	if err := spectest.Validate(completion, goldentest.Section(t, ar, "want.json")); err != nil {
		t.Errorf("want.json is not a CreateChatCompletionResponse: %v", err)
	}
}

// lpEvent is an event reduced to what logprobs alignment is about.
type lpEvent struct {
	Kind   translate.EventKind
	Choice int
	Text   string
	Tokens []string
	Tops   []int // len(Top) of each token
}

func geminiLogprobEvents(t *testing.T, upstream string) ([]lpEvent, error) {
	t.Helper()
	var out []lpEvent
	err := geminiFeed(newGeminiDecoder(), []byte(upstream), func(ev *translate.Event) error {
		if ev.Kind == translate.EventStart || ev.Kind == translate.EventUsage || ev.Kind == translate.EventFinish {
			return nil
		}
		e := lpEvent{Kind: ev.Kind, Choice: ev.Choice, Text: strings.Clone(ev.Text)}
		for _, lp := range ev.Logprobs {
			e.Tokens = append(e.Tokens, strings.Clone(lp.Token))
			e.Tops = append(e.Tops, len(lp.Top))
		}
		out = append(out, e)
		return nil
	})
	return out, err
}

// TestGeminiStream_LogprobsAlignment pins which text a candidate's logprobsResult goes
// with: the chunk's last answer text (never a thought), else a logprobs event of its own
// after the chunk's other events, per candidate.
func TestGeminiStream_LogprobsAlignment(t *testing.T) {
	const ab = `"logprobsResult":{"topCandidates":[{"candidates":[{"token":"a","logProbability":-0.1},{"token":"b","logProbability":-2}]},{"candidates":[{"token":"\"b\n","logProbability":-0.2}]}],"chosenCandidates":[{"token":"a","tokenId":1,"logProbability":-0.1},{"token":"\"b\n","tokenId":2,"logProbability":-0.2}]}`
	tests := []struct {
		name     string
		upstream string
		want     []lpEvent
	}{
		{
			name:     "ThoughtThenText",
			upstream: geminiSSE(`{"candidates":[{"content":{"role":"model","parts":[{"text":"hm","thought":true},{"text":"a\"b\n"}]},"finishReason":"STOP",` + ab + `}]}`),
			want: []lpEvent{
				{Kind: translate.EventReasoningDelta, Text: "hm"},
				{Kind: translate.EventTextDelta, Text: "a\"b\n", Tokens: []string{"a", "\"b\n"}, Tops: []int{2, 1}},
			},
		},
		{
			name:     "LastOfTwoTextParts",
			upstream: geminiSSE(`{"candidates":[{"content":{"role":"model","parts":[{"text":"a"},{"text":"\"b\n"},{"text":""}]},"finishReason":"STOP",` + ab + `}]}`),
			want: []lpEvent{
				{Kind: translate.EventTextDelta, Text: "a"},
				{Kind: translate.EventTextDelta, Text: "\"b\n", Tokens: []string{"a", "\"b\n"}, Tops: []int{2, 1}},
			},
		},
		{
			name:     "NoTextOwnEvent",
			upstream: geminiSSE(`{"candidates":[{"content":{"role":"model","parts":[{"functionCall":{"name":"f","args":{}}}]},"finishReason":"STOP",` + ab + `}]}`),
			want: []lpEvent{
				{Kind: translate.EventToolCallStart},
				{Kind: translate.EventToolCallArgsDelta, Text: "{}"},
				{Kind: translate.EventToolCallEnd},
				{Kind: translate.EventLogprobs, Tokens: []string{"a", "\"b\n"}, Tops: []int{2, 1}},
			},
		},
		{
			name: "PerCandidateAndChunk",
			upstream: geminiSSE(
				`{"candidates":[{"content":{"role":"model","parts":[{"text":"x"}]},"index":0},{"content":{"role":"model","parts":[{"text":"y"}]},"index":1,`+ab+`}]}`,
				`{"candidates":[{"content":{"role":"model","parts":[{"text":"z"}]},"index":0,"finishReason":"STOP","logprobsResult":{"chosenCandidates":[{"token":"z"}]}},{"content":{"role":"model","parts":[]},"index":1,"finishReason":"STOP"}]}`,
			),
			want: []lpEvent{
				{Kind: translate.EventTextDelta, Text: "x"},
				{Kind: translate.EventTextDelta, Choice: 1, Text: "y", Tokens: []string{"a", "\"b\n"}, Tops: []int{2, 1}},
				{Kind: translate.EventTextDelta, Text: "z", Tokens: []string{"z"}, Tops: []int{0}},
			},
		},
		{
			name:     "TopBeyondChosenIgnoredAndEmptyResult",
			upstream: geminiSSE(`{"candidates":[{"content":{"role":"model","parts":[{"text":"a"}]},"logprobsResult":{"chosenCandidates":[{"token":"a","logProbability":-1}],"topCandidates":[{"candidates":[]},{"candidates":[{"token":"q"}]}]}}]}`, `{"candidates":[{"content":{"role":"model","parts":[{"text":"b"}]},"finishReason":"STOP","logprobsResult":{}}]}`),
			want: []lpEvent{
				{Kind: translate.EventTextDelta, Text: "a", Tokens: []string{"a"}, Tops: []int{0}},
				{Kind: translate.EventTextDelta, Text: "b"},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := geminiLogprobEvents(t, tt.upstream)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
			goldentest.CheckChunks(t, goldentest.Stream(t, newGeminiDecoder, []byte(tt.upstream)))
		})
	}
}

// TestGeminiStream_LogprobsValues pins the decoded values: escapes, quoted and
// out-of-range floats, and a missing logProbability (the proto's 0).
func TestGeminiStream_LogprobsValues(t *testing.T) {
	up := geminiSSE(`{"candidates":[{"content":{"role":"model","parts":[{"text":"ab"}]},"finishReason":"STOP","logprobsResult":{"chosenCandidates":[{"token":"\u0061"},{"token":"b","logProbability":"-Infinity"},{"token":"c","logProbability":-1e999},{"token":"d","logProbability":-1.5e-7}]}}]}`)
	var got []translate.TokenLogprob
	err := geminiFeed(newGeminiDecoder(), []byte(up), func(ev *translate.Event) error {
		for _, lp := range ev.Logprobs {
			got = append(got, translate.TokenLogprob{Token: strings.Clone(lp.Token), Logprob: lp.Logprob})
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 4 || got[0].Token != "a" || got[0].Logprob != 0 || got[1].Logprob > -1e308 || got[2].Logprob > -1e308 || got[3].Logprob != -1.5e-7 {
		t.Errorf("decoded %+v", got)
	}
	out := goldentest.Stream(t, newGeminiDecoder, []byte(up))
	if !bytes.Contains(out, []byte(`{"token":"b","logprob":-9999,`)) {
		t.Errorf("-Infinity not written as -9999:\n%s", out)
	}
}

func TestGeminiStream_LogprobsMalformed(t *testing.T) {
	tests := []struct {
		name, result, wantErr string
	}{
		{"NotAnObject", `"x"`, "logprobsResult is not an object"},
		{"ChosenNotArray", `{"chosenCandidates":{}}`, "candidates are not arrays"},
		{"TopNotArray", `{"chosenCandidates":[],"topCandidates":1}`, "candidates are not arrays"},
		{"CandidateNotObject", `{"chosenCandidates":[1]}`, "logprobs candidate is not an object"},
		{"StepNotObject", `{"chosenCandidates":[{"token":"a"}],"topCandidates":[[]]}`, "topCandidates entry is not an object"},
		{"StepCandidatesNotArray", `{"chosenCandidates":[{"token":"a"}],"topCandidates":[{"candidates":"a"}]}`, "topCandidates.candidates is not an array"},
		{"LogprobNotNumber", `{"chosenCandidates":[{"token":"a","logProbability":true}]}`, "logProbability true is not a number"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			up := geminiSSE(`{"candidates":[{"content":{"role":"model","parts":[{"text":"a"}]},"finishReason":"STOP","logprobsResult":` + tt.result + `}]}`)
			_, err := geminiLogprobEvents(t, up)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("error %v, want one saying %q", err, tt.wantErr)
			}
		})
	}
}
