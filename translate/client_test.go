package translate_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/agate-gateway/agate/translate"
	"github.com/agate-gateway/agate/translate/messagesin"
	"github.com/agate-gateway/agate/translate/openaichat"
	"github.com/agate-gateway/agate/translate/responsesin"
)

// clientDialect is one client API under the client contract: a fresh stream writer and
// assembler for a response of model "m" whose id is id, and what its wire looks like.
type clientDialect struct {
	name      string
	stream    func(t *testing.T) translate.ClientStream
	assembler func(t *testing.T) translate.ClientAssembler
	// forwarded writes the errors of a stream forwarded from an upstream of the API.
	forwarded translate.ClientErrors
	// keepAlive is what the first keep-alive of a fresh stream writes, later the next ones.
	keepAlive, later string
	// terminal is how a finished stream ends; errorEvent how an error event starts.
	terminal, errorEvent string
	// errorMessage is the path of the message in an error body.
	errorMessage []string
}

func clientDialects() []clientDialect {
	responsesRequest := func(t *testing.T) *responsesin.Request {
		req, err := responsesin.Parse([]byte(`{"model":"m","input":"hi"}`))
		if err != nil {
			t.Fatal(err)
		}
		return req
	}
	now := func() int64 { return 2 }
	return []clientDialect{{
		name: "chat",
		stream: func(*testing.T) translate.ClientStream {
			return openaichat.NewChunkEncoder("chatcmpl-1", "m", 1, true)
		},
		assembler: func(*testing.T) translate.ClientAssembler {
			return &openaichat.Completion{A: &openaichat.Assembler{}, ID: "chatcmpl-1", Model: "m", Now: now}
		},
		forwarded: openaichat.Errors{},
		keepAlive: ": keep-alive\n\n", later: ": keep-alive\n\n",
		terminal: "data: [DONE]\n\n", errorEvent: "data: {\"error\":",
		errorMessage: []string{"error", "message"},
	}, {
		name: "responses",
		stream: func(t *testing.T) translate.ClientStream {
			return &responsesin.Answer{Enc: responsesin.NewEncoder(responsesRequest(t),
				responsesin.EncoderOptions{ID: "resp_1", Model: "m", Created: 1, Stream: true}), Now: now}
		},
		assembler: func(t *testing.T) translate.ClientAssembler {
			return &responsesin.Answer{Enc: responsesin.NewEncoder(responsesRequest(t),
				responsesin.EncoderOptions{ID: "resp_1", Model: "m", Created: 1}), Now: now}
		},
		forwarded: &responsesin.Forward{},
		keepAlive: ": keep-alive\n\n", later: ": keep-alive\n\n",
		terminal: "event: response.completed\n", errorEvent: "event: error\n",
		errorMessage: []string{"error", "message"},
	}, {
		name: "messages",
		stream: func(*testing.T) translate.ClientStream {
			return messagesin.NewEncoder("msg_1", "m")
		},
		assembler: func(*testing.T) translate.ClientAssembler {
			return &messagesin.Message{ID: "msg_1", Model: "m"}
		},
		forwarded: messagesin.Errors{},
		keepAlive: "event: message_start\n", later: "event: ping\ndata: {\"type\":\"ping\"}\n\n",
		terminal: "event: message_stop\n", errorEvent: "event: error\n",
		errorMessage: []string{"error", "message"},
	}}
}

// answerEvents is an answer saying "hello" in two deltas.
func answerEvents() []translate.Event {
	return []translate.Event{
		{Kind: translate.EventStart, ID: "up-1", Model: "up-model"},
		{Kind: translate.EventTextDelta, Text: "hel"},
		{Kind: translate.EventTextDelta, Text: "lo"},
		{Kind: translate.EventUsage, Usage: translate.Usage{PromptTokens: 3, CompletionTokens: 2}},
		{Kind: translate.EventFinish, FinishReason: translate.FinishStop},
	}
}

var testClientError = translate.ClientError{Status: 502, Message: "the upstream failed", Type: "upstream_error",
	Code: "upstream_error", RequestID: "req-1"}

// events splits an SSE stream into its events, failing on anything that is not whole
// events of event:, data: and comment lines, and returns the JSON of each data.
func events(t *testing.T, stream []byte) (datas []string) {
	t.Helper()
	if len(stream) > 0 && !bytes.HasSuffix(stream, []byte("\n\n")) {
		t.Fatalf("the stream does not end with a whole event:\n%s", stream)
	}
	for _, ev := range strings.SplitAfter(string(stream), "\n\n") {
		if ev == "" {
			continue
		}
		for _, line := range strings.Split(strings.TrimSuffix(ev, "\n\n"), "\n") {
			switch {
			case strings.HasPrefix(line, ":"), strings.HasPrefix(line, "event: "):
			case strings.HasPrefix(line, "data: "):
				data := strings.TrimPrefix(line, "data: ")
				if data != "[DONE]" && !json.Valid([]byte(data)) {
					t.Fatalf("data is not JSON: %s", data)
				}
				datas = append(datas, data)
			default:
				t.Fatalf("not an SSE line: %q", line)
			}
		}
	}
	return datas
}

// TestClientContract holds each client dialect to translate.ClientStream and
// translate.ClientAssembler: whole SSE events, the keep-alive's form, a finish after the
// events, an error event after content, an error body, and the assembled answer.
func TestClientContract(t *testing.T) {
	for _, d := range clientDialects() {
		t.Run(d.name, func(t *testing.T) {
			t.Run("finish after events", func(t *testing.T) {
				s := d.stream(t)
				var out []byte
				for _, ev := range answerEvents() {
					var err error
					if out, err = s.AppendEvent(out, &ev); err != nil {
						t.Fatal(err)
					}
				}
				n := len(out)
				out = s.Finish(out)
				if len(out) == n || !bytes.Contains(out[n:], []byte(d.terminal)) {
					t.Errorf("Finish wrote %q, want it to hold %q", out[n:], d.terminal)
				}
				events(t, out)
				if !strings.Contains(string(out), "hel") || !strings.Contains(string(out), "lo") {
					t.Errorf("the stream lost the text:\n%s", out)
				}
			})
			t.Run("keep-alive", func(t *testing.T) {
				s := d.stream(t)
				first := s.AppendKeepAlive(nil)
				if !strings.HasPrefix(string(first), d.keepAlive) {
					t.Errorf("first keep-alive %q, want it to start with %q", first, d.keepAlive)
				}
				if next := s.AppendKeepAlive([]byte("x")); string(next) != "x"+d.later {
					t.Errorf("next keep-alive %q, want %q appended", next, d.later)
				}
				events(t, first)
				// A stream a keep-alive started still finishes whole.
				events(t, s.Finish(nil))
			})
			t.Run("error event after content", func(t *testing.T) {
				s := d.stream(t)
				var out []byte
				for _, ev := range answerEvents()[:2] {
					out, _ = s.AppendEvent(out, &ev)
				}
				before := len(events(t, out))
				n := len(out)
				out = s.AppendErrorEvent(out, &testClientError)
				if !strings.HasPrefix(string(out[n:]), d.errorEvent) {
					t.Errorf("error event %q, want it to start with %q", out[n:], d.errorEvent)
				}
				datas := events(t, out)
				if len(datas) != before+1 {
					t.Fatalf("the error event wrote %d events, want 1:\n%s", len(datas)-before, out[n:])
				}
				if !strings.Contains(datas[len(datas)-1], testClientError.Message) {
					t.Errorf("the error event lost the message: %s", datas[len(datas)-1])
				}
				if d.name == "responses" { // numbered after the events before it
					var e struct {
						Seq int `json:"sequence_number"`
					}
					json.Unmarshal([]byte(datas[len(datas)-1]), &e)
					if e.Seq != before {
						t.Errorf("the error event is number %d, want %d", e.Seq, before)
					}
				}
			})
			t.Run("error body", func(t *testing.T) {
				body := d.stream(t).AppendErrorBody([]byte("x"), &testClientError)
				var v map[string]any
				if err := json.Unmarshal(body[1:], &v); err != nil {
					t.Fatalf("%v: %s", err, body)
				}
				var m any = v
				for _, k := range d.errorMessage {
					m = m.(map[string]any)[k]
				}
				if m != testClientError.Message {
					t.Errorf("message %v, want %q", m, testClientError.Message)
				}
			})
			t.Run("forwarded stream's errors", func(t *testing.T) {
				want := d.stream(t).AppendErrorBody(nil, &testClientError)
				if got := d.forwarded.AppendErrorBody(nil, &testClientError); string(got) != string(want) {
					t.Errorf("error body %s, want the stream's %s", got, want)
				}
				ev := d.forwarded.AppendErrorEvent([]byte("x"), &testClientError)
				if !strings.HasPrefix(string(ev[1:]), d.errorEvent) || len(events(t, ev[1:])) != 1 {
					t.Errorf("error event %q, want one event starting with %q", ev[1:], d.errorEvent)
				}
			})
			t.Run("assembled body", func(t *testing.T) {
				a := d.assembler(t)
				for _, ev := range answerEvents() {
					if err := a.Add(&ev); err != nil {
						t.Fatal(err)
					}
				}
				body, err := a.AppendBody([]byte("x"))
				if err != nil {
					t.Fatal(err)
				}
				if !json.Valid(body[1:]) || !strings.Contains(string(body), "hello") || !strings.Contains(string(body), `"m"`) {
					t.Errorf("body %s", body)
				}
			})
			t.Run("assembled error", func(t *testing.T) {
				a := d.assembler(t)
				fail := &translate.UpstreamError{Status: 502, Message: "cut"}
				ev := translate.Event{Kind: translate.EventError, Err: fail}
				err := a.Add(&ev)
				if err == nil {
					_, err = a.AppendBody(nil)
				}
				if !errors.Is(err, fail) {
					t.Errorf("error %v, want the event's", err)
				}
			})
		})
	}
}
