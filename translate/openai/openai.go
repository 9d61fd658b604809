package openai

import (
	"slices"
	"strconv"
	"strings"

	"github.com/agate-gateway/agate/internal/jsonx"
	"github.com/agate-gateway/agate/translate"

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

func (openAIChat) Headers(apiKey string) []translate.Header {
	if apiKey == "" {
		return nil
	}
	return []translate.Header{{Name: "Authorization", Value: "Bearer " + apiKey}}
}

// AppendRequest appends the client's body with the upstream model, and, for streams,
// stream_options.include_usage forced on so the gateway can count tokens (the proxy drops
// the usage chunk if the client did not ask for it).
//
// A body the chat parser located (Request.Spans) and no one edited is rewritten in one
// copy, splicing the new values in; any other body goes through sjson, except that an
// edited request's messages and tools, which grow with the history, are written straight
// into dst where sjson would have put them (appendEdited).
func (openAIChat) AppendRequest(dst []byte, req *translate.Request, opts *translate.Options) ([]byte, error) {
	if !req.Edited && req.Spans.Model.End > 0 {
		return appendSpliced(dst, req, opts)
	}
	if req.Edited {
		if out, ok := appendEditedDirect(dst, req, opts); ok {
			return out, nil
		}
	}
	return appendRewritten(dst, req, opts)
}

// appendRewritten is AppendRequest through sjson, for a body neither appendSpliced nor
// appendEditedDirect writes.
func appendRewritten(dst []byte, req *translate.Request, opts *translate.Options) ([]byte, error) {
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
	} else if sc := jsonx.NewScanner(body); streamFlag(&sc) {
		set("stream", false)
	}
	if req.Edited {
		// Placeholders, which appendEdited replaces: sjson copies only a small body.
		setRaw("messages", placeholder)
		if req.Functions() > 0 {
			setRaw("tools", placeholder)
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
	if req.Edited {
		return appendEdited(dst, body, req), nil
	}
	return append(dst, body...), nil
}

// placeholder is the value AppendRequest has sjson set an edited request's messages and
// tools to: a literal no encoder writes as a top-level member's value.
const placeholder = "0"

// appendEdited appends body, in which sjson set messages (and tools, when req has
// functions) to placeholder, with req's messages (and tools) written in their place: the
// bytes sjson would have written had it been given them, without copying them through it.
func appendEdited(dst []byte, body string, req *translate.Request) []byte {
	sc := jsonx.NewScanner(body)
	var v jsonx.Value
	at := 0 // body[at:] is still to be copied
	for n := 0; sc.NextField(&n); {
		key := sc.Key()
		if !sc.Value(&v) {
			break
		}
		if v.Raw != placeholder || (key != "messages" && (key != "tools" || req.Functions() == 0)) {
			continue
		}
		dst = append(dst, body[at:v.At]...)
		if key == "messages" {
			dst = appendMessages(dst, req)
		} else {
			dst = appendTools(dst, req.Tools)
		}
		at = v.At + len(v.Raw)
	}
	return append(dst, body[at:]...)
}

// appendSpliced appends req.Body with the edits AppendRequest makes, in one pass: the
// model's value replaced; for a stream, stream set to true and
// stream_options.include_usage to true (each added at the end when absent); otherwise
// a stream member that is true set to false.
func appendSpliced(dst []byte, req *translate.Request, opts *translate.Options) ([]byte, error) {
	body, sp := req.Body, &req.Spans
	// edits are in body order: the parser saw each member once (duplicates are errors).
	type edit struct {
		at   translate.Span
		with string // "" for the model's value
	}
	var buf [3]edit
	edits := append(buf[:0], edit{at: sp.Model})
	var tail string // members added before the closing brace
	if opts.Stream {
		if sp.Stream.End == 0 {
			tail = `,"stream":true`
		} else if body[sp.Stream.Start:sp.Stream.End] != "true" {
			edits = append(edits, edit{sp.Stream, "true"})
		}
		if sp.StreamOptions.End == 0 {
			tail += `,"stream_options":{"include_usage":true}`
		} else if v := body[sp.StreamOptions.Start:sp.StreamOptions.End]; v == "null" {
			edits = append(edits, edit{sp.StreamOptions, `{"include_usage":true}`})
		} else if !req.IncludeUsage {
			so, err := sjson.Set(v, "include_usage", true)
			if err != nil {
				return dst, translate.Errorf("", "rewriting the request: %v", err)
			}
			edits = append(edits, edit{sp.StreamOptions, so})
		}
	} else if sp.Stream.End > 0 && body[sp.Stream.Start:sp.Stream.End] == "true" {
		edits = append(edits, edit{sp.Stream, "false"})
	}
	slices.SortFunc(edits, func(a, b edit) int { return a.at.Start - b.at.Start }) // a few, in body order
	at := 0
	for _, e := range edits {
		dst = append(dst, body[at:e.at.Start]...)
		if e.with == "" {
			dst = jsonx.AppendString(dst, opts.UpstreamModel)
		}
		dst = append(dst, e.with...)
		at = e.at.End
	}
	if tail == "" {
		return append(dst, body[at:]...), nil
	}
	end := strings.LastIndexByte(body, '}')
	if end < at {
		return dst, translate.Errorf("", "rewriting the request: the body is not a JSON object")
	}
	dst = append(dst, body[at:end]...)
	dst = append(dst, tail...)
	return append(dst, body[end:]...), nil
}

// appendMessages appends messages as an OpenAI chat messages array.
// Their text is read through req's methods (translate.LiteralReader).
func appendMessages(dst []byte, req *translate.Request) []byte {
	msgs := req.Messages
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
			dst = req.AppendToolOutput(dst, m)
		case len(m.Content) == 1 && m.Content[0].Type == translate.PartText:
			dst = req.AppendText(dst, m.Content[0].Text)
		default:
			dst = appendOpenAIParts(dst, req, m.Content)
		}
		if m.Refusal != "" {
			dst = append(dst, `,"refusal":`...)
			dst = req.AppendText(dst, m.Refusal)
		}
		if m.ToolCallID != "" {
			dst = append(dst, `,"tool_call_id":`...)
			dst = jsonx.AppendString(dst, m.ToolCallID)
		}
		if len(m.ToolCalls) > 0 {
			dst = append(dst, `,"tool_calls":`...)
			dst = req.AppendToolCalls(dst, m.ToolCalls)
		}
		dst = append(dst, '}')
	}
	return append(dst, ']')
}

func appendOpenAIParts(dst []byte, req *translate.Request, parts []translate.Part) []byte {
	dst = append(dst, '[')
	for i, p := range parts {
		if i > 0 {
			dst = append(dst, ',')
		}
		switch p.Type {
		case translate.PartText:
			dst = append(dst, `{"type":"text","text":`...)
			dst = req.AppendText(dst, p.Text)
		case translate.PartRefusal:
			dst = append(dst, `{"type":"refusal","refusal":`...)
			dst = req.AppendText(dst, p.Text)
		case translate.PartImage:
			dst = append(dst, `{"type":"image_url","image_url":{"url":`...)
			dst = jsonx.AppendString(dst, p.Media.URL)
			if p.Media.Detail != "" {
				dst = append(dst, `,"detail":`...)
				dst = jsonx.AppendString(dst, p.Media.Detail)
			}
			dst = append(dst, '}')
		case translate.PartFile:
			dst = append(dst, `{"type":"file","file":{`...)
			sep := ""
			for _, kv := range [...][2]string{{"file_data", p.Media.FileData}, {"file_id", p.Media.FileID}, {"filename", p.Media.Filename}} {
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
			dst = jsonx.AppendString(dst, p.Media.AudioData)
			dst = append(dst, `,"format":`...)
			dst = jsonx.AppendString(dst, p.Media.AudioFormat)
			dst = append(dst, '}')
		}
		dst = append(dst, '}')
	}
	return append(dst, ']')
}

// appendTools appends tools as an OpenAI chat tools array.
func appendTools(dst []byte, tools []translate.Tool) []byte {
	dst = append(dst, '[')
	k := 0
	for _, t := range tools {
		if t.Builtin != nil {
			continue // another API's built-in tool
		}
		if k > 0 {
			dst = append(dst, ',')
		}
		k++
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
	// sc reads the current event; its arena holds the event's decoded strings.
	sc      jsonx.Scanner
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
	sc := &d.sc
	sc.Reset(jsonx.View(data))
	root, ok := sc.Root()
	if !ok { // unreadable: the state is untouched, and the caller may skip it
		return translate.MalformedEvent(upstreamMalformed("openai", data))
	}
	var top chunkMembers
	top.read(sc, root)
	if e := top[chunkError]; e.Exists() {
		ue := openAIError(sc, 500, e)
		if err := emit(&translate.Event{Kind: translate.EventError, Err: ue}); err != nil {
			return err
		}
		return ue
	}
	return decodeOpenAIChunk(sc, &top, &d.started, &d.finish, emit)
}

// chunkMembers are the members of a chunk or a completion the decoder reads (chunk*),
// read in one pass (Scanner.Members: the first of each name, as Get reads it).
type chunkMembers [chunkN]jsonx.Value

// Positions in chunkMembers, and of a choice's and a message's (or delta's) members.
const (
	chunkID = iota
	chunkModel
	chunkChoices
	chunkUsage
	chunkError
	chunkN
)

const (
	choiceIndex = iota
	choiceDelta
	choiceMessage
	choiceLogprobs
	choiceFinish
	choiceN
)

const (
	deltaReasoningContent = iota
	deltaReasoning
	deltaContent
	deltaRefusal
	deltaToolCalls
	deltaN
)

func (m *chunkMembers) read(sc *jsonx.Scanner, root jsonx.Value) {
	sc.Members(root, []string{"id", "model", "choices", "usage", "error"}, m[:])
}

// decodeOpenAIChunk emits the events of one chunk, or of a whole completion when top are
// a chat.completion's members (message instead of delta). Each object is read in one
// pass (Scanner.Members), not once for each member the decoder looks up.
func decodeOpenAIChunk(sc *jsonx.Scanner, top *chunkMembers, started, finished *bool, emit translate.Emit) error {
	var err error
	send := func(ev *translate.Event) {
		if err == nil {
			err = emit(ev)
		}
	}
	if !*started {
		*started = true
		send(&translate.Event{Kind: translate.EventStart, ID: top[chunkID].Str, Model: top[chunkModel].Str})
	}
	sc.Each(top[chunkChoices], func(_ string, c jsonx.Value) bool {
		var cm [choiceN]jsonx.Value
		sc.Members(c, []string{"index", "delta", "message", "logprobs", "finish_reason"}, cm[:])
		choice := int(cm[choiceIndex].Int())
		d := cm[choiceDelta]
		if !d.Exists() {
			d = cm[choiceMessage]
		}
		var dm [deltaN]jsonx.Value
		sc.Members(d, []string{"reasoning_content", "reasoning", "content", "refusal", "tool_calls"}, dm[:])
		if r := dm[deltaReasoningContent]; r.Str != "" {
			send(&translate.Event{Kind: translate.EventReasoningDelta, Choice: choice, Text: r.Str})
		} else if r := dm[deltaReasoning]; r.Kind == jsonx.String && r.Str != "" {
			send(&translate.Event{Kind: translate.EventReasoningDelta, Choice: choice, Text: r.Str})
		}
		lp := openAILogprobs(sc, sc.Get(cm[choiceLogprobs], "content"))
		if t := dm[deltaContent]; t.Str != "" {
			send(&translate.Event{Kind: translate.EventTextDelta, Choice: choice, Text: t.Str, Logprobs: lp})
		} else if lp != nil {
			send(&translate.Event{Kind: translate.EventLogprobs, Choice: choice, Logprobs: lp})
		}
		if t := dm[deltaRefusal]; t.Str != "" {
			send(&translate.Event{Kind: translate.EventRefusalDelta, Choice: choice, Text: t.Str})
		}
		pos := 0
		sc.Each(dm[deltaToolCalls], func(_ string, tc jsonx.Value) bool {
			var tm, fm [3]jsonx.Value // index, id, function; name, arguments
			sc.Members(tc, []string{"index", "id", "function"}, tm[:])
			sc.Members(tm[2], []string{"name", "arguments"}, fm[:2])
			key := pos
			if ix := tm[0]; ix.Exists() {
				key = int(ix.Int())
			}
			pos++
			if id := tm[1]; id.Str != "" {
				send(&translate.Event{Kind: translate.EventToolCallStart, Choice: choice, Index: key, CallID: id.Str, Name: fm[0].Str})
			}
			if a := fm[1]; a.Str != "" {
				send(&translate.Event{Kind: translate.EventToolCallArgsDelta, Choice: choice, Index: key, Text: a.Str})
			}
			return err == nil
		})
		if f := cm[choiceFinish]; f.Str != "" {
			*finished = true
			send(&translate.Event{Kind: translate.EventFinish, Choice: choice, FinishReason: f.Str})
		}
		return err == nil
	})
	if u := top[chunkUsage]; u.Kind == jsonx.Object {
		send(&translate.Event{Kind: translate.EventUsage, Usage: openAIUsage(sc, u)})
	}
	return err
}

// openAILogprobs decodes a choice's logprobs.content (ChatCompletionTokenLogprob items);
// nil when there are none.
func openAILogprobs(sc *jsonx.Scanner, content jsonx.Value) []translate.TokenLogprob {
	if content.Kind != jsonx.Array {
		return nil
	}
	var out []translate.TokenLogprob
	sc.Each(content, func(_ string, t jsonx.Value) bool {
		tok := sc.Get(t, "token").Str
		lp := translate.TokenLogprob{Token: tok, Logprob: sc.Get(t, "logprob").Float(), Bytes: openAITokenBytes(sc, tok, sc.Get(t, "bytes"))}
		sc.Each(sc.Get(t, "top_logprobs"), func(_ string, top jsonx.Value) bool {
			tok := sc.Get(top, "token").Str
			lp.Top = append(lp.Top, translate.TopLogprob{Token: tok, Logprob: sc.Get(top, "logprob").Float(), Bytes: openAITokenBytes(sc, tok, sc.Get(top, "bytes"))})
			return true
		})
		out = append(out, lp)
		return true
	})
	return out
}

// openAITokenBytes returns a token's bytes array when it differs from the token's own
// UTF-8 bytes (a token holding part of a character), else nil.
func openAITokenBytes(sc *jsonx.Scanner, token string, arr jsonx.Value) []byte {
	if arr.Kind != jsonx.Array {
		return nil
	}
	same, n := true, 0
	sc.Each(arr, func(_ string, v jsonx.Value) bool {
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
	sc.Each(arr, func(_ string, v jsonx.Value) bool {
		out = append(out, byte(v.Int()))
		return true
	})
	return out
}

// openAIUsage reads the usage object u in one pass (the first member of each name, as Get
// would), then the one member it needs of each details object.
func openAIUsage(sc *jsonx.Scanner, u jsonx.Value) translate.Usage {
	var m [4]jsonx.Value
	sc.Members(u, []string{"prompt_tokens", "completion_tokens", "prompt_tokens_details", "completion_tokens_details"}, m[:])
	return translate.Usage{
		PromptTokens:     int(m[0].Int()),
		CompletionTokens: int(m[1].Int()),
		CachedTokens:     int(sc.Get(m[2], "cached_tokens").Int()),
		ReasoningTokens:  int(sc.Get(m[3], "reasoning_tokens").Int()),
	}
}

// usageAt reads the value at the cursor into v, as ValueRaw would, and when it is an
// object also the usage it reports, in the same pass: what openAIUsage reads of it (the
// first member of each name), without a second scan of the object. It reports false on a
// syntax error; a value that is not an object reports no usage.
func usageAt(sc *jsonx.Scanner, v *jsonx.Value) (translate.Usage, bool) {
	if at := sc.Pos(); at < len(sc.Input()) && sc.Input()[at] == '{' {
		if u, end, ok := usageCompact(sc.Input(), at); ok { // OpenAI's layout, read by bytes
			v.Set(jsonx.Object, sc.Input()[at:end], at, "")
			sc.Seek(end)
			return u, true
		}
	}
	return usageGeneral(sc, v)
}

// usageGeneral is usageAt for any layout, through the scanner's member loop.
func usageGeneral(sc *jsonx.Scanner, v *jsonx.Value) (translate.Usage, bool) {
	var u translate.Usage
	if sc.Peek() != '{' {
		return u, sc.ValueRaw(v)
	}
	at := sc.Pos()
	var seen [4]bool
	var x jsonx.Value
	for n := 0; sc.NextField(&n); {
		var ok bool
		switch k := sc.Key(); {
		case k == "prompt_tokens" && !seen[0]:
			seen[0], ok = true, sc.ValueRaw(&x)
			u.PromptTokens = int(x.Int())
		case k == "completion_tokens" && !seen[1]:
			seen[1], ok = true, sc.ValueRaw(&x)
			u.CompletionTokens = int(x.Int())
		case k == "prompt_tokens_details" && !seen[2]:
			seen[2] = true
			u.CachedTokens, ok = memberIntAt(sc, "cached_tokens")
		case k == "completion_tokens_details" && !seen[3]:
			seen[3] = true
			u.ReasoningTokens, ok = memberIntAt(sc, "reasoning_tokens")
		default:
			ok = sc.Skip()
		}
		if !ok {
			return translate.Usage{}, false
		}
	}
	if sc.Failed() {
		return translate.Usage{}, false
	}
	v.Set(jsonx.Object, sc.Input()[at:sc.Pos()], at, "")
	return u, true
}

// memberIntAt reads past the value at the cursor, checking it, and returns the integer
// of its first member named key when it is an object (0 when that is missing or not a
// number, as Get(...).Int() reads it). It reports false on a syntax error.
func memberIntAt(sc *jsonx.Scanner, key string) (int, bool) {
	if sc.Peek() != '{' {
		return 0, sc.Skip()
	}
	var x jsonx.Value
	found := false
	for n := 0; sc.NextField(&n); {
		ok := false
		if !found && sc.Key() == key {
			found, ok = true, sc.ValueRaw(&x)
		} else {
			ok = sc.Skip()
		}
		if !ok {
			return 0, false
		}
	}
	return int(x.Int()), !sc.Failed()
}

// ParseUsage reads an OpenAI usage object (raw JSON); ok is false when there is none.
func ParseUsage(raw []byte) (u translate.Usage, ok bool) {
	sc := jsonx.NewScanner(jsonx.View(raw))
	r, ok := sc.Root()
	if !ok || r.Kind != jsonx.Object {
		return translate.Usage{}, false
	}
	return openAIUsage(&sc, r), true
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
//
// One pass checks the body and reads what the events need (answer.read): the top-level
// members, the usage, and each choice's members and its message's, so that the answer's
// text is read once; an answer with more choices than the pass keeps walks its choices
// again.
func (p openAIChat) DecodeResponse(body []byte, emit translate.Emit) error {
	return p.DecodeResponseInto(body, new(translate.Event), emit)
}

// DecodeResponseInto is DecodeResponse emitting the events of an answer of up to
// answerChoices choices through ev (translate.ResponseDecoderInto).
func (openAIChat) DecodeResponseInto(body []byte, ev *translate.Event, emit translate.Emit) error {
	sc := jsonx.NewScanner(jsonx.View(body))
	var a answer
	if !a.read(&sc) {
		return upstreamMalformed("openai", body)
	}
	if e := a.top[chunkError]; e.Kind == jsonx.Object {
		return openAIError(&sc, 502, e)
	}
	if a.top[chunkChoices].Kind != jsonx.Array {
		return upstreamMalformed("openai", body)
	}
	if a.more {
		started, finished := false, false
		return decodeOpenAIChunk(&sc, &a.top, &started, &finished, emit)
	}
	return a.emit(&sc, ev, emit)
}

func (openAIChat) DecodeError(status int, body []byte) *translate.UpstreamError {
	sc := jsonx.NewScanner(string(body)) // a copy: the error outlives body
	root, _ := sc.Root()
	e := sc.Get(root, "error")
	if e.Kind != jsonx.Object {
		return &translate.UpstreamError{Status: status, Type: translate.ErrorType(status), Message: snippet(body, status), Retryable: translate.RetryableStatus(status)}
	}
	return openAIError(&sc, status, e)
}

func openAIError(sc *jsonx.Scanner, status int, e jsonx.Value) *translate.UpstreamError {
	code := sc.Get(e, "code")
	ue := &translate.UpstreamError{
		Status:    status,
		Type:      strings.Clone(sc.Get(e, "type").Str),
		Param:     strings.Clone(sc.Get(e, "param").Str),
		Message:   strings.Clone(sc.Get(e, "message").Str),
		Retryable: translate.RetryableStatus(status),
	}
	if code.Kind == jsonx.String {
		ue.Code = strings.Clone(code.Str)
	} else if code.Kind == jsonx.Number {
		ue.Code = strings.Clone(code.Raw)
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

// streamFlag reports whether the request body sc reads has "stream": true (the first
// such member, as the request parser reads it).
func streamFlag(sc *jsonx.Scanner) bool {
	root, _ := sc.Root()
	return sc.Get(root, "stream").Kind == jsonx.True
}

// ContextExceeded implements translate.ContextLimit: OpenAI's 400 with the code
// context_length_exceeded (recorded: testdata/fixtures/openai-chat/errors/).
func (openAIChat) ContextExceeded(e *translate.UpstreamError) bool {
	return e.Status == 400 && e.Code == "context_length_exceeded"
}

// ReadsLiterals marks the encoder as a translate.LiteralReader: AppendRequest reads
// message strings only through the Request's methods (appendMessages), and a body it
// forwards unedited keeps them as the client wrote them.
func (openAIChat) ReadsLiterals() {}
