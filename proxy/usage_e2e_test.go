package proxy

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// The tests of this file hold the gateway to its charge of an answer the upstream did not
// report the usage of (usage.go): a stream the client left before the final usage, an
// upstream that reports none. They run every client API against every backend type on
// fake upstreams that stream an answer of many small deltas.

// usageDelta is the text of every delta of the fake answers: 4 bytes, one token by the
// gateway's estimate (messagesin.EstimateOutputTokens).
const usageDelta = "abcd"

// fakeAnswer is a streamed answer of n deltas in the wire format of a backend type, with
// the upstream's usage (prompt 10, completion one token a delta) or none.
type fakeAnswer struct {
	kind    string // openai, anthropic, gemini, responses
	n       int
	noUsage bool
}

// head is what comes before the first delta.
func (a fakeAnswer) head() string {
	switch a.kind {
	case "openai":
		return `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1761175225,"model":"up","choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}` + "\n\n"
	case "anthropic":
		return "event: message_start\ndata: " + `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"up","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":10,"output_tokens":1}}}` + "\n\n" +
			"event: content_block_start\ndata: " + `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}` + "\n\n"
	case "responses":
		head := `"id":"resp_1","object":"response","created_at":1761175225,"model":"up"`
		return "event: response.created\ndata: " + `{"type":"response.created","sequence_number":0,"response":{` + head + `,"status":"in_progress","output":[],"usage":null}}` + "\n\n" +
			"event: response.output_item.added\ndata: " + `{"type":"response.output_item.added","sequence_number":1,"output_index":0,"item":{"id":"msg_1","type":"message","status":"in_progress","role":"assistant","content":[]}}` + "\n\n" +
			"event: response.content_part.added\ndata: " + `{"type":"response.content_part.added","sequence_number":2,"item_id":"msg_1","output_index":0,"content_index":0,"part":{"type":"output_text","annotations":[],"text":""}}` + "\n\n"
	}
	return "" // gemini: every chunk is a delta
}

// delta is the i-th delta (from 0). Gemini's carries the cumulative usage, as Gemini
// sends it on every chunk.
func (a fakeAnswer) delta(i int) string {
	switch a.kind {
	case "openai":
		return `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1761175225,"model":"up","choices":[{"index":0,"delta":{"content":"` + usageDelta + `"},"logprobs":null,"finish_reason":null}]}` + "\n\n"
	case "anthropic":
		return "event: content_block_delta\ndata: " + `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"` + usageDelta + `"}}` + "\n\n"
	case "gemini":
		return "data: " + `{"candidates":[{"content":{"parts":[{"text":"` + usageDelta + `"}],"role":"model"},"index":0}]` + a.geminiUsage(i+1) + `,"modelVersion":"up"}` + "\r\n\r\n"
	case "responses":
		return "event: response.output_text.delta\ndata: " + fmt.Sprintf(`{"type":"response.output_text.delta","sequence_number":%d,"item_id":"msg_1","output_index":0,"content_index":0,"delta":"%s"}`, 3+i, usageDelta) + "\n\n"
	}
	return ""
}

func (a fakeAnswer) geminiUsage(completion int) string {
	if a.noUsage {
		return ""
	}
	return fmt.Sprintf(`,"usageMetadata":{"promptTokenCount":10,"candidatesTokenCount":%d,"totalTokenCount":%d}`, completion, 10+completion)
}

// tail is what comes after the last delta: the end of the answer and its usage.
func (a fakeAnswer) tail() string {
	text := strings.Repeat(usageDelta, a.n)
	switch a.kind {
	case "openai":
		s := `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1761175225,"model":"up","choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}]}` + "\n\n"
		if !a.noUsage {
			s += fmt.Sprintf(`data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1761175225,"model":"up","choices":[],"usage":{"prompt_tokens":10,"completion_tokens":%d,"total_tokens":%d}}`, a.n, 10+a.n) + "\n\n"
		}
		return s + "data: [DONE]\n\n"
	case "anthropic":
		return "event: content_block_stop\ndata: " + `{"type":"content_block_stop","index":0}` + "\n\n" +
			"event: message_delta\ndata: " + fmt.Sprintf(`{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":%d}}`, a.n) + "\n\n" +
			"event: message_stop\ndata: " + `{"type":"message_stop"}` + "\n\n"
	case "gemini":
		return "data: " + `{"candidates":[{"content":{"parts":[{"text":""}],"role":"model"},"finishReason":"STOP","index":0}]` + a.geminiUsage(a.n) + `,"modelVersion":"up"}` + "\r\n\r\n"
	case "responses":
		seq := 3 + a.n
		ev := func(typ, data string) string {
			s := fmt.Sprintf("event: %s\ndata: {\"type\":%q,\"sequence_number\":%d,%s}\n\n", typ, typ, seq, data)
			seq++
			return s
		}
		item := `{"id":"msg_1","type":"message","status":"completed","role":"assistant","content":[{"type":"output_text","annotations":[],"text":"` + text + `"}]}`
		usage := "null"
		if !a.noUsage {
			usage = fmt.Sprintf(`{"input_tokens":10,"input_tokens_details":{"cached_tokens":0},"output_tokens":%d,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":%d}`, a.n, 10+a.n)
		}
		return ev("response.output_text.done", `"item_id":"msg_1","output_index":0,"content_index":0,"text":"`+text+`"`) +
			ev("response.content_part.done", `"item_id":"msg_1","output_index":0,"content_index":0,"part":{"type":"output_text","annotations":[],"text":"`+text+`"}`) +
			ev("response.output_item.done", `"output_index":0,"item":`+item) +
			ev("response.completed", `"response":{"id":"resp_1","object":"response","created_at":1761175225,"model":"up","status":"completed","output":[`+item+`],"usage":`+usage+`}`)
	}
	return ""
}

// serve streams the answer. With held > 0 it writes the head and the first held deltas,
// waits until the test says the client has left (left), then writes the other deltas a
// few milliseconds apart, each flushed, as a model does, and the tail last: the gateway,
// failing to write to the client, hangs up before the final usage.
func (a fakeAnswer) serve(held int, left <-chan struct{}) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(200)
		f := w.(http.Flusher)
		var b strings.Builder
		b.WriteString(a.head())
		i := 0
		for ; i < a.n && (held == 0 || i < held); i++ {
			b.WriteString(a.delta(i))
		}
		io.WriteString(w, b.String())
		f.Flush()
		if held > 0 {
			select {
			case <-left:
			case <-r.Context().Done():
				return
			case <-time.After(10 * time.Second): // a guard against a hung test
			}
			for ; i < a.n; i++ {
				time.Sleep(20 * time.Millisecond)
				if _, err := io.WriteString(w, a.delta(i)); err != nil || r.Context().Err() != nil {
					return
				}
				f.Flush()
			}
		}
		io.WriteString(w, a.tail())
	}
}

// usageClient is one client API of the tests: its path and a streamed request body.
type usageClient struct {
	api, path string
	body      func(model string) string
}

var usageClients = []usageClient{
	{api: "chat", path: "/v1/chat/completions", body: func(m string) string {
		return `{"model":"` + m + `","stream":true,"messages":[{"role":"user","content":"hi"}]}`
	}},
	{api: "responses", path: "/v1/responses", body: func(m string) string {
		return `{"model":"` + m + `","stream":true,"input":"hi"}`
	}},
	{api: "messages", path: "/v1/messages", body: func(m string) string {
		return `{"model":"` + m + `","stream":true,"max_tokens":1000,"messages":[{"role":"user","content":"hi"}]}`
	}},
}

// streamDeltas sends a streamed request of client on a raw connection and reads its
// answer until it has seen stop deltas (0: to the end), then closes the connection. It
// returns the status and the number of deltas read.
func streamDeltas(t *testing.T, g *gateway, client usageClient, key, model string, stop int) (status, deltas int) {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(g.base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(20 * time.Second)) // a guard against a hung test
	body := client.body(model)
	fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s",
		client.path, key, len(body), body)
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("reading the answer: %v", err)
	}
	// Not resp.Body.Close, which would read the rest: the connection's close leaves.
	if resp.StatusCode != 200 {
		io.Copy(io.Discard, resp.Body)
		return resp.StatusCode, 0
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "data: ") && strings.Contains(sc.Text(), `"`+usageDelta+`"`) {
			deltas++
			if deltas == stop {
				return 200, deltas
			}
		}
	}
	return 200, deltas
}

// usageRecords returns the access lines of the gateway's logs: "chat completion" (chat,
// messages) and "response" (responses).
func usageRecords(t *testing.T, g *gateway) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range strings.Split(g.logText(), "\n") {
		var rec map[string]any
		if json.Unmarshal([]byte(line), &rec) == nil && (rec["msg"] == "chat completion" || rec["msg"] == "response") {
			out = append(out, rec)
		}
	}
	return out
}

// usageGateway serves model m on a backend of kind at base, for key alice with a token
// budget (none when budget is 0).
func usageGateway(t *testing.T, kind, base string, budget int) *gateway {
	limit := ""
	if budget > 0 {
		limit = fmt.Sprintf(", budget: {tokens: %d, period: 24h}", budget)
	}
	return startGateway(t, `
backends:
  up: {type: `+kind+`, base_url: "{{UP}}", api_key: upstream-secret, retries: {max: 0}}
models:
  m: {backend: up, upstream_model: up}
keys:
  alice: {key: sk-alice, models: ["*"]`+limit+`}
`, map[string]string{"UP": base})
}

// TestUsage_ClientLeavingBeforeTheUsageIsCharged: with a 100-token budget, a client that
// reads 50 of an answer's 60 deltas and closes the connection before the final usage is
// charged what it was sent (the upstream's figures where it reported them, else the
// gateway's estimate, flagged), so the budget refuses it after two such answers (some 60
// tokens each) rather than serving every one for free. Every client API on every backend
// type, the passthroughs (chat on openai, responses on responses, messages on anthropic)
// included.
func TestUsage_ClientLeavingBeforeTheUsageIsCharged(t *testing.T) {
	const answerDeltas, readDeltas, tries = 60, 50, 5
	for _, client := range usageClients {
		for _, kind := range []string{"openai", "anthropic", "gemini", "responses"} {
			t.Run(client.api+" on "+kind, func(t *testing.T) {
				left := make(chan struct{}, tries)
				up := newUpstream(t, fakeAnswer{kind: kind, n: answerDeltas}.serve(readDeltas, left))
				base := up.URL
				if kind == "openai" || kind == "responses" {
					base = up.v1()
				}
				g := usageGateway(t, kind, base, 100)
				full, refused := 0, 0
				remaining := func() float64 {
					return g.metricValue("gateway_budget_remaining", map[string]string{"key": "alice", "unit": "tokens"})
				}
				for i := range tries {
					status, deltas := streamDeltas(t, g, client, "sk-alice", "m", readDeltas)
					switch {
					case status == 429:
						refused++
						continue
					case status != 200 || deltas != readDeltas:
						t.Fatalf("request %d: status %d after %d deltas", i+1, status, deltas)
					}
					full++
					admitted := remaining() // as of the admission; the upstream holds the rest
					left <- struct{}{}
					// The charge lands once the gateway has noticed the client left: wait for
					// the budget to move (on a gateway that charges nothing it never does).
					// A budget the admission's reservation already took to 0 cannot move:
					// wait for the answer's access line instead of the whole 3 seconds.
					charged := func() bool {
						if admitted == 0 {
							return len(usageRecords(t, g)) >= full
						}
						return remaining() != admitted
					}
					for end := time.Now().Add(3 * time.Second); time.Now().Before(end) && !charged(); {
						time.Sleep(10 * time.Millisecond)
					}
				}
				t.Logf("100-token budget: %d of %d answers read to their 50th delta, %d refused", full, tries, refused)
				if full != 2 || refused != tries-2 {
					t.Errorf("with a 100-token budget the client read %d answers to their 50th delta and was refused %d times; want 2 and %d", full, refused, tries-2)
				}
				recs := usageRecords(t, g)
				if len(recs) == 0 {
					t.Fatal("no access line")
				}
				rec := recs[0]
				prompt, completion := rec["prompt_tokens"].(float64), rec["completion_tokens"].(float64)
				// The upstream's figures where it sent them before the deltas (Anthropic's
				// message_start, Gemini's every chunk), else the estimate of "hi" (a
				// message and a token).
				wantPrompt := 5.0
				if kind == "anthropic" || kind == "gemini" {
					wantPrompt = 10
				}
				if prompt != wantPrompt || completion < readDeltas || completion > answerDeltas+1 {
					t.Errorf("first answer charged prompt %v completion %v; want prompt %v and completion within [%d, %d]: %v",
						prompt, completion, wantPrompt, readDeltas, answerDeltas+1, rec)
				}
				// Gemini's usage on every chunk counts every delta read: nothing to estimate.
				wantEstimated := kind != "gemini"
				if got := rec["usage_estimated"] == true; got != wantEstimated {
					t.Errorf("usage_estimated %v, want %v: %v", rec["usage_estimated"], wantEstimated, rec)
				}
				estimated := g.metricValue("gateway_usage_estimated_total", map[string]string{"model": "m", "backend": "up", "key": "alice"})
				if want := map[bool]float64{true: 2, false: 0}[wantEstimated]; estimated != want {
					t.Errorf("gateway_usage_estimated_total = %v, want %v", estimated, want)
				}
				if tokens := scrapeTokens(t, g, "m"); tokens["completion"] < 2*readDeltas {
					t.Errorf("gateway_tokens_total %v, want at least %d completion tokens", tokens, 2*readDeltas)
				}
			})
		}
	}
}

// TestUsage_UpstreamWithoutUsageIsEstimated: an upstream that answers in full but reports
// no usage (an OpenAI-compatible server that ignores stream_options, a Responses server
// with a null usage, Gemini without usageMetadata) is charged the estimate of the prompt
// and of every delta, flagged in the access line and gateway_usage_estimated_total.
func TestUsage_UpstreamWithoutUsageIsEstimated(t *testing.T) {
	t.Parallel() // its own gateway, fakes and servers (#54)
	const answerDeltas = 60
	for _, client := range usageClients {
		for _, kind := range []string{"openai", "gemini", "responses"} {
			t.Run(client.api+" on "+kind, func(t *testing.T) {
				up := newUpstream(t, fakeAnswer{kind: kind, n: answerDeltas, noUsage: true}.serve(0, nil))
				base := up.URL
				if kind != "gemini" {
					base = up.v1()
				}
				g := usageGateway(t, kind, base, 1000)
				status, deltas := streamDeltas(t, g, client, "sk-alice", "m", 0)
				if status != 200 || deltas != answerDeltas {
					t.Fatalf("status %d, %d deltas; want 200 and %d", status, deltas, answerDeltas)
				}
				eventually(t, "the access line", func() bool { return len(usageRecords(t, g)) > 0 })
				rec := usageRecords(t, g)[0]
				// "hi": 4 for the message and 1 for its 2 bytes; 60 deltas of 4 bytes.
				want := map[string]any{"prompt_tokens": 5.0, "completion_tokens": float64(answerDeltas), "usage_estimated": true, "status": 200.0}
				for k, v := range want {
					if rec[k] != v {
						t.Errorf("access line %s = %v, want %v: %v", k, rec[k], v, rec)
					}
				}
				if got := g.metricValue("gateway_usage_estimated_total", map[string]string{"model": "m", "backend": "up", "key": "alice"}); got != 1 {
					t.Errorf("gateway_usage_estimated_total = %v, want 1", got)
				}
				if got := scrapeTokens(t, g, "m"); got["prompt"] != 5 || got["completion"] != answerDeltas {
					t.Errorf("gateway_tokens_total %v, want prompt 5 and completion %d", got, answerDeltas)
				}
				eventually(t, "the charge", func() bool {
					return g.metricValue("gateway_budget_remaining", map[string]string{"key": "alice", "unit": "tokens"}) == 1000-5-answerDeltas
				})
			})
		}
	}
}

// TestUsage_ReportedUsageChargedOnce: an answer read to its end is charged the usage its
// upstream reported, once, and nothing is flagged as estimated: every client API on
// every backend type. (The responses passthrough used to count each answer's usage
// twice.)
func TestUsage_ReportedUsageChargedOnce(t *testing.T) {
	t.Parallel() // its own gateway, fakes and servers (#54)
	const answerDeltas = 60
	for _, client := range usageClients {
		for _, kind := range []string{"openai", "anthropic", "gemini", "responses"} {
			t.Run(client.api+" on "+kind, func(t *testing.T) {
				up := newUpstream(t, fakeAnswer{kind: kind, n: answerDeltas}.serve(0, nil))
				base := up.URL
				if kind == "openai" || kind == "responses" {
					base = up.v1()
				}
				g := usageGateway(t, kind, base, 1000)
				status, deltas := streamDeltas(t, g, client, "sk-alice", "m", 0)
				if status != 200 || deltas != answerDeltas {
					t.Fatalf("status %d, %d deltas; want 200 and %d", status, deltas, answerDeltas)
				}
				eventually(t, "the access line", func() bool { return len(usageRecords(t, g)) > 0 })
				rec := usageRecords(t, g)[0]
				if rec["prompt_tokens"] != 10.0 || rec["completion_tokens"] != float64(answerDeltas) || rec["usage_estimated"] == true {
					t.Errorf("access line %v, want prompt 10, completion %d, not estimated", rec, answerDeltas)
				}
				if got := scrapeTokens(t, g, "m"); got["prompt"] != 10 || got["completion"] != answerDeltas {
					t.Errorf("gateway_tokens_total %v, want prompt 10 and completion %d", got, answerDeltas)
				}
				if got := g.metricValue("gateway_usage_estimated_total", nil); got != 0 {
					t.Errorf("gateway_usage_estimated_total = %v, want 0", got)
				}
				eventually(t, "the charge", func() bool {
					return g.metricValue("gateway_budget_remaining", map[string]string{"key": "alice", "unit": "tokens"}) == 1000-10-answerDeltas
				})
			})
		}
	}
}

// TestUsage_CompletionWithoutUsageIsEstimated: a non-streamed answer of an OpenAI-compatible
// upstream that reports no usage, passed through, is charged the estimate of the prompt
// and of the message, flagged.
func TestUsage_CompletionWithoutUsageIsEstimated(t *testing.T) {
	body := `{"id":"chatcmpl-1","object":"chat.completion","created":1761175225,"model":"up","choices":[{"index":0,` +
		`"message":{"role":"assistant","content":"` + strings.Repeat(usageDelta, 60) + `"},"finish_reason":"stop"}]}`
	up := newUpstream(t, replayJSON(200, []byte(body)))
	g := usageGateway(t, "openai", up.v1(), 1000)
	if r := g.chat("sk-alice", `{"model":"m","messages":[{"role":"user","content":"hi"}]}`); r.status != 200 {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	recs := usageRecords(t, g)
	if len(recs) != 1 || recs[0]["prompt_tokens"] != 5.0 || recs[0]["completion_tokens"] != 60.0 || recs[0]["usage_estimated"] != true {
		t.Fatalf("access lines %v, want one with prompt 5, completion 60, usage_estimated", recs)
	}
	if got := g.metricValue("gateway_usage_estimated_total", map[string]string{"model": "m", "backend": "up", "key": "alice"}); got != 1 {
		t.Errorf("gateway_usage_estimated_total = %v, want 1", got)
	}
	eventually(t, "the charge", func() bool {
		return g.metricValue("gateway_budget_remaining", map[string]string{"key": "alice", "unit": "tokens"}) == 1000-5-60
	})
}
