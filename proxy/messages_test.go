package proxy

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/tidwall/gjson"
	"github.com/valyala/fasthttp"

	"github.com/agate-gateway/agate/tools"
)

// anthropicFixture reads a recorded Anthropic stream of testdata/fixtures (provenance in
// its SOURCES.md).
func anthropicFixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "testdata", "fixtures", "anthropic", "stream", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

const messagesPassConfig = `
backends:
  claude: {type: anthropic, base_url: "{{URL}}", api_key: upstream-secret, retries: {max: 0}}
models:
  m-claude: {backend: claude, upstream_model: claude-x}
keys:
  client: {key: client-key, models: ["*"]}
`

func (g *gateway) messages(body string, headers ...string) httpResult {
	return g.do("POST", "/v1/messages", "", []byte(body), append([]string{"x-api-key", "client-key"}, headers...)...)
}

// TestMessagesPassthrough_Stream: a recorded Anthropic stream reaches the Messages client
// event for event, message_start's model rewritten; an upstream error event is forwarded
// as it came and ends the stream; a stream cut before message_stop ends with an error
// event.
func TestMessagesPassthrough_Stream(t *testing.T) {
	t.Parallel() // nothing shared, no clock or environment of the process (#54)
	thinking := anthropicFixture(t, "thinking-exact-bytes.llm-anthropic.sse")
	overloaded := []byte("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"model\":\"claude-x\",\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":5,\"output_tokens\":1}}}\n\n" +
		"event: error\ndata: {\"type\":\"error\",\"error\":{\"details\":null,\"type\":\"overloaded_error\",\"message\":\"Overloaded\"} }\n\n")
	cut := thinking[:bytes.Index(thinking, []byte("event: message_delta"))]
	tests := []struct {
		name     string
		upstream []byte
		want     func(t *testing.T, got []byte)
		// wantTokens are the prompt and completion tokens counted (the recording's usage).
		wantTokens [2]float64
	}{
		{name: "recorded thinking stream", upstream: thinking, want: func(t *testing.T, got []byte) {
			wantStream := bytes.Replace(thinking, []byte(`"model":"claude-haiku-4-5-20251001"`), []byte(`"model":"m-claude"`), 1)
			if diff := cmp.Diff(string(wantStream), string(got)); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
		}, wantTokens: [2]float64{46, 133}},
		{name: "upstream error event", upstream: overloaded, want: func(t *testing.T, got []byte) {
			if !bytes.HasSuffix(got, []byte("event: error\ndata: {\"type\":\"error\",\"error\":{\"details\":null,\"type\":\"overloaded_error\",\"message\":\"Overloaded\"} }\n\n")) ||
				bytes.Count(got, []byte("event: error")) != 1 {
				t.Errorf("stream %s", got)
			}
		}},
		{name: "cut before message_stop", upstream: cut, want: func(t *testing.T, got []byte) {
			i := bytes.LastIndex(got, []byte("event: error\ndata: "))
			if i < 0 || gjson.GetBytes(got[i+len("event: error\ndata: "):], "error.type").Str != "api_error" {
				t.Errorf("stream ends %q", got[max(0, len(got)-300):])
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			up := newUpstream(t, replaySSE(tt.upstream))
			g := startGateway(t, messagesPassConfig, map[string]string{"URL": up.URL})
			r := g.messages(`{"model":"m-claude","max_tokens":100,"stream":true,"messages":[{"role":"user","content":"hi"}]}`)
			if r.status != 200 || !strings.HasPrefix(r.header.Get("Content-Type"), "text/event-stream") {
				t.Fatalf("%d %s", r.status, r.body)
			}
			tt.want(t, r.body)
			if tt.wantTokens != [2]float64{} {
				got := [2]float64{}
				for i, typ := range []string{"prompt", "completion"} {
					got[i] = g.metricValue("gateway_tokens_total", map[string]string{"model": "m-claude", "type": typ})
				}
				if got != tt.wantTokens {
					t.Errorf("tokens counted %v, want %v", got, tt.wantTokens)
				}
			}
		})
	}
}

// TestMessagesPassthrough_UpstreamStatus: an upstream refusal before the stream is an
// Anthropic-shaped error with the upstream's status class, and a rejected gateway
// credential is the gateway's fault (502), not the client's.
func TestMessagesPassthrough_UpstreamStatus(t *testing.T) {
	t.Parallel() // nothing shared, no clock or environment of the process (#54)
	tests := []struct {
		name       string
		status     int
		body       string
		wantStatus int
		wantType   string
	}{
		{name: "overloaded", status: 529, body: `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`, wantStatus: 503, wantType: "overloaded_error"},
		{name: "bad request", status: 400, body: `{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long"}}`, wantStatus: 400, wantType: "invalid_request_error"},
		{name: "gateway key rejected", status: 401, body: `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}`, wantStatus: 502, wantType: "api_error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			up := newUpstream(t, replayJSON(tt.status, []byte(tt.body)))
			g := startGateway(t, messagesPassConfig, map[string]string{"URL": up.URL})
			r := g.messages(`{"model":"m-claude","max_tokens":100,"stream":true,"messages":[{"role":"user","content":"hi"}]}`)
			got := fmt.Sprintf("%d %s", r.status, gjson.GetBytes(r.body, "error.type").Str)
			if diff := cmp.Diff(fmt.Sprintf("%d %s", tt.wantStatus, tt.wantType), got); diff != "" {
				t.Errorf("(-want +got)\n%s\n%s", diff, r.body)
			}
		})
	}
}

// clockTools is a ToolSet with one server tool, "clock".
type clockTools struct{}

func (clockTools) Call(context.Context, string, []byte) tools.Result {
	return tools.Result{Content: "12:00"}
}
func (clockTools) Resolve([]string) ([]tools.Definition, error) {
	return []tools.Definition{{Name: "clock", Source: "clock", Tool: "clock", Description: "the time", Parameters: []byte(`{"type":"object"}`)}}, nil
}
func (clockTools) Ready() error    { return nil }
func (clockTools) Degraded() error { return nil }

// TestMessages_ServerToolLoop: a key with server tools gets the tool loop on /v1/messages
// as on chat: the mock calls clock, the gateway runs it, and the client sees only the
// answer, as one well-formed Messages stream.
func TestMessages_ServerToolLoop(t *testing.T) {
	t.Parallel() // nothing shared, no clock or environment of the process (#54)
	g := startGatewayWith(t, `
backends:
  offline: {type: mock}
models:
  demo: {backend: offline}
keys:
  agent: {key: client-key, models: ["*"], tools: [clock]}
tools:
  clock: {type: builtin, name: time_now}
`, nil, gatewayOptions{tools: clockTools{}})
	r := g.messages(`{"model":"demo","max_tokens":100,"stream":true,"messages":[{"role":"user","content":"what does clock say"}]}`)
	if r.status != 200 {
		t.Fatalf("%d %s", r.status, r.body)
	}
	if !bytes.Contains(r.body, []byte(`" results:"`)) || !bytes.Contains(r.body, []byte(`12:00`)) || bytes.Contains(r.body, []byte(`"tool_use"`)) {
		t.Errorf("stream %s", r.body)
	}
	if n := bytes.Count(r.body, []byte("event: message_start")); n != 1 {
		t.Errorf("%d message_start events", n)
	}
	r = g.messages(`{"model":"demo","max_tokens":100,"messages":[{"role":"user","content":"what does clock say"}]}`)
	if got := gjson.GetBytes(r.body, "content.0.text").Str; r.status != 200 || !strings.Contains(got, "12:00") {
		t.Errorf("%d %s", r.status, r.body)
	}
}

// BenchmarkMessages measures, like BenchmarkProxy, a 200-event Messages stream from a
// loopback anthropic upstream through the raw byte-copy proxy (the floor), through Agate's
// anthropic passthrough, and through Agate's translated path (the same stream from an
// openai upstream, encoded as Messages events):
//
//	go test -run XXX -bench BenchmarkMessages -benchmem ./proxy/
func BenchmarkMessages(b *testing.B) {
	var anth bytes.Buffer
	anth.WriteString("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"model\":\"up-model\",\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":10,\"output_tokens\":1}}}\n\n")
	anth.WriteString("event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n")
	for i := range benchEvents {
		fmt.Fprintf(&anth, "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\" w%d\"}}\n\n", i)
	}
	anth.WriteString("event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n")
	anth.WriteString("event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":200}}\n\n")
	anth.WriteString("event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
	anthEvents := splitEvents(anth.Bytes())
	oai := newBenchUpstream(b) // 200 OpenAI chunks
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	srv := &fasthttp.Server{Handler: func(ctx *fasthttp.RequestCtx) {
		ctx.SetContentType("text/event-stream")
		ctx.SetBodyStreamWriter(func(w *bufio.Writer) {
			for _, ev := range anthEvents {
				w.Write(ev)
				if w.Flush() != nil {
					return
				}
			}
		})
	}}
	go srv.Serve(ln)
	b.Cleanup(func() { srv.Shutdown() })
	up := ln.Addr().String()
	raw := startRawProxy(b, up)
	g := startGatewayWith(b, `
backends:
  claude: {type: anthropic, base_url: "http://{{UP}}", api_key: k, retries: {max: 0}}
  oai: {type: openai, base_url: "http://{{OAI}}/v1", retries: {max: 0}}
models:
  m-claude: {backend: claude, upstream_model: up-model}
  m-oai: {backend: oai, upstream_model: up-model}
keys:
  bench: {key: sk-bench, models: ["*"]}
`, map[string]string{"UP": up, "OAI": oai.addr}, gatewayOptions{logOut: io.Discard})
	agate := strings.TrimPrefix(g.base, "http://")
	var floor benchResult
	for _, target := range []struct{ name, addr, model string }{
		{"raw", raw, "up-model"}, {"passthrough", agate, "m-claude"}, {"translated", agate, "m-oai"},
	} {
		body := `{"model":"` + target.model + `","max_tokens":1000,"stream":true,"messages":[{"role":"user","content":"hi"}]}`
		b.Run(target.name+"/stream200", func(b *testing.B) {
			r := runMessagesBench(b, target.addr, body)
			if target.name == "raw" {
				floor = r
				return
			}
			b.ReportMetric(r.cpuPerOp/floor.cpuPerOp, "cpu-x-raw")
			b.ReportMetric((r.nsPerOp-floor.nsPerOp)/benchEvents, "agate-ns/event")
			b.ReportMetric((r.allocsPerOp-floor.allocsPerOp)/benchEvents, "agate-allocs/event")
		})
	}
}

// runMessagesBench posts body to /v1/messages b.N times and reads each whole response.
func runMessagesBench(b *testing.B, addr, body string) benchResult {
	client := &fasthttp.Client{ReadBufferSize: 16 << 10}
	req := fasthttp.AcquireRequest()
	defer fasthttp.ReleaseRequest(req)
	req.Header.SetMethod("POST")
	req.SetRequestURI("http://" + addr + "/v1/messages")
	req.Header.Set("x-api-key", "sk-bench")
	req.Header.SetContentType("application/json")
	req.SetBodyString(body)
	resp := fasthttp.AcquireResponse()
	defer fasthttp.ReleaseResponse(resp)
	if err := client.Do(req, resp); err != nil || resp.StatusCode() != 200 || bytes.Count(resp.Body(), []byte("text_delta")) < benchEvents {
		b.Fatalf("warm-up: %v %d %s", err, resp.StatusCode(), resp.Body())
	}
	return measure(b, client, req, resp)
}

// TestMessagesTranslated_MidStreamFailure: a translated stream whose upstream stops before
// it finished ends with an Anthropic error event after the blocks already sent, and no
// message_stop.
func TestMessagesTranslated_MidStreamFailure(t *testing.T) {
	t.Parallel() // nothing shared, no clock or environment of the process (#54)
	cut := []byte("data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"up\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"Hel\"},\"finish_reason\":null}]}\n\n")
	up := newUpstream(t, replaySSE(cut))
	g := startGateway(t, `
backends:
  oai: {type: openai, base_url: "{{URL}}/v1", retries: {max: 0}}
models:
  m-oai: {backend: oai, upstream_model: up}
keys:
  client: {key: client-key, models: ["*"]}
`, map[string]string{"URL": up.URL})
	r := g.messages(`{"model":"m-oai","max_tokens":100,"stream":true,"messages":[{"role":"user","content":"hi"}]}`)
	if r.status != 200 {
		t.Fatalf("%d %s", r.status, r.body)
	}
	i := bytes.Index(r.body, []byte("event: error\ndata: "))
	if i < 0 || !bytes.Contains(r.body[:i], []byte(`"text":"Hel"`)) || bytes.Contains(r.body, []byte("message_stop")) {
		t.Fatalf("stream %s", r.body)
	}
	if typ := gjson.GetBytes(r.body[i+len("event: error\ndata: "):], "error.type").Str; typ != "api_error" {
		t.Errorf("error type %q", typ)
	}
}
