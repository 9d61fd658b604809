package proxy_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go"
	aoption "github.com/anthropics/anthropic-sdk-go/option"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/agate-gateway/agate/internal/gatewaytest"
	"github.com/agate-gateway/agate/internal/logjson"
	"github.com/agate-gateway/agate/internal/openaitest"
	"github.com/agate-gateway/agate/proxy"
)

// unavailable is a provider of kind that answers every request with a 503 in its own error
// shape: a primary that is down.
func unavailable(t *testing.T, kind string) *httptest.Server {
	body := `{"error":{"message":"The server is overloaded or not ready yet.","type":"server_error","param":null,"code":null}}`
	if kind == "anthropic" {
		body = `{"type":"error","error":{"type":"api_error","message":"Service unavailable"},"request_id":"req_011"}`
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusServiceUnavailable)
		io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// answered is what one request's answer said of its model: the model field(s) of the body
// or of every event that carries one, and the headers.
type answered struct {
	models   []string
	header   http.Header
	text     string
	complete bool
}

// askEvery asks model m once through api (chat, responses, messages), streamed or not,
// with the official SDK, and returns what the answer named.
func askEvery(t *testing.T, g *gatewaytest.Gateway, api, model string, stream bool) answered {
	t.Helper()
	ctx := context.Background()
	var a answered
	var resp *http.Response
	switch api {
	case "chat":
		c := gatewaytest.OpenAI(g.V1(), "sk-alice", option.WithResponseInto(&resp))
		p := openai.ChatCompletionNewParams{Model: model, Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}}
		if !stream {
			out, err := c.Chat.Completions.New(ctx, p)
			if err != nil {
				t.Fatal(err)
			}
			a.models, a.text, a.complete = []string{out.Model}, out.Choices[0].Message.Content, out.Choices[0].FinishReason == "stop"
			break
		}
		s := c.Chat.Completions.NewStreaming(ctx, p)
		for s.Next() {
			ch := s.Current()
			a.models = append(a.models, ch.Model)
			if len(ch.Choices) > 0 {
				a.text += ch.Choices[0].Delta.Content
				a.complete = a.complete || ch.Choices[0].FinishReason == "stop"
			}
		}
		if err := s.Err(); err != nil {
			t.Fatal(err)
		}
	case "responses":
		c := gatewaytest.OpenAI(g.V1(), "sk-alice", option.WithResponseInto(&resp))
		p := responses.ResponseNewParams{Model: model, Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hi")}}
		if !stream {
			out, err := c.Responses.New(ctx, p)
			if err != nil {
				t.Fatal(err)
			}
			a.models, a.text, a.complete = []string{out.Model}, out.OutputText(), out.Status == "completed"
			break
		}
		s := c.Responses.NewStreaming(ctx, p)
		var raw [][]byte
		for s.Next() {
			ev := s.Current()
			raw = append(raw, []byte(ev.RawJSON()))
			var m struct {
				Response *struct{ Model string } `json:"response"`
				Delta    string                  `json:"delta"`
			}
			if err := json.Unmarshal([]byte(ev.RawJSON()), &m); err != nil {
				t.Fatal(err)
			}
			if m.Response != nil {
				a.models = append(a.models, m.Response.Model)
			}
			if ev.Type == "response.output_text.delta" {
				a.text += m.Delta
			}
			a.complete = a.complete || ev.Type == "response.completed"
		}
		if err := s.Err(); err != nil {
			t.Fatal(err)
		}
		openaitest.CheckResponseEventData(t, raw)
	case "messages":
		c := gatewaytest.Anthropic(g.URL, "sk-alice", aoption.WithResponseInto(&resp))
		p := anthropic.MessageNewParams{Model: anthropic.Model(model), MaxTokens: 100, Messages: []anthropic.MessageParam{
			anthropic.NewUserMessage(anthropic.NewTextBlock("hi"))}}
		var msg anthropic.Message
		if !stream {
			out, err := c.Messages.New(ctx, p)
			if err != nil {
				t.Fatal(err)
			}
			msg = *out
		} else {
			s := c.Messages.NewStreaming(ctx, p)
			for s.Next() {
				ev := s.Current()
				if ev.Type == "message_start" {
					a.models = append(a.models, string(ev.Message.Model))
				}
				if err := msg.Accumulate(ev); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.Err(); err != nil {
				t.Fatal(err)
			}
		}
		if !stream {
			a.models = []string{string(msg.Model)}
		}
		for _, b := range msg.Content {
			a.text += b.Text
		}
		a.complete = msg.StopReason == "end_turn"
	}
	if resp == nil {
		t.Fatal("the SDK kept no response")
	}
	a.header = resp.Header
	return a
}

// TestFallbackAnswer_NamesTheModelThatAnswered: a primary that 503s and a fallback that
// answers, on each upstream wire and each client API, streamed and not, translated and
// passed through (the client API's own wire): the answer's model is the fallback's
// configured name in the body and every event that names one, the headers say so
// (x-agate-model, x-agate-fallback: 1), and so do the access line and
// gateway_fallback_answers_total. Without a fallback, the model is the one asked for and
// only x-agate-model is added.
func TestFallbackAnswer_NamesTheModelThatAnswered(t *testing.T) {
	for _, kind := range []string{"openai", "responses", "anthropic"} {
		t.Run(kind, func(t *testing.T) {
			down := unavailable(t, kind)
			up := gatewaytest.NewFakeFunc(t, kind, func(string) gatewaytest.Turn { return gatewaytest.Turn{Text: "from the spare"} })
			upJSON := gatewaytest.NewFakeJSON(t, kind)
			downURL := down.URL
			if kind != "anthropic" {
				downURL += "/v1"
			}
			var logs gatewaytest.Buffer
			g := gatewaytest.StartYAML(t, fmt.Sprintf(`backends:
  down: {type: %[1]s, base_url: %[2]q, api_key: upstream-secret, retries: {max: 0}}
  up: {type: %[1]s, base_url: %[3]q, api_key: upstream-secret, retries: {max: 0}}
  upjson: {type: %[1]s, base_url: %[4]q, api_key: upstream-secret, retries: {max: 0}}
models:
  main: {backend: down, upstream_model: fake-model, fallbacks: [spare]}
  spare: {backend: up, upstream_model: fake-model}
  main-json: {backend: down, upstream_model: fake-model, fallbacks: [spare-json]}
  spare-json: {backend: upjson, upstream_model: fake-model}
  solo: {backend: up, upstream_model: fake-model}
keys:
  alice: {key: sk-alice, models: ["*"]}
`, kind, downURL, up.BaseURL(), upJSON.BaseURL()), gatewaytest.Options{Runtime: proxy.TestRuntime, Logger: slog.New(logjson.New(&logs, nil))})
			n := 0
			for _, api := range []string{"chat", "responses", "messages"} {
				for _, stream := range []bool{false, true} {
					t.Run(fmt.Sprintf("%s/stream=%v", api, stream), func(t *testing.T) {
						model, spare := "main", "spare"
						if !stream {
							model, spare = "main-json", "spare-json"
							upJSON.SetScript(gatewaytest.Turn{Text: "from the spare"})
						}
						before := testutil.ToFloat64(g.Metrics.FallbackAnswers.WithLabelValues(model, spare))
						got := askEvery(t, g, api, model, stream)
						n++
						if got.text != "from the spare" || !got.complete {
							t.Errorf("answer %q (complete %v), want the fallback's whole answer", got.text, got.complete)
						}
						if len(got.models) == 0 {
							t.Error("no model in the answer")
						}
						for i, m := range got.models {
							if m != spare {
								t.Errorf("model[%d] = %q, want the fallback's configured name %q", i, m, spare)
							}
						}
						if h := got.header.Get("X-Agate-Model"); h != spare {
							t.Errorf("x-agate-model: %q, want %q", h, spare)
						}
						if h := got.header.Get("X-Agate-Fallback"); h != "1" {
							t.Errorf("x-agate-fallback: %q, want 1", h)
						}
						if v := testutil.ToFloat64(g.Metrics.FallbackAnswers.WithLabelValues(model, spare)) - before; v != 1 {
							t.Errorf("gateway_fallback_answers_total{model=%q,answered_by=%q} grew by %v, want 1", model, spare, v)
						}
						line := accessLineOf(t, g, &logs, model, n)
						if line["answered_model"] != spare || line["fallback"] != true || line["status"] != 200.0 {
							t.Errorf("access line %v: want model %q, answered_model %q, fallback true", line, model, spare)
						}

						// The same API and mode without a fallback: the model asked for, and
						// only x-agate-model.
						if !stream {
							upJSON.SetScript(gatewaytest.Turn{Text: "from the spare"})
						}
						solo := "solo"
						if !stream {
							solo = "spare-json"
						}
						got = askEvery(t, g, api, solo, stream)
						n++
						for i, m := range got.models {
							if m != solo {
								t.Errorf("no fallback: model[%d] = %q, want %q", i, m, solo)
							}
						}
						if h := got.header.Get("X-Agate-Model"); h != solo {
							t.Errorf("no fallback: x-agate-model: %q, want %q", h, solo)
						}
						if _, ok := got.header["X-Agate-Fallback"]; ok {
							t.Error("no fallback: x-agate-fallback is set")
						}
						line = accessLineOf(t, g, &logs, solo, n)
						if line["answered_model"] != solo || line["fallback"] == true {
							t.Errorf("no fallback: access line %v: want answered_model %q and no fallback", line, solo)
						}
					})
				}
			}
		})
	}
}

// accessLineOf waits for the n-th request's record (the gateway writes it once the answer
// is written) and returns it: the chat access line, or the Responses API's "response" line.
func accessLineOf(t *testing.T, g *gatewaytest.Gateway, logs *gatewaytest.Buffer, model string, n int) map[string]any {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for {
		g.Server.Settle()
		var lines []map[string]any
		for _, l := range strings.Split(logs.String(), "\n") {
			var m map[string]any
			if json.Unmarshal([]byte(l), &m) == nil && (m["msg"] == "chat completion" || m["msg"] == "response") {
				lines = append(lines, m)
			}
		}
		if len(lines) >= n {
			if lines[n-1]["model"] != model {
				t.Errorf("access line %v: want model %q", lines[n-1], model)
			}
			return lines[n-1]
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d access lines, want %d:\n%s", len(lines), n, logs.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
}
