package proxy_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/tidwall/gjson"
)

// Continuation on Bedrock's Converse (every Bedrock model but Claude: Mistral, Meta,
// Amazon Nova...), whose default is restart (config.ContinuationDialect). The fake is
// choppy's answer behind Bedrock's ConverseStream door (cloudChoppy, cloud "converse"):
// POST /model/{modelId}/converse-stream, the SigV4 signature recomputed with the AWS
// SDK's signer, the body checked to be Converse's, and the answer in
// application/vnd.amazon.eventstream frames encoded by the SDK's eventstream Encoder,
// each frame's headers and JSON as Bedrock sends them. The frames are those of the
// recorded ConverseStream answers in translate/converse/testdata (the
// stream-text-nova.pydantic-ai.txtar recording through boto3: headers :event-type,
// :content-type application/json, :message-type event; a text answer is messageStart
// {"p","role"}, contentBlockDelta {"contentBlockIndex","delta":{"text"},"p"} per token,
// contentBlockStop {"contentBlockIndex","p"}, messageStop {"p","stopReason"} and metadata
// {"metrics":{"latencyMs"},"p","usage":{"inputTokens","outputTokens","serverToolUsage",
// "totalTokens"}}; a text block has no contentBlockStart, which only a toolUse block
// gets, as stream-tool-use-nova.pydantic-ai.txtar shows; "p" is Bedrock's padding). A
// mid-stream error is the recorded modelStreamErrorException frame (bedrockStreamError,
// vercel/ai's model-stream-error-exception fixture, the same as
// stream-exception-model-stream-error.vercel.txtar), which AWS's ResponseStream
// reference says to retry.

// converseFrames returns the maker of ConverseStream frames from choppy's Anthropic
// events, one answer's (see the file's comment): message_start, content_block_delta,
// content_block_stop, message_delta and message_stop become messageStart,
// contentBlockDelta, contentBlockStop, messageStop and metadata (its usage counted by
// message_delta); content_block_start (of a text block) sends nothing; an event whose JSON
// is cut short (choppy's malformed) becomes a contentBlockDelta whose JSON is cut the
// same way.
func converseFrames() func(typ, data string) (string, string, bool) {
	tokens := 0
	return func(typ, data string) (string, string, bool) {
		if !gjson.Valid(data) {
			return "contentBlockDelta", `{"contentBlockIndex":0,"delta":{"text":"unseen-wor`, true
		}
		switch typ {
		case "message_start":
			return "messageStart", `{"p":"abcdefghijklmnopqr","role":"assistant"}`, true
		case "content_block_delta":
			q, _ := json.Marshal(gjson.Get(data, "delta.text").Str)
			return "contentBlockDelta", `{"contentBlockIndex":0,"delta":{"text":` + string(q) + `},"p":"abcdefghijklmnopqrstuvwxyzABCDEFGHIJ"}`, true
		case "content_block_stop":
			return "contentBlockStop", `{"contentBlockIndex":0,"p":"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOP"}`, true
		case "message_delta":
			tokens = int(gjson.Get(data, "usage.output_tokens").Int())
			return "messageStop", `{"p":"abcdefghijklmno","stopReason":"end_turn"}`, true
		case "message_stop":
			return "metadata", fmt.Sprintf(`{"metrics":{"latencyMs":522},"p":"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVW","usage":{"inputTokens":10,"outputTokens":%d,"serverToolUsage":{},"totalTokens":%d}}`, tokens, 10+tokens), true
		}
		return "", "", false
	}
}

// notConverseBody says why body is not a Converse request as Bedrock takes it ("" when
// it is): messages of content blocks, inferenceConfig for the limits, and none of the
// Messages API's or OpenAI's members (the model is in the path).
func notConverseBody(body []byte) string {
	switch {
	case !gjson.GetBytes(body, "messages.0.content.0.text").Exists():
		return "no messages[].content[].text"
	case gjson.GetBytes(body, "anthropic_version").Exists(), gjson.GetBytes(body, "model").Exists(),
		gjson.GetBytes(body, "stream").Exists(), gjson.GetBytes(body, "max_tokens").Exists():
		return "a member Converse does not have"
	}
	return ""
}

// converseAnswer is a Converse (non-streamed) answer of text, the shape of the recorded
// testdata/bedrock/converse-text.json with its text and counts replaced.
func converseAnswer(text string, tokens int) string {
	q, _ := json.Marshal(text)
	return fmt.Sprintf(`{"metrics":{"latencyMs":1864},"output":{"message":{"content":[{"text":%s}],"role":"assistant"}},"stopReason":"end_turn","usage":{"cacheReadInputTokenCount":0,"cacheReadInputTokens":0,"cacheWriteInputTokenCount":0,"cacheWriteInputTokens":0,"inputTokens":10,"outputTokens":%d,"serverToolUsage":{},"totalTokens":%d}}`, q, tokens, 10+tokens)
}

const (
	converseModel = "mistral.mistral-large-2407-v1:0"
	conversePath  = "/model/mistral.mistral-large-2407-v1%3A0/converse-stream"
)

// TestContinuation_Converse: a ConverseStream answer of a Mistral model that breaks
// after part of it reached the client (the connection cut, the recorded
// modelStreamErrorException frame, a stall past stream_idle) is restarted, the default
// on Converse: the gateway sends the original request again and relays what follows the
// text the client has, so the client gets the whole answer once, through openai-go
// (chat, translated) and anthropic-sdk-go (Messages, translated). A restart whose new
// answer does not start with that text ends the stream with the in-band
// continuation_diverged error after the text already sent: never a truncated success. A
// frame whose JSON is cut short is skipped and counted, as on the other wires. The other
// exception frames ConverseStream may send mid-stream (AWS's ConverseStreamOutput):
// throttlingException, internalServerException and serviceUnavailableException are
// retryable and continued like modelStreamErrorException; a validationException is not
// retried and ends the stream with Bedrock's message in-band.
func TestContinuation_Converse(t *testing.T) {
	throttled := [2]string{"throttlingException", `{"message":"Too many requests, please wait before trying again."}`}
	internal := [2]string{"internalServerException", `{"message":"The system encountered an unexpected error during processing. Try your request again."}`}
	unavailable := [2]string{"serviceUnavailableException", `{"message":"Bedrock is unable to process your request."}`}
	invalid := [2]string{"validationException", `{"message":"The model returned the following errors: Input is too long for requested model."}`}
	for _, tt := range []struct {
		name      string
		api       string
		plan      []fault
		requests  int
		diverged  bool // the in-band error, not the whole answer
		outcome   string
		exception [2]string // the error event's exception frame; zero: modelStreamErrorException
		wantError string    // the in-band error (with diverged), when not continuation_diverged
	}{
		{"chat cut", "chat", []fault{{3, "cut"}}, 2, false, "continued", [2]string{}, ""},
		{"chat exception frame", "chat", []fault{{4, "error"}}, 2, false, "continued", [2]string{}, ""},
		{"chat stall", "chat", []fault{{4, "stall"}}, 2, false, "continued", [2]string{}, ""},
		{"chat restart diverges", "chat", []fault{{3, "cut"}, {0, "diverge"}}, 2, true, "diverged", [2]string{}, ""},
		{"messages cut", "messages", []fault{{3, "cut"}}, 2, false, "continued", [2]string{}, ""},
		{"messages exception frame", "messages", []fault{{4, "error"}}, 2, false, "continued", [2]string{}, ""},
		{"messages stall", "messages", []fault{{4, "stall"}}, 2, false, "continued", [2]string{}, ""},
		{"messages restart diverges", "messages", []fault{{3, "error"}, {0, "diverge"}}, 2, true, "diverged", [2]string{}, ""},
		{"chat malformed frame skipped", "chat", []fault{{3, "malformed"}}, 1, false, "", [2]string{}, ""},
		{"chat throttlingException frame", "chat", []fault{{4, "error"}}, 2, false, "continued", throttled, ""},
		{"chat internalServerException frame", "chat", []fault{{4, "error"}}, 2, false, "continued", internal, ""},
		{"messages serviceUnavailableException frame", "messages", []fault{{4, "error"}}, 2, false, "continued", unavailable, ""},
		{"chat validationException frame", "chat", []fault{{4, "error"}}, 1, true, "", invalid, "Input is too long"},
		{"messages malformed frame skipped", "messages", []fault{{2, "malformed"}}, 1, false, "", [2]string{}, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			up := newCloudChoppy(t, "converse", "anthropic", conversePath, tt.plan...)
			up.exception = tt.exception
			g := cloudContGateway(t, up, "", converseModel, "")
			start := time.Now()
			a := askers[tt.api](t, g)
			took := time.Since(start).Round(time.Millisecond)
			if tt.diverged {
				want := tt.wantError
				if want == "" {
					want = "could not be continued"
				}
				if !strings.Contains(a.errorText, want) || a.text == "" || !strings.HasPrefix(contAnswer, a.text) {
					t.Fatalf("answer %q, error %q; want part of the answer, then the in-band error %q", a.text, a.errorText, want)
				}
				t.Logf("in-band error after %q, %v", a.text, took)
			} else {
				if a.errorText != "" || a.text != contAnswer {
					t.Fatalf("answer %q, error %q; want the whole answer once", a.text, a.errorText)
				}
				if a.starts != 1 || a.finishes != 1 {
					t.Errorf("%d starts and %d finishes; want one each", a.starts, a.finishes)
				}
				t.Logf("whole answer after %v", took)
			}
			if p := up.seenProblems(); len(p) > 0 {
				t.Errorf("Bedrock would have refused: %q", p)
			}
			bodies := up.requests()
			if len(bodies) != tt.requests {
				t.Fatalf("%d upstream requests; want %d", len(bodies), tt.requests)
			}
			if len(bodies) == 2 && bodies[1] != bodies[0] {
				t.Errorf("the restart is not the original request:\n%s\n%s", bodies[0], bodies[1])
			}
			if tt.plan[0].how == "malformed" {
				if n := testutil.ToFloat64(g.Metrics.MalformedEvents.WithLabelValues("up")); n != 1 {
					t.Errorf("gateway_upstream_malformed_events_total = %v; want 1", n)
				}
			}
			if tt.outcome != "" {
				waitFor(t, "outcome "+tt.outcome, func() bool { return continuations(g, tt.outcome) == 1 })
			}
			if !tt.diverged {
				waitFor(t, "the usage charged", func() bool { p, o := charged(g); return a.prompt == p && a.output == o })
			}
		})
	}
}
