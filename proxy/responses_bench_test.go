package proxy

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"

	"github.com/valyala/fasthttp"
)

// BenchmarkResponses measures POST /v1/responses like BenchmarkProxy measures chat, for a
// non-stream request and a 200-delta stream: the raw byte-copy proxy (the floor), the
// passthrough to a responses backend, and the translated path (an OpenAI chat upstream
// answering 200 chunks, encoded as Responses events).
//
//	go test -run XXX -bench BenchmarkResponses -benchmem ./proxy/
func BenchmarkResponses(b *testing.B) {
	up := newBenchResponsesUpstream(b)
	chat := newBenchUpstream(b)
	raw := startRawProxy(b, up.addr)
	g := startGatewayWith(b, `
backends:
  up: {type: responses, base_url: "http://{{UP}}/v1", api_key: k, retries: {max: 0}}
  chat: {type: openai, base_url: "http://{{CHAT}}/v1", retries: {max: 0}}
models:
  gpt: {backend: up, upstream_model: up-model}
  via-chat: {backend: chat, upstream_model: up-model}
keys:
  bench: {key: sk-bench, models: ["*"]}
responses: {store: off}
`, map[string]string{"UP": up.addr, "CHAT": chat.addr}, gatewayOptions{logOut: io.Discard})
	agate := strings.TrimPrefix(g.base, "http://")
	floor := map[bool]benchResult{}
	for _, target := range []struct{ name, addr, model string }{
		{"raw", raw, "up-model"},
		{"passthrough", agate, "gpt"},
		{"translated-chat", agate, "via-chat"},
	} {
		for _, stream := range []bool{false, true} {
			kind := "nonstream"
			if stream {
				kind = "stream200"
			}
			body := fmt.Sprintf(`{"model":%q,"input":"hi","stream":%v}`, target.model, stream)
			b.Run(target.name+"/"+kind, func(b *testing.B) {
				r := runResponsesBench(b, target.addr, body, stream)
				if target.name == "raw" {
					floor[stream] = r
					return
				}
				f := floor[stream]
				b.ReportMetric(r.cpuPerOp/f.cpuPerOp, "cpu-x-raw")
				if stream {
					b.ReportMetric((r.nsPerOp-f.nsPerOp)/benchEvents, "agate-ns/event")
					b.ReportMetric((r.allocsPerOp-f.allocsPerOp)/benchEvents, "agate-allocs/event")
				} else {
					b.ReportMetric(r.allocsPerOp-f.allocsPerOp, "agate-allocs/op")
				}
			})
		}
	}
}

// benchResponsesUpstream answers Responses requests: a stream of 200 text deltas, or the
// Response object.
type benchResponsesUpstream struct {
	addr   string
	events [][]byte
	json   []byte
}

func newBenchResponsesUpstream(b *testing.B) *benchResponsesUpstream {
	u := &benchResponsesUpstream{}
	seq := 0
	ev := func(typ, rest string) {
		u.events = append(u.events, fmt.Appendf(nil, "event: %s\ndata: {\"type\":%q,\"sequence_number\":%d,%s}\n\n", typ, typ, seq, rest))
		seq++
	}
	head := `"id":"resp_b","object":"response","created_at":1,"model":"up-model","error":null,"incomplete_details":null`
	ev("response.created", `"response":{`+head+`,"status":"in_progress","output":[]}`)
	ev("response.output_item.added", `"output_index":0,"item":{"id":"msg_b","type":"message","status":"in_progress","role":"assistant","content":[]}`)
	ev("response.content_part.added", `"item_id":"msg_b","output_index":0,"content_index":0,"part":{"type":"output_text","annotations":[],"text":""}`)
	var text strings.Builder
	for i := range benchEvents {
		w := fmt.Sprintf("w%d ", i)
		text.WriteString(w)
		ev("response.output_text.delta", fmt.Sprintf(`"item_id":"msg_b","output_index":0,"content_index":0,"delta":%q`, w))
	}
	item := fmt.Sprintf(`{"id":"msg_b","type":"message","status":"completed","role":"assistant","content":[{"type":"output_text","annotations":[],"text":%q}]}`, text.String())
	ev("response.output_item.done", `"output_index":0,"item":`+item)
	resp := `{` + head + `,"status":"completed","output":[` + item + `],"usage":{"input_tokens":1,"input_tokens_details":{"cached_tokens":0},"output_tokens":200,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":201}}`
	ev("response.completed", `"response":`+resp)
	u.json = []byte(resp)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	u.addr = ln.Addr().String()
	srv := &fasthttp.Server{Handler: func(ctx *fasthttp.RequestCtx) {
		if bytes.Contains(ctx.PostBody(), []byte(`"stream":true`)) {
			ctx.SetContentType("text/event-stream")
			ctx.SetBodyStreamWriter(func(w *bufio.Writer) {
				for _, ev := range u.events {
					w.Write(ev)
					if w.Flush() != nil {
						return
					}
				}
			})
			return
		}
		ctx.SetContentType("application/json")
		ctx.SetBody(u.json)
	}}
	go srv.Serve(ln)
	b.Cleanup(func() { srv.Shutdown() })
	return u
}

// runResponsesBench is runBench for POST /v1/responses.
func runResponsesBench(b *testing.B, addr, body string, stream bool) benchResult {
	client := &fasthttp.Client{ReadBufferSize: 16 << 10}
	req := fasthttp.AcquireRequest()
	defer fasthttp.ReleaseRequest(req)
	req.Header.SetMethod("POST")
	req.SetRequestURI("http://" + addr + "/v1/responses")
	req.Header.Set("Authorization", "Bearer sk-bench")
	req.Header.SetContentType("application/json")
	req.SetBodyString(body)
	resp := fasthttp.AcquireResponse()
	defer fasthttp.ReleaseResponse(resp)
	if err := client.Do(req, resp); err != nil || resp.StatusCode() != 200 {
		b.Fatalf("warm-up: %v %d %s", err, resp.StatusCode(), resp.Body())
	}
	if stream {
		if n := bytes.Count(resp.Body(), []byte("output_text.delta")); n < 2*benchEvents {
			b.Fatalf("stream has %d deltas:\n%.2000s", n/2, resp.Body())
		}
	}
	r := measure(b, client, req, resp)
	if stream {
		b.ReportMetric(r.nsPerOp/benchEvents, "ns/event")
		b.ReportMetric(r.allocsPerOp/benchEvents, "allocs/event")
	}
	return r
}
