package gatewaytest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/agate-gateway/agate/internal/jsonx"
)

// Kinds are the upstream wires a Fake speaks, in the order the tests list them.
var Kinds = []string{"anthropic", "gemini", "responses", "openai"}

// Turn is what a fake model says in one turn: text, then function calls.
type Turn struct {
	Text  string
	Calls []Call
}

// Call is one function call of a Turn; Args is its arguments' JSON text.
type Call struct{ Name, Args string }

// Fake is a loopback upstream speaking one provider's wire (the shapes of the recordings in
// testdata/fixtures): its i-th request gets turn i of its script (or the answer of its
// answer function), streamed as the wire's server-sent events; a fake made by NewFakeJSON
// answers a request that does not ask for a stream with the wire's JSON body. It records
// every request body. A scripted fake answers a request past its script with a 400.
type Fake struct {
	Kind string // anthropic, gemini, responses, openai
	srv  *httptest.Server
	json bool
	// answer, when set, answers each request by its body instead of the script.
	answer func(body string) Turn

	mu       sync.Mutex
	script   []Turn
	requests []string
}

// NewFake starts a scripted fake upstream of kind that streams every answer; it stops when
// the test ends.
func NewFake(t testing.TB, kind string) *Fake {
	return startFake(t, &Fake{Kind: kind})
}

// NewFakeJSON is NewFake answering a request that does not ask for a stream with the JSON
// body of its wire.
func NewFakeJSON(t testing.TB, kind string) *Fake {
	return startFake(t, &Fake{Kind: kind, json: true})
}

// NewFakeFunc starts a fake upstream of kind that streams answer(body) to every request.
func NewFakeFunc(t testing.TB, kind string, answer func(body string) Turn) *Fake {
	return startFake(t, &Fake{Kind: kind, answer: answer})
}

func startFake(t testing.TB, f *Fake) *Fake {
	f.srv = httptest.NewServer(f)
	t.Cleanup(f.srv.Close)
	return f
}

// URL is the fake's root URL (http://host:port).
func (f *Fake) URL() string { return f.srv.URL }

// BaseURL is the backend base_url in the provider's SDK convention (with /v1 for the two
// OpenAI wires).
func (f *Fake) BaseURL() string {
	if f.Kind == "responses" || f.Kind == "openai" {
		return f.srv.URL + "/v1"
	}
	return f.srv.URL
}

// SetScript replaces the script and forgets earlier requests.
func (f *Fake) SetScript(turns ...Turn) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.script, f.requests = turns, nil
}

// Bodies returns the request bodies received since the script was last set.
func (f *Fake) Bodies() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.requests...)
}

// ServeHTTP answers one request as the fake's server does; a test that puts its own handler
// in front of a fake (to fail some requests, say) hands it the others.
func (f *Fake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	n := len(f.requests)
	f.requests = append(f.requests, string(body))
	var turn Turn
	ok := true
	if f.answer != nil {
		turn = f.answer(string(body))
	} else if ok = n < len(f.script); ok {
		turn = f.script[n]
	}
	f.mu.Unlock()
	if !ok {
		http.Error(w, `{"error":{"message":"script exhausted","type":"invalid_request_error"}}`, 400)
		return
	}
	if f.json && !strings.Contains(string(body), `"stream":true`) && !strings.Contains(r.URL.Path, "streamGenerateContent") {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, RenderJSON(f.Kind, turn, n))
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	io.WriteString(w, RenderStream(f.Kind, turn, n))
}

// Fleet starts one fake upstream of each of Kinds with newFake.
func Fleet(newFake func(kind string) *Fake) map[string]*Fake {
	fakes := make(map[string]*Fake, len(Kinds))
	for _, k := range Kinds {
		fakes[k] = newFake(k)
	}
	return fakes
}

// FleetYAML is the backends: and models: sections of a configuration over fakes (a Fleet):
// a backend named after each kind (api_key upstream-secret, no retries) and a model
// "m-<kind>" on it (upstream_model fake-model); with mock, first an "offline" mock backend
// and its model "m-mock".
func FleetYAML(fakes map[string]*Fake, mock bool) string {
	var y strings.Builder
	y.WriteString("backends:\n")
	if mock {
		y.WriteString("  offline: {type: mock}\n")
	}
	for _, k := range Kinds {
		fmt.Fprintf(&y, "  %s: {type: %s, base_url: %q, api_key: upstream-secret, retries: {max: 0}}\n", k, k, fakes[k].BaseURL())
	}
	y.WriteString("models:\n")
	if mock {
		y.WriteString("  m-mock: {backend: offline}\n")
	}
	for _, k := range Kinds {
		fmt.Fprintf(&y, "  m-%s: {backend: %s, upstream_model: fake-model}\n", k, k)
	}
	return y.String()
}

// js is s as a JSON string.
func js(s string) string { return string(jsonx.AppendString(nil, s)) }

// RenderStream is turn t as the n-th streamed answer of an upstream of kind: its server-sent
// events, ids numbered by n.
func RenderStream(kind string, t Turn, n int) string {
	var w strings.Builder
	switch kind {
	case "anthropic":
		renderAnthropic(&w, t, n)
	case "gemini":
		renderGemini(&w, t, n)
	case "responses":
		renderResponses(&w, t, n)
	case "openai":
		renderOpenAI(&w, t, n)
	}
	return w.String()
}

func renderAnthropic(w *strings.Builder, t Turn, n int) {
	ev := func(typ, data string) { fmt.Fprintf(w, "event: %s\ndata: %s\n\n", typ, data) }
	ev("message_start", fmt.Sprintf(`{"type":"message_start","message":{"id":"msg_%d","type":"message","role":"assistant","model":"claude-fake","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":10,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":1}}}`, n))
	i := 0
	if t.Text != "" {
		ev("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`)
		ev("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":`+js(t.Text)+`}}`)
		ev("content_block_stop", `{"type":"content_block_stop","index":0}`)
		i++
	}
	for k, c := range t.Calls {
		ev("content_block_start", fmt.Sprintf(`{"type":"content_block_start","index":%d,"content_block":{"type":"tool_use","id":"toolu_%d_%d","name":%s,"input":{}}}`, i, n, k, js(c.Name)))
		ev("content_block_delta", fmt.Sprintf(`{"type":"content_block_delta","index":%d,"delta":{"type":"input_json_delta","partial_json":""}}`, i))
		ev("content_block_delta", fmt.Sprintf(`{"type":"content_block_delta","index":%d,"delta":{"type":"input_json_delta","partial_json":%s}}`, i, js(c.Args)))
		ev("content_block_stop", fmt.Sprintf(`{"type":"content_block_stop","index":%d}`, i))
		i++
	}
	stop := "end_turn"
	if len(t.Calls) > 0 {
		stop = "tool_use"
	}
	ev("message_delta", `{"type":"message_delta","delta":{"stop_reason":"`+stop+`","stop_sequence":null},"usage":{"output_tokens":5}}`)
	ev("message_stop", `{"type":"message_stop"}`)
}

func renderGemini(w *strings.Builder, t Turn, n int) {
	usage := `"usageMetadata":{"promptTokenCount":10,"candidatesTokenCount":5,"totalTokenCount":15},"modelVersion":"gemini-fake","responseId":"resp` + fmt.Sprint(n) + `"`
	if t.Text != "" {
		fmt.Fprintf(w, "data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":%s}],\"role\":\"model\"},\"index\":0}],%s}\r\n\r\n", js(t.Text), usage)
	}
	var parts []string
	for k, c := range t.Calls {
		p := fmt.Sprintf(`{"functionCall":{"name":%s,"args":%s}`, js(c.Name), c.Args)
		if k == 0 {
			p += `,"thoughtSignature":"c2lnbmF0dXJl"`
		}
		parts = append(parts, p+"}")
	}
	if len(parts) == 0 {
		parts = append(parts, `{"text":""}`)
	}
	fmt.Fprintf(w, "data: {\"candidates\":[{\"content\":{\"parts\":[%s],\"role\":\"model\"},\"finishReason\":\"STOP\",\"index\":0}],%s}\r\n\r\n", strings.Join(parts, ","), usage)
}

func renderResponses(w *strings.Builder, t Turn, n int) {
	seq := 0
	ev := func(typ, data string) {
		fmt.Fprintf(w, "event: %s\ndata: {\"type\":%q,\"sequence_number\":%d,%s}\n\n", typ, typ, seq, data)
		seq++
	}
	id := fmt.Sprintf("resp_%d", n)
	head := `"id":"` + id + `","object":"response","created_at":1761175225,"model":"gpt-fake","error":null,"incomplete_details":null`
	ev("response.created", `"response":{`+head+`,"status":"in_progress","output":[],"usage":null}`)
	var output []string
	idx := 0
	if t.Text != "" {
		item := `{"id":"msg_` + id + `","type":"message","status":"completed","role":"assistant","content":[{"type":"output_text","annotations":[],"text":` + js(t.Text) + `}]}`
		ev("response.output_item.added", fmt.Sprintf(`"output_index":%d,"item":{"id":"msg_%s","type":"message","status":"in_progress","role":"assistant","content":[]}`, idx, id))
		ev("response.content_part.added", fmt.Sprintf(`"item_id":"msg_%s","output_index":%d,"content_index":0,"part":{"type":"output_text","annotations":[],"text":""}`, id, idx))
		ev("response.output_text.delta", fmt.Sprintf(`"item_id":"msg_%s","output_index":%d,"content_index":0,"delta":%s`, id, idx, js(t.Text)))
		ev("response.output_text.done", fmt.Sprintf(`"item_id":"msg_%s","output_index":%d,"content_index":0,"text":%s`, id, idx, js(t.Text)))
		ev("response.content_part.done", fmt.Sprintf(`"item_id":"msg_%s","output_index":%d,"content_index":0,"part":{"type":"output_text","annotations":[],"text":%s}`, id, idx, js(t.Text)))
		ev("response.output_item.done", fmt.Sprintf(`"output_index":%d,"item":%s`, idx, item))
		output = append(output, item)
		idx++
	}
	for k, c := range t.Calls {
		fc := fmt.Sprintf("fc_%d_%d", n, k)
		callID := fmt.Sprintf("call_%d_%d", n, k)
		ev("response.output_item.added", fmt.Sprintf(`"output_index":%d,"item":{"id":%q,"type":"function_call","status":"in_progress","arguments":"","call_id":%q,"name":%s}`, idx, fc, callID, js(c.Name)))
		ev("response.function_call_arguments.delta", fmt.Sprintf(`"item_id":%q,"output_index":%d,"delta":%s`, fc, idx, js(c.Args)))
		ev("response.function_call_arguments.done", fmt.Sprintf(`"item_id":%q,"output_index":%d,"arguments":%s`, fc, idx, js(c.Args)))
		item := fmt.Sprintf(`{"id":%q,"type":"function_call","status":"completed","arguments":%s,"call_id":%q,"name":%s}`, fc, js(c.Args), callID, js(c.Name))
		ev("response.output_item.done", fmt.Sprintf(`"output_index":%d,"item":%s`, idx, item))
		output = append(output, item)
		idx++
	}
	ev("response.completed", `"response":{`+head+`,"status":"completed","output":[`+strings.Join(output, ",")+`],"usage":{"input_tokens":10,"input_tokens_details":{"cached_tokens":0},"output_tokens":5,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":15}}`)
}

func renderOpenAI(w *strings.Builder, t Turn, n int) {
	chunk := func(delta, finish string) {
		f := "null"
		if finish != "" {
			f = `"` + finish + `"`
		}
		fmt.Fprintf(w, "data: {\"id\":\"chatcmpl-%d\",\"object\":\"chat.completion.chunk\",\"created\":1761175225,\"model\":\"gpt-fake\",\"choices\":[{\"index\":0,\"delta\":%s,\"finish_reason\":%s}]}\n\n", n, delta, f)
	}
	chunk(`{"role":"assistant","content":""}`, "")
	if t.Text != "" {
		chunk(`{"content":`+js(t.Text)+`}`, "")
	}
	for k, c := range t.Calls {
		chunk(fmt.Sprintf(`{"tool_calls":[{"index":%d,"id":"call_%d_%d","type":"function","function":{"name":%s,"arguments":""}}]}`, k, n, k, js(c.Name)), "")
		chunk(fmt.Sprintf(`{"tool_calls":[{"index":%d,"function":{"arguments":%s}}]}`, k, js(c.Args)), "")
	}
	finish := "stop"
	if len(t.Calls) > 0 {
		finish = "tool_calls"
	}
	chunk(`{}`, finish)
	fmt.Fprintf(w, "data: {\"id\":\"chatcmpl-%d\",\"object\":\"chat.completion.chunk\",\"created\":1761175225,\"model\":\"gpt-fake\",\"choices\":[],\"usage\":{\"prompt_tokens\":10,\"completion_tokens\":5,\"total_tokens\":15}}\n\n", n)
	io.WriteString(w, "data: [DONE]\n\n")
}

// RenderJSON is turn t as the n-th non-streamed answer of an upstream of kind.
func RenderJSON(kind string, t Turn, n int) string {
	var parts []string
	switch kind {
	case "anthropic":
		if t.Text != "" {
			parts = append(parts, `{"type":"text","text":`+js(t.Text)+`}`)
		}
		for k, c := range t.Calls {
			parts = append(parts, fmt.Sprintf(`{"type":"tool_use","id":"toolu_%d_%d","name":%s,"input":%s}`, n, k, js(c.Name), c.Args))
		}
		stop := "end_turn"
		if len(t.Calls) > 0 {
			stop = "tool_use"
		}
		return fmt.Sprintf(`{"id":"msg_%d","type":"message","role":"assistant","model":"claude-fake","content":[%s],"stop_reason":%q,"stop_sequence":null,"usage":{"input_tokens":10,"output_tokens":5}}`,
			n, strings.Join(parts, ","), stop)
	case "gemini":
		if t.Text != "" {
			parts = append(parts, `{"text":`+js(t.Text)+`}`)
		}
		for _, c := range t.Calls {
			parts = append(parts, fmt.Sprintf(`{"functionCall":{"name":%s,"args":%s}}`, js(c.Name), c.Args))
		}
		return fmt.Sprintf(`{"candidates":[{"content":{"parts":[%s],"role":"model"},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":10,"candidatesTokenCount":5,"totalTokenCount":15},"modelVersion":"gemini-fake","responseId":"resp%d"}`,
			strings.Join(parts, ","), n)
	case "openai":
		content, finish := "null", "stop"
		if t.Text != "" {
			content = js(t.Text)
		}
		for k, c := range t.Calls {
			parts = append(parts, fmt.Sprintf(`{"id":"call_%d_%d","type":"function","function":{"name":%s,"arguments":%s}}`, n, k, js(c.Name), js(c.Args)))
			finish = "tool_calls"
		}
		calls := ""
		if len(parts) > 0 {
			calls = `,"tool_calls":[` + strings.Join(parts, ",") + `]`
		}
		return fmt.Sprintf(`{"id":"chatcmpl-%d","object":"chat.completion","created":1761175225,"model":"gpt-fake","choices":[{"index":0,"message":{"role":"assistant","content":%s%s},"finish_reason":%q}],"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15}}`,
			n, content, calls, finish)
	default: // responses: the Response object of the streamed rendering's terminal event
		events := strings.Split(strings.TrimSpace(RenderStream("responses", t, n)), "\n\n")
		_, data, _ := strings.Cut(events[len(events)-1], "data: ")
		var ev struct {
			Response json.RawMessage `json:"response"`
		}
		json.Unmarshal([]byte(data), &ev)
		return string(ev.Response)
	}
}
