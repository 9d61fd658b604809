package proxy_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/tidwall/gjson"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/agate-gateway/agate/internal/gatewaytest"
	"github.com/agate-gateway/agate/internal/openaitest"
	"github.com/agate-gateway/agate/proxy"
)

// The Responses API's WebSocket mode (GET /v1/responses upgraded), driven by a Go
// WebSocket client (github.com/coder/websocket) as OpenAI's guide drives it
// (developers.openai.com/api/docs/guides/websocket-mode): one response.create per turn,
// previous_response_id with only the new input on the next, the events of the SSE stream
// as text messages.

// wsURL is the WebSocket URL of /v1/responses of the gateway whose /v1 URL is v1.
func wsURL(v1 string) string { return "ws" + strings.TrimPrefix(v1, "http") + "/responses" }

// dialWS opens the WebSocket of the gateway at v1 with key, failing t when it cannot.
func dialWS(t *testing.T, v1, key string) *websocket.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, resp, err := websocket.Dial(ctx, wsURL(v1), &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + key}}})
	if err != nil {
		status := 0
		if resp != nil {
			status = resp.StatusCode
		}
		t.Fatalf("dial: %v (status %d)", err, status)
	}
	c.SetReadLimit(32 << 20)
	t.Cleanup(func() { c.CloseNow() })
	return c
}

// sendWS sends v as a JSON text message.
func sendWS(t *testing.T, c *websocket.Conn, v any) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Write(context.Background(), websocket.MessageText, b); err != nil {
		t.Fatal(err)
	}
}

// readTurn reads the messages of one turn: up to its terminal event (response.completed,
// .incomplete, .failed) or an error message.
func readTurn(t *testing.T, c *websocket.Conn) [][]byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var msgs [][]byte
	for {
		typ, b, err := c.Read(ctx)
		if err != nil {
			t.Fatalf("read after %d messages: %v", len(msgs), err)
		}
		if typ != websocket.MessageText {
			t.Fatalf("message %d is not text", len(msgs))
		}
		msgs = append(msgs, b)
		switch gjson.GetBytes(b, "type").Str {
		case "response.completed", "response.incomplete", "response.failed", "error":
			return msgs
		}
	}
}

// userInput is a Responses input of one user message.
func userInput(text string) []any {
	return []any{map[string]any{"type": "message", "role": "user", "content": []any{map[string]any{"type": "input_text", "text": text}}}}
}

// turnText is the text of the output of a turn's response.completed.
func turnText(msgs [][]byte) string {
	last := msgs[len(msgs)-1]
	return gjson.GetBytes(last, `response.output.#(type=="message").content.0.text`).Str
}

// TestWebsocket_Turns: two turns on one connection, the second sending only its new
// input with previous_response_id and store: false: on the mock and on a fake upstream of
// every wire. The events are the SSE stream's (one JSON event a message, increasing
// sequence numbers, one terminal event), and the second turn's upstream request holds the
// whole conversation, rebuilt from the connection's own copy of the first response.
func TestWebsocket_Turns(t *testing.T) {
	for _, kind := range responsesKinds {
		t.Run(kind, func(t *testing.T) {
			g := startResponsesGateway(t, kind, "")
			if g.fake != nil {
				g.fake.SetScript(gatewaytest.Turn{Text: "first answer"}, gatewaytest.Turn{Text: "second answer"})
			}
			c := dialWS(t, g.url, "alice-key")
			sendWS(t, c, map[string]any{"type": "response.create", "model": "m", "store": false, "input": userInput("hello there")})
			turn1 := readTurn(t, c)
			openaitest.CheckResponseEventData(t, turn1)
			if typ := gjson.GetBytes(turn1[0], "type").Str; typ != "response.created" {
				t.Fatalf("first event %s", turn1[0])
			}
			id := gjson.GetBytes(turn1[len(turn1)-1], "response.id").Str
			if id == "" || gjson.GetBytes(turn1[len(turn1)-1], "type").Str != "response.completed" {
				t.Fatalf("turn 1 ended with %s", turn1[len(turn1)-1])
			}
			sendWS(t, c, map[string]any{"type": "response.create", "model": "m", "store": false, "previous_response_id": id, "input": userInput("and again")})
			turn2 := readTurn(t, c)
			openaitest.CheckResponseEventData(t, turn2)
			if typ := gjson.GetBytes(turn2[len(turn2)-1], "type").Str; typ != "response.completed" {
				t.Fatalf("turn 2 ended with %s", turn2[len(turn2)-1])
			}
			if kind == "mock" {
				if got := turnText(turn2); !strings.Contains(got, "and again") {
					t.Errorf("turn 2 answered %q", got)
				}
				return
			}
			if got := turnText(turn1) + "|" + turnText(turn2); got != "first answer|second answer" {
				t.Errorf("answers %q", got)
			}
			bodies := g.fake.Bodies()
			if len(bodies) != 2 {
				t.Fatalf("upstream got %d requests", len(bodies))
			}
			for _, want := range []string{"hello there", "first answer", "and again"} {
				if !strings.Contains(bodies[1], want) {
					t.Errorf("turn 2's upstream request lacks %q:\n%.2000s", want, bodies[1])
				}
			}
		})
	}
}

// TestWebsocket_ErrorsInBand: a turn refused before its first event is one error message
// with the HTTP status Codex maps it to, and the connection serves the next turn.
// Messages that are no client event are refused the same way; a binary message closes
// the connection (1003).
func TestWebsocket_ErrorsInBand(t *testing.T) {
	g := startResponsesGateway(t, "mock", "")
	c := dialWS(t, g.url, "alice-key")
	tests := []struct {
		name   string
		msg    string
		status int64
		param  string
	}{
		{"unknown model", `{"type":"response.create","model":"nope","input":"hi"}`, 404, "model"},
		{"bad field", `{"type":"response.create","model":"m","input":"hi","temperature":"hot"}`, 400, "temperature"},
		{"unknown previous response", `{"type":"response.create","model":"m","input":"hi","previous_response_id":"resp_nope"}`, 404, ""},
		{"background", `{"type":"response.create","model":"m","input":"hi","background":true}`, 400, "background"},
		{"not JSON", `{"type":`, 400, ""},
		{"no type", `{"model":"m"}`, 400, "type"},
		{"unknown type", `{"type":"response.cancel"}`, 400, "type"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := c.Write(context.Background(), websocket.MessageText, []byte(tt.msg)); err != nil {
				t.Fatal(err)
			}
			msgs := readTurn(t, c)
			got := msgs[len(msgs)-1]
			if len(msgs) != 1 || gjson.GetBytes(got, "type").Str != "error" || gjson.GetBytes(got, "status").Int() != tt.status ||
				gjson.GetBytes(got, "error.param").Str != tt.param || gjson.GetBytes(got, "error.message").Str == "" {
				t.Errorf("got %q, want one error message with status %d naming %q", msgs, tt.status, tt.param)
			}
		})
	}
	sendWS(t, c, map[string]any{"type": "response.create", "model": "m", "input": "still here"})
	if got := turnText(readTurn(t, c)); !strings.Contains(got, "still here") {
		t.Errorf("the turn after the errors answered %q", got)
	}
	if err := c.Write(context.Background(), websocket.MessageBinary, []byte("{}")); err != nil {
		t.Fatal(err)
	}
	_, _, err := c.Read(context.Background())
	if s := websocket.CloseStatus(err); s != websocket.StatusUnsupportedData {
		t.Errorf("after a binary message: %v, want close 1003", err)
	}
}

// TestWebsocket_Bounds: a message over max_message_bytes closes the connection with 1009;
// an idle connection is closed after idle_timeout; the turn after max_turns is refused with
// websocket_connection_limit_reached (Codex then opens a new connection) and the
// connection closed.
func TestWebsocket_Bounds(t *testing.T) {
	g := startResponsesGateway(t, "mock", "responses_websocket: {max_message_bytes: 1024, idle_timeout: 300ms, max_turns: 1}\n")
	t.Run("oversize message", func(t *testing.T) {
		c := dialWS(t, g.url, "alice-key")
		sendWS(t, c, map[string]any{"type": "response.create", "model": "m", "input": strings.Repeat("x", 2000)})
		_, _, err := c.Read(context.Background())
		if s := websocket.CloseStatus(err); s != websocket.StatusMessageTooBig {
			t.Errorf("got %v, want close 1009", err)
		}
	})
	t.Run("idle timeout", func(t *testing.T) {
		c := dialWS(t, g.url, "alice-key")
		start := time.Now()
		_, _, err := c.Read(context.Background())
		if s := websocket.CloseStatus(err); s != websocket.StatusNormalClosure || time.Since(start) > 2*time.Second {
			t.Errorf("got %v after %v, want a normal close after 300ms", err, time.Since(start))
		}
	})
	t.Run("max turns", func(t *testing.T) {
		c := dialWS(t, g.url, "alice-key")
		sendWS(t, c, map[string]any{"type": "response.create", "model": "m", "input": "one"})
		readTurn(t, c)
		sendWS(t, c, map[string]any{"type": "response.create", "model": "m", "input": "two"})
		msgs := readTurn(t, c)
		if code := gjson.GetBytes(msgs[0], "error.code").Str; code != "websocket_connection_limit_reached" {
			t.Errorf("second turn got %s", msgs[0])
		}
		if _, _, err := c.Read(context.Background()); websocket.CloseStatus(err) != websocket.StatusNormalClosure {
			t.Errorf("then %v, want a normal close", err)
		}
	})
}

// TestWebsocket_Upgrade: the key is checked at the upgrade (401 in OpenAI's shape, no
// connection); with responses_websocket.enabled false the upgrade is answered 426, the
// answer on which Codex falls back to HTTP at once; a POST /v1/responses is unchanged.
func TestWebsocket_Upgrade(t *testing.T) {
	dial := func(v1, key string) (int, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		c, resp, err := websocket.Dial(ctx, wsURL(v1), &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + key}}})
		if err == nil {
			c.CloseNow()
			return 101, ""
		}
		if resp == nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	on := startResponsesGateway(t, "mock", "")
	if status, body := dial(on.url, "wrong-key"); status != 401 || gjson.Get(body, "error.code").Str != "invalid_api_key" {
		t.Errorf("wrong key: %d %s", status, body)
	}
	off := startResponsesGateway(t, "mock", "responses_websocket: {enabled: false}\n")
	if status, body := dial(off.url, "alice-key"); status != 426 || gjson.Get(body, "error.code").Str != "upgrade_required" {
		t.Errorf("disabled: %d %s", status, body)
	}
	resp, err := http.Post(off.url+"/responses", "application/json", strings.NewReader(`{"model":"m","input":"hi"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 401 {
		t.Errorf("POST without a key: %d", resp.StatusCode)
	}
}

// stallingResponses is a Responses upstream that sends the first event of its answer and
// then waits for the request to end, which it reports on gone.
func stallingResponses(t *testing.T, gone chan<- struct{}) *httptest.Server {
	first, _, _ := strings.Cut(gatewaytest.RenderStream("responses", gatewaytest.Turn{Text: "x"}, 0), "\n\n")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, first+"\n\n")
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
			gone <- struct{}{}
		case <-time.After(10 * time.Second):
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestWebsocket_ClientLeavesMidTurn: a client that closes its connection while a turn
// streams ends the turn's upstream request; a response.create sent while a turn runs is
// refused (409) without disturbing it.
func TestWebsocket_ClientLeavesMidTurn(t *testing.T) {
	gone := make(chan struct{}, 1)
	up := stallingResponses(t, gone)
	g := gatewaytest.StartYAML(t, fmt.Sprintf(`backends:
  up: {type: responses, base_url: %q, api_key: up-secret, retries: {max: 0}}
models:
  m: {backend: up, upstream_model: gpt-x}
keys:
  alice: {key: alice-key, models: ["*"]}
`, up.URL+"/v1"), gatewaytest.Options{Runtime: proxy.TestRuntime})
	c := dialWS(t, g.V1(), "alice-key")
	sendWS(t, c, map[string]any{"type": "response.create", "model": "m", "input": "hi"})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, b, err := c.Read(ctx); err != nil || gjson.GetBytes(b, "type").Str != "response.created" {
		t.Fatalf("first message %s, %v", b, err)
	}
	sendWS(t, c, map[string]any{"type": "response.create", "model": "m", "input": "too soon"})
	if _, b, err := c.Read(ctx); err != nil || gjson.GetBytes(b, "status").Int() != 409 {
		t.Fatalf("a second response.create during the turn got %s, %v", b, err)
	}
	c.CloseNow()
	select {
	case <-gone:
	case <-time.After(2 * time.Second):
		t.Fatal("the upstream request went on after the client left")
	}
}

func TestWebsocket_Warmup(t *testing.T) {
	g := startResponsesGateway(t, "responses", "")
	g.fake.SetScript(gatewaytest.Turn{Text: "answer"})
	c := dialWS(t, g.url, "alice-key")
	sendWS(t, c, map[string]any{"type": "response.create", "model": "m", "store": false, "generate": false,
		"instructions": "be brief", "input": userInput("the warm-up item")})
	warm := readTurn(t, c)
	openaitest.CheckResponseEventData(t, warm)
	last := warm[len(warm)-1]
	id := gjson.GetBytes(last, "response.id").Str
	if gjson.GetBytes(last, "type").Str != "response.completed" || id == "" || gjson.GetBytes(last, "response.output.#").Int() != 0 {
		t.Fatalf("warm-up ended with %s", last)
	}
	if n := len(g.fake.Bodies()); n != 0 {
		t.Fatalf("the warm-up reached the upstream (%d requests)", n)
	}
	sendWS(t, c, map[string]any{"type": "response.create", "model": "m", "store": false, "previous_response_id": id, "input": userInput("the real question")})
	if msgs := readTurn(t, c); turnText(msgs) != "answer" {
		t.Errorf("turn after the warm-up answered %q", msgs)
	}
	bodies := g.fake.Bodies()
	if len(bodies) != 1 || !strings.Contains(bodies[0], "the warm-up item") || !strings.Contains(bodies[0], "the real question") {
		t.Errorf("upstream requests %q", bodies)
	}
}

// TestWebsocket_Traced: a turn on a WebSocket is traced as a POST /v1/responses: a server
// span for the turn, with the upstream call under it.
func TestWebsocket_Traced(t *testing.T) {
	g := startTracedGateway(t, "{traces: true}")
	g.backup.SetScript(gatewaytest.Turn{Text: "traced answer"})
	c := dialWS(t, g.url+"/v1", "plain-key")
	sendWS(t, c, map[string]any{"type": "response.create", "model": "m-backup", "input": tracedPrompt})
	if msgs := readTurn(t, c); gjson.GetBytes(msgs[len(msgs)-1], "type").Str != "response.completed" {
		t.Fatalf("turn ended with %s", msgs[len(msgs)-1])
	}
	spans := g.recv.waitSpans(t, g.tracer)
	var server map[string]string
	for _, s := range spans {
		if s.Kind == tracepb.Span_SPAN_KIND_SERVER {
			server = attrs(s)
		}
	}
	if server["http.route"] != "/v1/responses" || server["http.request.method"] != "POST" || len(spans) < 2 {
		t.Errorf("spans %q, server span %v", tree(spans), server)
	}
}

// TestWebsocket_Limits: every turn is admitted against the limits like a POST: over the
// model's requests per minute, the turn is a 429 error message with its Retry-After in
// "headers", and nothing reaches the model.
func TestWebsocket_Limits(t *testing.T) {
	g := gatewaytest.StartYAML(t, `backends: {offline: {type: mock}}
models: {m: {backend: offline, limits: {requests_per_minute: 1}}}
keys: {alice: {key: alice-key, models: ["*"]}}
`, gatewaytest.Options{Runtime: proxy.TestRuntime})
	c := dialWS(t, g.V1(), "alice-key")
	sendWS(t, c, map[string]any{"type": "response.create", "model": "m", "input": "one"})
	if got := turnText(readTurn(t, c)); !strings.Contains(got, "one") {
		t.Fatalf("first turn answered %q", got)
	}
	sendWS(t, c, map[string]any{"type": "response.create", "model": "m", "input": "two"})
	msgs := readTurn(t, c)
	got := msgs[0]
	if len(msgs) != 1 || gjson.GetBytes(got, "status").Int() != 429 || gjson.GetBytes(got, "headers.retry-after").Str == "" {
		t.Errorf("second turn got %q, want one 429 error message with a retry-after", msgs)
	}
}
