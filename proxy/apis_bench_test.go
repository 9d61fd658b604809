package proxy

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"testing"

	"github.com/valyala/fasthttp"
)

// BenchmarkAPIs measures the three client APIs side by side in one gateway, with the
// request and answer shapes of ../shared/bench's scenarios b (a small request) and d (a
// ~10 KB history with tools and tool calls) for each API (testdata/bench/apis, SOURCES.md):
// chat, Responses and Messages, each passed through (openai, responses, anthropic
// backends) and translated (chat and Responses to anthropic, Messages to openai chat), the
// upstream answering non-stream with the bench mock's bodies. Run it with -cpuprofile to
// split what one API costs more than another by function:
//
//	go test -run '^$' -bench BenchmarkAPIs -benchmem ./proxy/
func BenchmarkAPIs(b *testing.B) {
	up := newAPIsUpstream(b)
	raw := startRawProxy(b, up)
	g := startGatewayWith(b, `
backends:
  chat: {type: openai, base_url: "http://{{UP}}/v1", retries: {max: 0}}
  resp: {type: responses, base_url: "http://{{UP}}/v1", api_key: k, retries: {max: 0}}
  anth: {type: anthropic, base_url: "http://{{UP}}", api_key: k, retries: {max: 0}}
models:
  chat-pass: {backend: chat, upstream_model: oai-bench}
  resp-pass: {backend: resp, upstream_model: resp-bench}
  claude: {backend: anth, upstream_model: claude-bench}
keys:
  bench: {key: sk-bench, models: ["*"]}
responses: {store: off}
`, map[string]string{"UP": up}, gatewayOptions{logOut: io.Discard})
	agate := strings.TrimPrefix(g.base, "http://")
	for _, shape := range []string{"small", "10kb"} {
		for _, api := range []struct{ name, path, pass, translated string }{
			{"chat", "/v1/chat/completions", "chat-pass", "claude"},
			{"responses", "/v1/responses", "resp-pass", "claude"},
			{"messages", "/v1/messages", "claude", "chat-pass"},
		} {
			body, err := os.ReadFile("testdata/bench/apis/" + api.name + "-" + shape + ".json")
			if err != nil {
				b.Fatal(err)
			}
			var floor benchResult
			for _, target := range []struct{ name, addr, model string }{
				{"raw", raw, map[string]string{"chat": "oai-bench", "responses": "resp-bench", "messages": "claude-bench"}[api.name]},
				{"passthrough", agate, api.pass},
				{"translated", agate, api.translated},
			} {
				body := bytes.Replace(body, []byte(`"model":"MODEL"`), []byte(`"model":"`+target.model+`"`), 1)
				b.Run(fmt.Sprintf("%s/%s/%s", shape, api.name, target.name), func(b *testing.B) {
					r := runPathBench(b, target.addr, api.path, body)
					if target.name == "raw" {
						floor = r
						return
					}
					b.ReportMetric(r.cpuPerOp/floor.cpuPerOp, "cpu-x-raw")
					b.ReportMetric(r.allocsPerOp-floor.allocsPerOp, "agate-allocs/op")
				})
			}
		}
	}
}

// newAPIsUpstream is a loopback fasthttp server answering chat completions, Responses and
// Messages requests non-stream with the bench mock's bodies, and returns its address.
func newAPIsUpstream(b *testing.B) string {
	answers := map[string][]byte{}
	for path, file := range map[string]string{"/v1/chat/completions": "chat", "/v1/responses": "responses", "/v1/messages": "anthropic"} {
		body, err := os.ReadFile("testdata/bench/apis/" + file + "-answer.json")
		if err != nil {
			b.Fatal(err)
		}
		answers[path] = body
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	srv := &fasthttp.Server{Handler: func(ctx *fasthttp.RequestCtx) {
		body, ok := answers[string(ctx.Path())]
		if !ok {
			ctx.Error("not found", 404)
			return
		}
		ctx.SetContentType("application/json")
		ctx.SetBody(body)
	}}
	go srv.Serve(ln)
	b.Cleanup(func() { srv.Shutdown() })
	return ln.Addr().String()
}
