package proxy

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/valyala/fasthttp"
)

// BenchmarkHistory measures a non-stream request carrying a long agentic history (tools,
// parallel tool calls and their results, the shape of ../shared/bench's scenario d) on the
// client APIs besides chat, at 10 KB and 100 KB: the raw byte-copy proxy (the floor), the
// passthrough (Responses → responses backend, Messages → anthropic backend) and the
// translated path (Responses → anthropic, Messages → openai chat). Flat as the history
// grows means cpu-x-raw about the same at both sizes.
//
//	go test -run XXX -bench BenchmarkHistory -benchmem ./proxy/
func BenchmarkHistory(b *testing.B) {
	chat := newBenchUpstream(b) // chat completions and Anthropic Messages answers
	resp := newBenchResponsesUpstream(b)
	g := startGatewayWith(b, `
backends:
  resp: {type: responses, base_url: "http://{{RESP}}/v1", api_key: k, retries: {max: 0}}
  anth: {type: anthropic, base_url: "http://{{UP}}", api_key: k, retries: {max: 0}}
  chat: {type: openai, base_url: "http://{{UP}}/v1", retries: {max: 0}}
models:
  resp: {backend: resp, upstream_model: up-model}
  claude: {backend: anth, upstream_model: claude-up}
  gpt: {backend: chat, upstream_model: up-model}
keys:
  bench: {key: sk-bench, models: ["*"]}
responses: {store: off}
`, map[string]string{"UP": chat.addr, "RESP": resp.addr}, gatewayOptions{logOut: io.Discard})
	agate := strings.TrimPrefix(g.base, "http://")
	rawResp, rawChat := startRawProxy(b, resp.addr), startRawProxy(b, chat.addr)
	for _, api := range []struct {
		name, path, rawAddr, pass, translated string
	}{
		{"responses", "/v1/responses", rawResp, "resp", "claude"},
		{"messages", "/v1/messages", rawChat, "claude", "gpt"},
	} {
		for _, kb := range []int{10, 100} {
			var floor benchResult
			for _, target := range []struct{ name, addr, model string }{
				{"raw", api.rawAddr, "up-model"},
				{"passthrough", agate, api.pass},
				{"translated", agate, api.translated},
			} {
				body := historyBody(api.name, target.model, kb)
				b.Run(fmt.Sprintf("%s/%dKB/%s", api.name, kb, target.name), func(b *testing.B) {
					b.SetBytes(int64(len(body)))
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

// runPathBench posts body to path b.N times, as a Messages client (x-api-key) on
// /v1/messages and with a bearer token elsewhere, and reads each whole response.
func runPathBench(b *testing.B, addr, path string, body []byte) benchResult {
	client := &fasthttp.Client{ReadBufferSize: 16 << 10}
	req := fasthttp.AcquireRequest()
	defer fasthttp.ReleaseRequest(req)
	req.Header.SetMethod("POST")
	req.SetRequestURI("http://" + addr + path)
	if path == "/v1/messages" {
		req.Header.Set("x-api-key", "sk-bench")
		req.Header.Set("anthropic-version", "2023-06-01")
	} else {
		req.Header.Set("Authorization", "Bearer sk-bench")
	}
	req.Header.SetContentType("application/json")
	req.SetBody(body)
	resp := fasthttp.AcquireResponse()
	defer fasthttp.ReleaseResponse(resp)
	if err := client.Do(req, resp); err != nil || resp.StatusCode() != 200 {
		b.Fatalf("warm-up: %v %d %.500s", err, resp.StatusCode(), resp.Body())
	}
	return measure(b, client, req, resp)
}

// historyBody is a Responses or Messages request of about kb KB: instructions or system,
// three function tools, then turns of a user question, two parallel tool calls, their
// results and an assistant answer, and a closing question (../shared/bench's scenario d
// conversation, in each API's shape as its SDKs write it).
func historyBody(api, model string, kb int) []byte {
	type tool struct{ name, desc, params string }
	tools := []tool{
		{"get_weather", "Get the current weather and a three day forecast for a city.",
			`{"type":"object","properties":{"city":{"type":"string","description":"City name, e.g. Paris"},"unit":{"type":"string","description":"celsius or fahrenheit"}},"required":["city"]}`},
		{"search_docs", "Full-text search over the internal engineering documentation.",
			`{"type":"object","properties":{"query":{"type":"string","description":"Search query"},"limit":{"type":"integer","description":"Maximum number of hits"}},"required":["query"]}`},
		{"run_sql", "Run a read-only SQL query against the analytics warehouse and return rows as JSON.",
			`{"type":"object","properties":{"sql":{"type":"string","description":"A single SELECT statement"},"timeout_s":{"type":"integer","description":"Timeout in seconds"}},"required":["sql"]}`},
	}
	q := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	system := "You are an operations assistant for a bicycle rental company. Use the tools when you need live data. " +
		"Always cite the tool results you rely on, keep answers short, and never invent numbers."
	var items []string // input items or messages
	cities := []string{"Paris", "Amsterdam", "Copenhagen", "Berlin", "Utrecht", "Vienna", "Lyon", "Ghent", "Munich", "Basel"}
	size := 0
	for turn := 0; size < kb*1024-600; turn++ {
		city := cities[turn%len(cities)]
		question := q(fmt.Sprintf("How many bikes were rented in %s last week, and will the weather be good enough for the weekend promotion?", city))
		sql := fmt.Sprintf(`{"sql":"SELECT day, count(*) AS rentals FROM rentals WHERE city = '%s' GROUP BY day ORDER BY day","timeout_s":10}`, city)
		weather := fmt.Sprintf(`{"city":"%s","unit":"celsius"}`, city)
		rows := `[{"day":"2025-06-02","rentals":412},{"day":"2025-06-03","rentals":388},{"day":"2025-06-04","rentals":455},` +
			`{"day":"2025-06-05","rentals":501},{"day":"2025-06-06","rentals":610},{"day":"2025-06-07","rentals":702}]`
		forecast := fmt.Sprintf(`{"city":"%s","now":{"temp_c":21,"sky":"partly cloudy"},"forecast":[{"day":"Sat","high_c":25,"rain_mm":0},{"day":"Sun","high_c":19,"rain_mm":4}]}`, city)
		answer := q(fmt.Sprintf("Rentals in %s last week totalled 3,723, peaking at 702 on Saturday; the promotion should run Friday to Saturday.", city))
		id1, id2 := fmt.Sprintf("call_%02dA7Hc9WbQm2", turn), fmt.Sprintf("call_%02dKx3PzR8Lt5", turn)
		switch api {
		case "responses":
			items = append(items, `{"role":"user","content":`+question+`}`,
				`{"type":"function_call","call_id":"`+id1+`","name":"run_sql","arguments":`+q(sql)+`}`,
				`{"type":"function_call","call_id":"`+id2+`","name":"get_weather","arguments":`+q(weather)+`}`,
				`{"type":"function_call_output","call_id":"`+id1+`","output":`+q(rows)+`}`,
				`{"type":"function_call_output","call_id":"`+id2+`","output":`+q(forecast)+`}`,
				`{"role":"assistant","content":`+answer+`}`)
		default:
			u1, u2 := "toolu_"+id1[5:], "toolu_"+id2[5:]
			items = append(items, `{"role":"user","content":`+question+`}`,
				`{"role":"assistant","content":[{"type":"tool_use","id":"`+u1+`","name":"run_sql","input":`+sql+`},`+
					`{"type":"tool_use","id":"`+u2+`","name":"get_weather","input":`+weather+`}]}`,
				`{"role":"user","content":[{"type":"tool_result","tool_use_id":"`+u1+`","content":`+q(rows)+`},`+
					`{"type":"tool_result","tool_use_id":"`+u2+`","content":`+q(forecast)+`}]}`,
				`{"role":"assistant","content":`+answer+`}`)
		}
		size = 0
		for _, it := range items {
			size += len(it) + 1
		}
	}
	items = append(items, `{"role":"user","content":"Summarise all of the above in three bullet points for the weekly report."}`)
	var b strings.Builder
	b.WriteString(`{"model":` + q(model))
	switch api {
	case "responses":
		b.WriteString(`,"instructions":` + q(system) + `,"input":[` + strings.Join(items, ",") + `],"tools":[`)
		for i, t := range tools {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(`{"type":"function","name":"` + t.name + `","description":` + q(t.desc) + `,"parameters":` + t.params + `,"strict":false}`)
		}
		b.WriteString(`],"tool_choice":"auto","max_output_tokens":2048,"temperature":0.2,"store":false}`)
	default:
		b.WriteString(`,"system":` + q(system) + `,"messages":[` + strings.Join(items, ",") + `],"tools":[`)
		for i, t := range tools {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(`{"name":"` + t.name + `","description":` + q(t.desc) + `,"input_schema":` + t.params + `}`)
		}
		b.WriteString(`],"tool_choice":{"type":"auto"},"max_tokens":2048,"temperature":0.2}`)
	}
	return []byte(b.String())
}
