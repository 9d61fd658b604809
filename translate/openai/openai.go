package openai

import (
	"github.com/agate-gateway/agate/internal/jsonx"
	"github.com/agate-gateway/agate/translate"
	"strconv"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
)

// New returns the Provider for OpenAI-compatible chat completions upstreams
// (OpenAI, vLLM, Ollama, OpenRouter...). Requests keep every field the client sent,
// unknown ones included; only the model (and, when edited by the tool loop, the messages,
// tools and tool_choice) are rewritten.
func New() translate.Provider { return openAIChat{} }

type openAIChat struct{}

var (
	_ translate.Provider      = openAIChat{}
	_ translate.StreamDecoder = (*openAIChatStream)(nil)
)

func (openAIChat) Path(string, bool) string { return "/chat/completions" }

func (openAIChat) Headers(apiKey string, _ *translate.Request, _ *translate.Options) []translate.Header {
	if apiKey == "" {
		return nil
	}
	return []translate.Header{{Name: "Authorization", Value: "Bearer " + apiKey}}
}

// AppendRequest appends the client's body with the upstream model, and, for streams,
// stream_options.include_usage forced on so the gateway can count tokens (the proxy drops
// the usage chunk if the client did not ask for it).
func (openAIChat) AppendRequest(dst []byte, req *translate.Request, opts *translate.Options) ([]byte, error) {
	body := req.Body
	var err error
	set := func(path string, v any) {
		if err == nil {
			body, err = sjson.Set(body, path, v)
		}
	}
	setRaw := func(path, raw string) {
		if err == nil {
			body, err = sjson.SetRaw(body, path, raw)
		}
	}
	set("model", opts.UpstreamModel)
	if opts.Stream {
		set("stream", true)
		set("stream_options.include_usage", true)
	} else if gjson.Get(body, "stream").Bool() {
		set("stream", false)
	}
	if req.Edited {
		setRaw("messages", string(appendMessages(nil, req.Messages)))
		if len(req.Tools) > 0 {
			setRaw("tools", string(appendTools(nil, req.Tools)))
		}
		switch req.ToolChoice.Mode {
		case "":
		case translate.ToolChoiceFunction:
			setRaw("tool_choice", `{"type":"function","function":{"name":`+string(jsonx.AppendString(nil, req.ToolChoice.Name))+`}}`)
		default:
			set("tool_choice", req.ToolChoice.Mode)
		}
	}
	if err != nil {
		return dst, translate.Errorf("", "rewriting the request: %v", err)
	}
	return append(dst, body...), nil
}

// appendMessages appends messages as an OpenAI chat messages array.
func appendMessages(dst []byte, msgs []translate.Message) []byte {
	dst = append(dst, '[')
	for i := range msgs {
		m := &msgs[i]
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"role":`...)
		dst = jsonx.AppendString(dst, m.Role)
		if m.Name != "" {
			dst = append(dst, `,"name":`...)
			dst = jsonx.AppendString(dst, m.Name)
		}
		dst = append(dst, `,"content":`...)
		switch {
		case len(m.Content) == 0:
			if m.Role == translate.RoleAssistant {
				dst = append(dst, "null"...)
			} else {
				dst = append(dst, `""`...)
			}
		case m.ToolError:
			dst = jsonx.AppendString(dst, m.ToolOutput())
		case len(m.Content) == 1 && m.Content[0].Type == translate.PartText:
			dst = jsonx.AppendString(dst, m.Content[0].Text)
		default:
			dst = appendOpenAIParts(dst, m.Content)
		}
		if m.Refusal != "" {
			dst = append(dst, `,"refusal":`...)
			dst = jsonx.AppendString(dst, m.Refusal)
		}
		if m.ToolCallID != "" {
			dst = append(dst, `,"tool_call_id":`...)
			dst = jsonx.AppendString(dst, m.ToolCallID)
		}
		if len(m.ToolCalls) > 0 {
			dst = append(dst, `,"tool_calls":`...)
			dst = translate.AppendToolCalls(dst, m.ToolCalls)
		}
		dst = append(dst, '}')
	}
	return append(dst, ']')
}

func appendOpenAIParts(dst []byte, parts []translate.Part) []byte {
	dst = append(dst, '[')
	for i, p := range parts {
		if i > 0 {
			dst = append(dst, ',')
		}
		switch p.Type {
		case translate.PartText:
			dst = append(dst, `{"type":"text","text":`...)
			dst = jsonx.AppendString(dst, p.Text)
		case translate.PartRefusal:
			dst = append(dst, `{"type":"refusal","refusal":`...)
			dst = jsonx.AppendString(dst, p.Text)
		case translate.PartImage:
			dst = append(dst, `{"type":"image_url","image_url":{"url":`...)
			dst = jsonx.AppendString(dst, p.URL)
			if p.Detail != "" {
				dst = append(dst, `,"detail":`...)
				dst = jsonx.AppendString(dst, p.Detail)
			}
			dst = append(dst, '}')
		case translate.PartFile:
			dst = append(dst, `{"type":"file","file":{`...)
			sep := ""
			for _, kv := range [...][2]string{{"file_data", p.FileData}, {"file_id", p.FileID}, {"filename", p.Filename}} {
				if kv[1] != "" {
					dst = append(dst, sep...)
					dst = jsonx.AppendKey(dst, kv[0])
					dst = jsonx.AppendString(dst, kv[1])
					sep = ","
				}
			}
			dst = append(dst, '}')
		case translate.PartAudio:
			dst = append(dst, `{"type":"input_audio","input_audio":{"data":`...)
			dst = jsonx.AppendString(dst, p.AudioData)
			dst = append(dst, `,"format":`...)
			dst = jsonx.AppendString(dst, p.AudioFormat)
			dst = append(dst, '}')
		}
		dst = append(dst, '}')
	}
	return append(dst, ']')
}

// appendTools appends tools as an OpenAI chat tools array.
func appendTools(dst []byte, tools []translate.Tool) []byte {
	dst = append(dst, '[')
	for i, t := range tools {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"type":"function","function":{"name":`...)
		dst = jsonx.AppendString(dst, t.Name)
		if t.Description != "" {
			dst = append(dst, `,"description":`...)
			dst = jsonx.AppendString(dst, t.Description)
		}
		if t.Parameters != "" {
			dst = append(dst, `,"parameters":`...)
			dst = append(dst, t.Parameters...)
		}
		if t.Strict != nil {
			dst = append(dst, `,"strict":`...)
			dst = jsonx.AppendBool(dst, *t.Strict)
		}
		dst = append(dst, `}}`...)
	}
	return append(dst, ']')
}

func (openAIChat) NewStreamDecoder(*translate.Options) translate.StreamDecoder {
	return &openAIChatStream{}
}

// openAIChatStream decodes chat.completion.chunk events. Not safe for concurrent use.
type openAIChatStream struct {
	started bool
	done    bool // [DONE] seen
	finish  bool // a finish_reason seen
}

func (d *openAIChatStream) Event(_, data []byte, emit translate.Emit) error {
	if d.done {
		return nil
	}
	if string(data) == "[DONE]" {
		d.done = true
		return nil
	}
	s := jsonx.View(data)
	if !gjson.Valid(s) {
		return upstreamMalformed("openai", data)
	}
	root := gjson.Parse(s)
	if e := root.Get("error"); e.Exists() {
		ue := openAIError(500, e)
		if err := emit(&translate.Event{Kind: translate.EventError, Err: ue}); err != nil {
			return err
		}
		return ue
	}
	return decodeOpenAIChunk(root, &d.started, &d.finish, emit)
}

// decodeOpenAIChunk emits the events of one chunk, or of a whole completion when root is a
// chat.completion (message instead of delta).
func decodeOpenAIChunk(root gjson.Result, started, finished *bool, emit translate.Emit) error {
	var err error
	send := func(ev *translate.Event) {
		if err == nil {
			err = emit(ev)
		}
	}
	if !*started {
		*started = true
		send(&translate.Event{Kind: translate.EventStart, ID: root.Get("id").Str, Model: root.Get("model").Str})
	}
	root.Get("choices").ForEach(func(_, c gjson.Result) bool {
		choice := int(c.Get("index").Int())
		d := c.Get("delta")
		if !d.Exists() {
			d = c.Get("message")
		}
		if r := d.Get("reasoning_content"); r.Str != "" {
			send(&translate.Event{Kind: translate.EventReasoningDelta, Choice: choice, Text: r.Str})
		} else if r := d.Get("reasoning"); r.Type == gjson.String && r.Str != "" {
			send(&translate.Event{Kind: translate.EventReasoningDelta, Choice: choice, Text: r.Str})
		}
		lp := openAILogprobs(c.Get("logprobs.content"))
		if t := d.Get("content"); t.Str != "" {
			send(&translate.Event{Kind: translate.EventTextDelta, Choice: choice, Text: t.Str, Logprobs: lp})
		} else if lp != nil {
			send(&translate.Event{Kind: translate.EventLogprobs, Choice: choice, Logprobs: lp})
		}
		if t := d.Get("refusal"); t.Str != "" {
			send(&translate.Event{Kind: translate.EventRefusalDelta, Choice: choice, Text: t.Str})
		}
		pos := 0
		d.Get("tool_calls").ForEach(func(_, tc gjson.Result) bool {
			key := pos
			if ix := tc.Get("index"); ix.Exists() {
				key = int(ix.Int())
			}
			pos++
			if id := tc.Get("id"); id.Str != "" {
				send(&translate.Event{Kind: translate.EventToolCallStart, Choice: choice, Index: key, CallID: id.Str, Name: tc.Get("function.name").Str})
			}
			if a := tc.Get("function.arguments"); a.Str != "" {
				send(&translate.Event{Kind: translate.EventToolCallArgsDelta, Choice: choice, Index: key, Text: a.Str})
			}
			return err == nil
		})
		if f := c.Get("finish_reason"); f.Str != "" {
			*finished = true
			send(&translate.Event{Kind: translate.EventFinish, Choice: choice, FinishReason: f.Str})
		}
		return err == nil
	})
	if u := root.Get("usage"); u.IsObject() {
		send(&translate.Event{Kind: translate.EventUsage, Usage: openAIUsage(u)})
	}
	return err
}

// openAILogprobs decodes a choice's logprobs.content (ChatCompletionTokenLogprob items);
// nil when there are none.
func openAILogprobs(content gjson.Result) []translate.TokenLogprob {
	if !content.IsArray() {
		return nil
	}
	var out []translate.TokenLogprob
	content.ForEach(func(_, t gjson.Result) bool {
		tok := t.Get("token").Str
		lp := translate.TokenLogprob{Token: tok, Logprob: t.Get("logprob").Float(), Bytes: openAITokenBytes(tok, t.Get("bytes"))}
		t.Get("top_logprobs").ForEach(func(_, top gjson.Result) bool {
			tok := top.Get("token").Str
			lp.Top = append(lp.Top, translate.TopLogprob{Token: tok, Logprob: top.Get("logprob").Float(), Bytes: openAITokenBytes(tok, top.Get("bytes"))})
			return true
		})
		out = append(out, lp)
		return true
	})
	return out
}

// openAITokenBytes returns a token's bytes array when it differs from the token's own
// UTF-8 bytes (a token holding part of a character), else nil.
func openAITokenBytes(token string, arr gjson.Result) []byte {
	if !arr.IsArray() {
		return nil
	}
	same, n := true, 0
	arr.ForEach(func(_, v gjson.Result) bool {
		if n >= len(token) || v.Int() != int64(token[n]) {
			same = false
		}
		n++
		return true
	})
	if same && n == len(token) {
		return nil
	}
	out := make([]byte, 0, n)
	arr.ForEach(func(_, v gjson.Result) bool {
		out = append(out, byte(v.Int()))
		return true
	})
	return out
}

func openAIUsage(u gjson.Result) translate.Usage {
	return translate.Usage{
		PromptTokens:     int(u.Get("prompt_tokens").Int()),
		CompletionTokens: int(u.Get("completion_tokens").Int()),
		CachedTokens:     int(u.Get("prompt_tokens_details.cached_tokens").Int()),
		ReasoningTokens:  int(u.Get("completion_tokens_details.reasoning_tokens").Int()),
	}
}

// ParseUsage reads an OpenAI usage object (raw JSON); ok is false when there is none.
func ParseUsage(raw []byte) (u translate.Usage, ok bool) {
	r := gjson.ParseBytes(raw)
	if !r.IsObject() {
		return translate.Usage{}, false
	}
	return openAIUsage(r), true
}

func (d *openAIChatStream) Close(emit translate.Emit) error {
	if !d.done && !d.finish {
		return &translate.UpstreamError{Status: 502, Type: "api_error", Message: "the upstream stream ended before it finished"}
	}
	return nil
}

// DecodeResponse decodes a chat completion. A body that is not a JSON object with a
// choices array (an HTML page from a proxy, an error object sent with status 200) is an
// upstream error, never an empty answer.
func (openAIChat) DecodeResponse(body []byte, emit translate.Emit) error {
	s := jsonx.View(body)
	if !gjson.Valid(s) {
		return upstreamMalformed("openai", body)
	}
	root := gjson.Parse(s)
	if e := root.Get("error"); e.IsObject() {
		return openAIError(502, e)
	}
	if !root.IsObject() || !root.Get("choices").IsArray() {
		return upstreamMalformed("openai", body)
	}
	started, finished := false, false
	return decodeOpenAIChunk(root, &started, &finished, emit)
}

func (openAIChat) DecodeError(status int, body []byte) *translate.UpstreamError {
	e := gjson.GetBytes(body, "error")
	if !e.IsObject() {
		return &translate.UpstreamError{Status: status, Type: translate.ErrorType(status), Message: snippet(body, status), Retryable: translate.RetryableStatus(status)}
	}
	return openAIError(status, e)
}

func openAIError(status int, e gjson.Result) *translate.UpstreamError {
	code := e.Get("code")
	ue := &translate.UpstreamError{
		Status:    status,
		Type:      e.Get("type").Str,
		Param:     e.Get("param").Str,
		Message:   e.Get("message").Str,
		Retryable: translate.RetryableStatus(status),
	}
	if code.Type == gjson.String {
		ue.Code = code.Str
	} else if code.Type == gjson.Number {
		ue.Code = code.Raw
	}
	if ue.Type == "" {
		ue.Type = translate.ErrorType(status)
	}
	if ue.Message == "" {
		ue.Message = "upstream returned HTTP " + strconv.Itoa(status)
	}
	return ue
}

// snippet returns a bounded, printable piece of an unparseable upstream body.
func snippet(body []byte, status int) string {
	const max = 512
	b := body
	if len(b) > max {
		b = b[:max]
	}
	msg := "upstream returned HTTP " + strconv.Itoa(status)
	if len(b) > 0 {
		msg += ": " + string(b)
	}
	return msg
}

func upstreamMalformed(provider string, data []byte) *translate.UpstreamError {
	b := data
	if len(b) > 200 {
		b = b[:200]
	}
	return &translate.UpstreamError{Status: 502, Type: "api_error", Message: "malformed " + provider + " event: " + strconv.Quote(string(b))}
}
