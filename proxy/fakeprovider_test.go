package proxy_test

import (
	"fmt"
	"github.com/agate-gateway/agate/internal/jsonx"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// fakeTurn is what a scripted fake model says in one turn.
type fakeTurn struct {
	Text  string
	Calls []fakeCall
}

type fakeCall struct{ Name, Args string }

// fakeProvider is a loopback upstream speaking one provider's streaming wire format (the
// shapes of the recordings in ../testdata/fixtures), answering turn i of its script on the
// i-th request. It records every request body.
type fakeProvider struct {
	kind string // anthropic, gemini, responses, openai
	srv  *httptest.Server

	mu       sync.Mutex
	script   []fakeTurn
	requests []string
}

func newFakeProvider(t *testing.T, kind string) *fakeProvider {
	f := &fakeProvider{kind: kind}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

// setScript replaces the script and forgets earlier requests.
func (f *fakeProvider) setScript(turns ...fakeTurn) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.script, f.requests = turns, nil
}

func (f *fakeProvider) bodies() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.requests...)
}

// baseURL is the backend base_url in each provider's SDK convention.
func (f *fakeProvider) baseURL() string {
	if f.kind == "responses" || f.kind == "openai" {
		return f.srv.URL + "/v1"
	}
	return f.srv.URL
}

func (f *fakeProvider) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	n := len(f.requests)
	f.requests = append(f.requests, string(body))
	var turn fakeTurn
	ok := n < len(f.script)
	if ok {
		turn = f.script[n]
	}
	f.mu.Unlock()
	if !ok {
		http.Error(w, `{"error":{"message":"script exhausted","type":"invalid_request_error"}}`, 400)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	var out strings.Builder
	switch f.kind {
	case "anthropic":
		renderAnthropic(&out, turn, n)
	case "gemini":
		renderGemini(&out, turn, n)
	case "responses":
		renderResponses(&out, turn, n)
	case "openai":
		renderOpenAI(&out, turn, n)
	}
	io.WriteString(w, out.String())
}

func js(s string) string { return string(jsonx.AppendString(nil, s)) }

func renderAnthropic(w *strings.Builder, t fakeTurn, n int) {
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

func renderGemini(w *strings.Builder, t fakeTurn, n int) {
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

func renderResponses(w *strings.Builder, t fakeTurn, n int) {
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

func renderOpenAI(w *strings.Builder, t fakeTurn, n int) {
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
