package proxy

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// scrapeTokens reads gateway_tokens_total for model from the gateway's /metrics page, by
// token type.
func scrapeTokens(t *testing.T, g *gateway, model string) map[string]float64 {
	t.Helper()
	r := g.do("GET", "/metrics", "", nil)
	if r.status != 200 {
		t.Fatalf("/metrics: status %d", r.status)
	}
	out := map[string]float64{}
	for _, line := range strings.Split(string(r.body), "\n") {
		rest, ok := strings.CutPrefix(line, "gateway_tokens_total{")
		if !ok || !strings.Contains(rest, `model="`+model+`"`) {
			continue
		}
		labels, value, _ := strings.Cut(rest, "} ")
		i := strings.Index(labels, `type="`)
		if i < 0 {
			continue
		}
		typ, _, _ := strings.Cut(labels[i+len(`type="`):], `"`)
		v, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if err != nil {
			t.Fatalf("metric line %q: %v", line, err)
		}
		out[typ] += v
	}
	return out
}

// accessLog returns the "chat completion" log record of the gateway's logs.
func accessLog(t *testing.T, g *gateway) map[string]any {
	t.Helper()
	if lines := accessLines(t, g.logText()); len(lines) > 0 {
		return lines[0]
	}
	return nil
}

// TestPassthrough_UsageCounted: the usage of a non-streamed passthrough answer is counted
// in /metrics and the access log however the upstream lays out its JSON (the real OpenAI
// API pretty-prints: "usage": {).
func TestPassthrough_UsageCounted(t *testing.T) {
	t.Parallel()                                     // nothing shared, no clock or environment of the process (#54)
	pretty := fixture(t, "json/text.mirascope.json") // prompt 16, completion 12
	var compact bytes.Buffer
	if err := json.Compact(&compact, pretty); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		body []byte
	}{
		{name: "pretty-printed as OpenAI sends it", body: pretty},
		{name: "compact", body: compact.Bytes()},
	} {
		t.Run(tt.name, func(t *testing.T) {
			up := newUpstream(t, replayJSON(200, tt.body))
			g := passthroughGateway(t, up)
			if r := g.chat("sk-alice", rawBody(t, userParams("gpt", "What is 4200 + 42?"), false)); r.status != 200 {
				t.Fatalf("status %d: %s", r.status, r.body)
			}
			want := map[string]float64{"prompt": 16, "completion": 12}
			if diff := cmp.Diff(want, scrapeTokens(t, g, "gpt")); diff != "" {
				t.Errorf("/metrics tokens (-want +got):\n%s", diff)
			}
			rec := accessLog(t, g)
			if rec == nil || rec["prompt_tokens"] != 16.0 || rec["completion_tokens"] != 12.0 {
				t.Errorf("access log %v lacks prompt_tokens 16 and completion_tokens 12", rec)
			}
		})
	}
}

// TestStream_AbortedCountsReportedUsage: a client that leaves mid-stream still has the
// tokens the upstream had reported counted, in /metrics and the access log (status 499):
// an OpenAI-compatible upstream reporting usage on every chunk (vLLM's continuous usage
// stats), Anthropic's message_start, Gemini's usageMetadata. Each upstream goes on
// streaming until the gateway, failing to write to the client, hangs up. Anthropic's
// message_start counts no output, so the deltas read after it are estimated: at least
// its 1 and 1 for "Hi", and flagged (usage.go); the others' figures count every delta.
func TestStream_AbortedCountsReportedUsage(t *testing.T) {
	t.Parallel() // nothing shared, no clock or environment of the process (#54)
	tests := []struct {
		name, kind, upstreamModel string
		first, more               string // the events before and after the client leaves
		want                      map[string]float64
		estimated                 bool // the completion is estimated: at least want's
	}{
		{name: "openai passthrough", kind: "openai", upstreamModel: "gpt-4o",
			first: `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1700000000,"model":"gpt-4o","choices":[{"index":0,"delta":{"role":"assistant","content":"Hi"},"finish_reason":null}],"usage":{"prompt_tokens":7,"completion_tokens":1,"total_tokens":8}}` + "\n\n",
			more:  `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1700000000,"model":"gpt-4o","choices":[{"index":0,"delta":{"content":" more"},"finish_reason":null}],"usage":{"prompt_tokens":7,"completion_tokens":1,"total_tokens":8}}` + "\n\n",
			want:  map[string]float64{"prompt": 7, "completion": 1}},
		{name: "anthropic", kind: "anthropic", upstreamModel: "claude-sonnet-4-0",
			first: "event: message_start\ndata: " + `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-0","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":25,"output_tokens":1}}}` + "\n\n" +
				"event: content_block_start\ndata: " + `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}` + "\n\n" +
				"event: content_block_delta\ndata: " + `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}}` + "\n\n",
			more: "event: content_block_delta\ndata: " + `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":" more"}}` + "\n\n",
			want: map[string]float64{"prompt": 25, "completion": 2}, estimated: true},
		{name: "gemini", kind: "gemini", upstreamModel: "gemini-2.5-flash",
			first: "data: " + `{"candidates":[{"content":{"parts":[{"text":"Hi"}],"role":"model"},"index":0}],"usageMetadata":{"promptTokenCount":9,"candidatesTokenCount":1,"totalTokenCount":10},"modelVersion":"gemini-2.5-flash"}` + "\r\n\r\n",
			more:  "data: " + `{"candidates":[{"content":{"parts":[{"text":" more"}],"role":"model"},"index":0}],"usageMetadata":{"promptTokenCount":9,"candidatesTokenCount":2,"totalTokenCount":11},"modelVersion":"gemini-2.5-flash"}` + "\r\n\r\n",
			want:  map[string]float64{"prompt": 9, "completion": 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clientLeft := make(chan struct{})
			up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				w.WriteHeader(200)
				f := w.(http.Flusher)
				io.WriteString(w, tt.first)
				f.Flush()
				<-clientLeft
				for i := 0; i < 1_000_000; i++ { // until the gateway hangs up
					if _, err := io.WriteString(w, tt.more); err != nil || r.Context().Err() != nil {
						return
					}
					f.Flush()
				}
			})
			base := up.URL
			if tt.kind == "openai" {
				base = up.v1()
			}
			g := startGateway(t, `
backends:
  up: {type: `+tt.kind+`, base_url: "{{UP}}", api_key: upstream-secret, retries: {max: 0}}
models:
  m: {backend: up, upstream_model: `+tt.upstreamModel+`}
keys:
  alice: {key: sk-alice, models: ["*"]}
`, map[string]string{"UP": base})

			conn, err := net.Dial("tcp", strings.TrimPrefix(g.base, "http://"))
			if err != nil {
				t.Fatal(err)
			}
			body := rawBody(t, userParams("m", "hi"), true)
			fmt.Fprintf(conn, "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer sk-alice\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
			br := bufio.NewReader(conn)
			for { // read up to the first data line, then leave
				line, err := br.ReadString('\n')
				if err != nil {
					t.Fatalf("reading the stream: %v", err)
				}
				if strings.HasPrefix(line, "data: ") {
					break
				}
			}
			conn.Close()
			close(clientLeft)

			eventually(t, "the aborted request to be logged", func() bool { return accessLog(t, g) != nil })
			rec := accessLog(t, g)
			got := scrapeTokens(t, g, "m")
			if tt.estimated && got["completion"] >= tt.want["completion"] {
				tt.want["completion"] = got["completion"] // the deltas read before the gateway hung up
			}
			if rec["status"] != 499.0 || rec["prompt_tokens"] != tt.want["prompt"] || rec["completion_tokens"] != tt.want["completion"] ||
				(rec["usage_estimated"] == true) != tt.estimated {
				t.Errorf("access log %v, want status 499, tokens %v, usage_estimated %v", rec, tt.want, tt.estimated)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("/metrics tokens (-want +got):\n%s", diff)
			}
		})
	}
}
