package proxy

import (
	"bufio"
	"io"
	"strings"
	"testing"
)

// promptErrorConfig is an OpenAI-compatible backend {{UP}} with retries {{RETRIES}} and
// the log section {{LOG}}.
const promptErrorConfig = `
{{LOG}}
backends:
  up: {type: openai, base_url: "{{UP}}", api_key: upstream-secret, retries: {max: {{RETRIES}}, base_delay: 1ms, max_delay: 5ms}}
models:
  gpt: {backend: up, upstream_model: gpt-4o}
keys:
  alice: {key: sk-alice, models: ["*"]}
`

// TestUpstreamErrorPromptNotLogged: an upstream 4xx whose message quotes the prompt reaches
// the client (masked) but not the log, which keeps the status, type, code and param;
// log.upstream_error_messages: true is the debug switch that logs the message.
func TestUpstreamErrorPromptNotLogged(t *testing.T) {
	const prompt = "the merger with Initech closes on Friday"
	upstreamBody := `{"error":{"message":"Invalid prompt: '` + prompt + `' was flagged","type":"invalid_request_error","code":"flagged_prompt","param":"messages[0].content"}}`
	tests := []struct {
		name    string
		status  int
		retries string
		stream  bool
		log     string
		wantLog []string // in the log; the prompt is not, unless logged is set
		logged  bool
	}{
		{name: "400", status: 400, retries: "0",
			wantLog: []string{`upstream 400 invalid_request_error code=flagged_prompt param=messages[0].content`, "log.upstream_error_messages"}},
		{name: "400 streamed", status: 400, retries: "0", stream: true, wantLog: []string{`"status":400`}},
		{name: "429 retried", status: 429, retries: "1",
			wantLog: []string{`"msg":"retrying upstream"`, `upstream 429 invalid_request_error code=flagged_prompt`}},
		{name: "the debug switch", status: 400, retries: "0", log: "log: {upstream_error_messages: true}", logged: true,
			wantLog: []string{"Invalid prompt"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			up := newUpstream(t, replayJSON(tt.status, []byte(upstreamBody)))
			g := startGateway(t, promptErrorConfig, map[string]string{"UP": up.v1(), "RETRIES": tt.retries, "LOG": tt.log})
			got := decodeError(t, g.chat("sk-alice", rawBody(t, userParams("gpt", prompt), tt.stream)))
			if !strings.Contains(got.Message, prompt) {
				t.Errorf("the client lost the upstream's message: %q", got.Message)
			}
			logs := g.logText()
			if strings.Contains(logs, prompt) != tt.logged {
				t.Errorf("prompt in the log = %v, want %v:\n%s", !tt.logged, tt.logged, logs)
			}
			for _, w := range tt.wantLog {
				if !strings.Contains(logs, w) {
					t.Errorf("the log lacks %q:\n%s", w, logs)
				}
			}
		})
	}
}

// TestApply_UnsafeTransportErrors: a reload that turns log.unsafe_transport_errors off
// stops credentials and bodies of unparsable requests reaching the log at once; one that
// turns it on says that it is partial until a restart.
func TestApply_UnsafeTransportErrors(t *testing.T) {
	const badRequest = "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n" +
		"Authorization: Bearer sk-very-secret\x01\r\nContent-Length: 26\r\n\r\n{\"prompt\":\"private words\"}"
	g := startGateway(t, "log: {unsafe_transport_errors: true}\n"+bodyLimitConfig, nil)
	logsSince := func(from int) string { return g.logText()[from:] }
	sendRaw(t, g, badRequest)
	eventually(t, "the verbatim transport error", func() bool { return strings.Contains(g.logText(), "sk-very-secret") })

	if err := g.srv.Apply(parseConfig(t, bodyLimitConfig, nil)); err != nil {
		t.Fatal(err)
	}
	from := len(g.logText())
	sendRaw(t, g, badRequest)
	eventually(t, "the transport error", func() bool { return strings.Contains(logsSince(from), "fasthttp") })
	for _, secret := range []string{"sk-very-secret", "private words"} {
		if logs := logsSince(from); strings.Contains(logs, secret) {
			t.Errorf("after the reload the log holds %q:\n%s", secret, logs)
		}
	}

	g2 := startGateway(t, bodyLimitConfig, nil)
	if err := g2.srv.Apply(parseConfig(t, "log: {unsafe_transport_errors: true}\n"+bodyLimitConfig, nil)); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(g2.logText(), "log.unsafe_transport_errors is on, but fasthttp's own messages quote no request bytes until a restart") {
		t.Errorf("no warning about the restart:\n%s", g2.logText())
	}
}

// TestApply_UpstreamErrorMessages: a reload applies log.upstream_error_messages, either way.
func TestApply_UpstreamErrorMessages(t *testing.T) {
	const prompt = "the merger with Initech closes on Friday"
	up := newUpstream(t, replayJSON(400, []byte(`{"error":{"message":"Invalid prompt: '`+prompt+`'","type":"invalid_request_error"}}`)))
	vars := func(log string) map[string]string {
		return map[string]string{"UP": up.v1(), "RETRIES": "0", "LOG": log}
	}
	g := startGateway(t, promptErrorConfig, vars(""))
	for i, on := range []bool{true, false} {
		log := ""
		if on {
			log = "log: {upstream_error_messages: true}"
		}
		if err := g.srv.Apply(parseConfig(t, promptErrorConfig, vars(log))); err != nil {
			t.Fatal(err)
		}
		from := len(g.logText())
		g.chat("sk-alice", rawBody(t, userParams("gpt", prompt), false))
		if logged := strings.Contains(g.logText()[from:], prompt); logged != on {
			t.Errorf("reload %d (upstream_error_messages: %v): prompt logged = %v:\n%s", i, on, logged, g.logText()[from:])
		}
	}
}

// sendRaw writes raw bytes to the gateway and reads the answer.
func sendRaw(t *testing.T, g *gateway, raw string) {
	t.Helper()
	c := dialGateway(t, g)
	io.WriteString(c, raw)
	readResponse(t, bufio.NewReader(c))
}
