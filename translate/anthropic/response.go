package anthropic

import (
	"strconv"
	"strings"

	"github.com/agate-gateway/agate/internal/jsonx"
	"github.com/agate-gateway/agate/translate"
)

// anthropicFinish maps a Messages API stop_reason to an OpenAI finish reason. The spec's
// StopReason enum is end_turn, max_tokens, stop_sequence, tool_use, pause_turn, refusal;
// model_context_window_exceeded is sent by newer models. pause_turn (a server-tool turn
// paused) ends the response normally as far as the client can tell.
func anthropicFinish(reason string) string {
	switch reason {
	case "max_tokens", "model_context_window_exceeded":
		return translate.FinishLength
	case "tool_use":
		return translate.FinishToolCalls
	case "refusal":
		return translate.FinishContentFilter
	}
	return translate.FinishStop // end_turn, stop_sequence, pause_turn, null
}

// anthropicUsage holds the Messages API token counts seen so far.
type anthropicUsage struct {
	top anthropicCounts
	// iter is the sum over usage.iterations, valid when hasIter: with server-side
	// compaction the top-level counts are those of the last sampling iteration only,
	// and the billed totals are the sums over every iteration (compaction included).
	iter    anthropicCounts
	hasIter bool
}

// anthropicCounts are the four token counts of one Anthropic usage object.
type anthropicCounts struct {
	input, output, cacheRead, cacheWrite int
}

// merge takes every count usage carries, replacing those seen before: message_delta's
// counts are cumulative and supersede message_start's when present.
func (u *anthropicUsage) merge(sc *jsonx.Scanner, usage jsonx.Value) {
	sc.Each(usage, func(k string, v jsonx.Value) bool {
		if k == "iterations" {
			if v.Kind == jsonx.Array {
				u.iter, u.hasIter = anthropicCounts{}, false
				sc.Each(v, func(_ string, it jsonx.Value) bool {
					sc.Each(it, func(k string, v jsonx.Value) bool {
						if n := u.iter.count(k); n != nil && v.Kind == jsonx.Number {
							*n += int(v.Int())
						}
						return true
					})
					u.hasIter = true
					return true
				})
			}
		} else if n := u.top.count(k); n != nil && v.Kind == jsonx.Number {
			*n = int(v.Int())
		}
		return true
	})
}

// mergeAt is merge for the value at the cursor, read as it is checked: the scanner moves
// past the value, checking it, and the counts it carries are taken as merge takes them
// (every member, a later one of a name replacing an earlier). A value that is not an
// object carries none. It reports false on a syntax error.
func (u *anthropicUsage) mergeAt(sc *jsonx.Scanner) bool {
	if at := sc.Pos(); at < len(sc.Input()) && sc.Input()[at] == '{' {
		if end, ok := u.mergeCompact(sc.Input(), at); ok { // the API's layout, read by bytes
			sc.Seek(end)
			return true
		}
	}
	return u.mergeGeneral(sc)
}

// mergeGeneral is mergeAt for any layout, through the scanner's member loop.
func (u *anthropicUsage) mergeGeneral(sc *jsonx.Scanner) bool {
	if sc.Peek() != '{' {
		return sc.Skip()
	}
	for n := 0; sc.NextField(&n); {
		k := sc.Key()
		var ok bool
		switch {
		case k == "iterations" && sc.Peek() == '[':
			u.iter, u.hasIter = anthropicCounts{}, false
			for e := 0; sc.NextElem(&e); {
				if !u.iter.addAt(sc) {
					return false
				}
				u.hasIter = true
			}
			ok = !sc.Failed()
		case k != "iterations" && u.top.count(k) != nil:
			var v jsonx.Value
			if ok = sc.ValueRaw(&v); ok && v.Kind == jsonx.Number {
				*u.top.count(k) = int(v.Int())
			}
		default:
			ok = sc.Skip()
		}
		if !ok {
			return false
		}
	}
	return !sc.Failed()
}

// addAt adds the counts of the value at the cursor, one of usage.iterations, as merge
// does (an object's counts that are numbers; nothing for another value), checking it.
func (c *anthropicCounts) addAt(sc *jsonx.Scanner) bool {
	if sc.Peek() != '{' {
		return sc.Skip()
	}
	var v jsonx.Value
	for n := 0; sc.NextField(&n); {
		p := c.count(sc.Key())
		if p == nil {
			if !sc.Skip() {
				return false
			}
			continue
		}
		if !sc.ValueRaw(&v) {
			return false
		}
		if v.Kind == jsonx.Number {
			*p += int(v.Int())
		}
	}
	return !sc.Failed()
}

// count returns the count a usage field names, or nil for other fields.
func (c *anthropicCounts) count(field string) *int {
	switch field {
	case "input_tokens":
		return &c.input
	case "output_tokens":
		return &c.output
	case "cache_read_input_tokens":
		return &c.cacheRead
	case "cache_creation_input_tokens":
		return &c.cacheWrite
	}
	return nil
}

// openai returns the usage in OpenAI semantics: Anthropic's input_tokens excludes cache
// reads and writes, OpenAI's prompt_tokens includes them. output_tokens already includes
// thinking; the API does not report thinking tokens apart. When usage.iterations is
// present its sums are the billed totals.
func (u *anthropicUsage) openai() translate.Usage {
	c := u.top
	if u.hasIter {
		c = u.iter
	}
	return translate.Usage{
		PromptTokens:        c.input + c.cacheRead + c.cacheWrite,
		CompletionTokens:    c.output,
		CachedTokens:        c.cacheRead,
		CacheCreationTokens: c.cacheWrite,
	}
}

// anthropicThinking gathers the thinking and redacted_thinking blocks that precede a
// tool_use block, as the JSON array AppendRequest restores from the call id.
type anthropicThinking struct {
	pending   []byte // blocks gathered since the last tool_use, comma-separated
	text, sig []byte // the open thinking block
}

func (t *anthropicThinking) addThinking(text, sig string) {
	if len(t.pending) > 0 {
		t.pending = append(t.pending, ',')
	}
	t.pending = append(t.pending, `{"type":"thinking","thinking":`...)
	t.pending = jsonx.AppendString(t.pending, text)
	t.pending = append(t.pending, `,"signature":`...)
	t.pending = jsonx.AppendString(t.pending, sig)
	t.pending = append(t.pending, '}')
}

func (t *anthropicThinking) addRedacted(data string) {
	if len(t.pending) > 0 {
		t.pending = append(t.pending, ',')
	}
	t.pending = append(t.pending, `{"type":"redacted_thinking","data":`...)
	t.pending = jsonx.AppendString(t.pending, data)
	t.pending = append(t.pending, '}')
}

// callID returns the id for a tool_use block, carrying the pending blocks if any.
func (t *anthropicThinking) callID(id string) string {
	if len(t.pending) == 0 {
		return id
	}
	state := make([]byte, 0, len(t.pending)+2)
	state = append(state, '[')
	state = append(state, t.pending...)
	state = append(state, ']')
	t.pending = t.pending[:0]
	return translate.CarryID(id, state)
}

// responseMembers are the top-level members of a Message that DecodeResponse reads, at
// the indexes named below.
var responseMembers = [...]string{"type", "id", "model", "content", "usage", "stop_reason"}

const (
	respType = iota
	respID
	respModel
	respContent
	respUsage
	respStopReason
)

// responseMember returns the index of key in responseMembers, or -1: a switch the
// compiler builds over the names, where a search of the list compared key with each name
// before it. TestResponseMemberMatchesNames holds it to the list.
func responseMember(key string) int {
	switch key {
	case "type":
		return respType
	case "id":
		return respID
	case "model":
		return respModel
	case "content":
		return respContent
	case "usage":
		return respUsage
	case "stop_reason":
		return respStopReason
	}
	return -1
}

// blockMembers are the members of a content block DecodeResponse reads (in one pass per
// block), at the indexes named below.
var blockMembers = [...]string{"type", "text", "thinking", "signature", "data", "id", "name", "input"}

const (
	blockType = iota
	blockText
	blockThinking
	blockSignature
	blockData
	blockID
	blockName
	blockInput
)

// responseRoot is RootMembers(responseMembers, m) for a whole Messages response, except
// that the first usage member is merged into u as it is checked instead of being read
// again afterwards (m[respUsage] stays Missing).
func responseRoot(sc *jsonx.Scanner, m []jsonx.Value, u *anthropicUsage) (jsonx.Value, bool) {
	if sc.Peek() != '{' {
		return sc.Root()
	}
	at := sc.Pos()
	usage := false
	for n := 0; sc.NextField(&n); {
		j := responseMember(sc.Key())
		var ok bool
		switch {
		case j == respUsage && !usage:
			usage, ok = true, u.mergeAt(sc)
		case j >= 0 && j != respUsage:
			ok = sc.First(&m[j])
		default:
			ok = sc.Skip()
		}
		if !ok {
			return jsonx.Value{}, false
		}
	}
	if sc.Failed() || !sc.AtEnd() {
		return jsonx.Value{}, false
	}
	return jsonx.Value{Kind: jsonx.Object, Raw: sc.Input()[at:sc.Pos()], At: at}, true
}

// DecodeResponse decodes a whole Messages API response.
func (p anthropicProvider) DecodeResponse(body []byte, emit translate.Emit) error {
	return p.DecodeResponseInto(body, new(translate.Event), emit)
}

// DecodeResponseInto is DecodeResponse emitting every event through ev
// (translate.ResponseDecoderInto).
func (anthropicProvider) DecodeResponseInto(body []byte, ev *translate.Event, emit translate.Emit) error {
	sc := jsonx.NewScanner(jsonx.View(body))
	// One pass checks the body, finds the members read below and reads the usage.
	var m [len(responseMembers)]jsonx.Value
	var u anthropicUsage
	root, ok := responseRoot(&sc, m[:], &u)
	if !ok {
		return anthropicMalformed("response", body)
	}
	if m[respType].Str == "error" {
		return anthropicErrorEvent(&sc, root)
	}
	*ev = translate.Event{Kind: translate.EventStart, ID: m[respID].Str, Model: m[respModel].Str}
	if err := emit(ev); err != nil {
		return err
	}
	var th anthropicThinking
	var err error
	n := 0
	var f [len(blockMembers)]jsonx.Value
	sc.EachMembers(m[respContent], blockMembers[:], f[:], func(b jsonx.Value) bool {
		*ev = translate.Event{}
		switch typ := f[blockType].Str; typ {
		case "text":
			*ev = translate.Event{Kind: translate.EventTextDelta, Text: f[blockText].Str}
			err = emit(ev)
		case "thinking":
			block := translate.ThinkingBlock{Dialect: anthropicName, Type: "thinking", Thinking: f[blockThinking].Str, Signature: f[blockSignature].Str}
			th.addThinking(block.Thinking, block.Signature)
			*ev = translate.Event{Kind: translate.EventReasoningDelta, Text: block.Thinking}
			if err = emit(ev); err == nil {
				*ev = translate.Event{Kind: translate.EventReasoningBlock, Block: &block}
				err = emit(ev)
			}
		case "redacted_thinking":
			block := translate.ThinkingBlock{Dialect: anthropicName, Type: "redacted_thinking", Data: f[blockData].Str}
			th.addRedacted(block.Data)
			*ev = translate.Event{Kind: translate.EventReasoningBlock, Block: &block}
			err = emit(ev)
		case "tool_use":
			*ev = translate.Event{Kind: translate.EventToolCallStart, Index: n, CallID: th.callID(f[blockID].Str), Name: f[blockName].Str}
			if err = emit(ev); err != nil {
				return false
			}
			args := jsonx.AppendCompact(nil, f[blockInput].Raw)
			if len(args) == 0 {
				args = append(args, "{}"...)
			}
			*ev = translate.Event{Kind: translate.EventToolCallArgsDelta, Index: n, Text: jsonx.View(args)}
			if err = emit(ev); err != nil {
				return false
			}
			*ev = translate.Event{Kind: translate.EventToolCallEnd, Index: n}
			err = emit(ev)
			n++
		default:
			// server_tool_use, web_search_tool_result and other server-side blocks are
			// the upstream's own calls, never client tool calls: passed on whole for
			// clients of this wire.
			if isBuiltinBlock(typ) {
				*ev = translate.Event{Kind: translate.EventBuiltinItem,
					Item: &translate.Item{Dialect: translate.DialectAnthropic, Type: typ, Raw: b.Raw}}
				err = emit(ev)
			}
		}
		return err == nil
	})
	if err != nil {
		return err
	}
	*ev = translate.Event{Kind: translate.EventUsage, Usage: u.openai()}
	if err := emit(ev); err != nil {
		return err
	}
	*ev = translate.Event{Kind: translate.EventFinish, FinishReason: anthropicFinish(m[respStopReason].Str)}
	return emit(ev)
}

// DecodeError maps an Anthropic error response to the error the client sees: the status
// is kept except 529 overloaded, which becomes 503; the message is Anthropic's own.
func (anthropicProvider) DecodeError(status int, body []byte) *translate.UpstreamError {
	client := status
	if status == 529 {
		client = 503
	}
	e := &translate.UpstreamError{Status: client, Type: translate.ErrorType(client), Retryable: translate.RetryableStatus(status)}
	sc := jsonx.NewScanner(jsonx.View(body))
	if root, ok := sc.Root(); ok {
		if msg := sc.Path(root, "error", "message"); msg.Kind == jsonx.String {
			e.Message = strings.Clone(msg.Str)
			e.Code = strings.Clone(sc.Path(root, "error", "type").Str)
			if e.Code == "not_found_error" && strings.HasPrefix(e.Message, "model:") {
				e.Code = "model_not_found" // what OpenAI says for an unknown model
			}
			return e
		}
	}
	e.Message = "anthropic returned HTTP " + strconv.Itoa(status) + anthropicSnippet(body)
	return e
}

// anthropicSnippet returns ": " and up to 200 bytes of body for an error message.
func anthropicSnippet(body []byte) string {
	const max = 200
	if len(body) == 0 {
		return " with an empty body"
	}
	if len(body) > max {
		return ": " + string(body[:max]) + "..."
	}
	return ": " + string(body)
}

// anthropicErrorStatus returns the HTTP status that corresponds to an Anthropic error
// type, for errors that arrive in a 200 response (mid-stream error events).
func anthropicErrorStatus(typ string) int {
	switch typ {
	case "invalid_request_error":
		return 400
	case "authentication_error":
		return 401
	case "billing_error":
		return 402
	case "permission_error":
		return 403
	case "not_found_error":
		return 404
	case "request_too_large":
		return 413
	case "rate_limit_error":
		return 429
	case "api_error":
		return 500
	case "overloaded_error":
		return 503
	case "timeout_error":
		return 504
	}
	return 502
}

// anthropicErrorEvent converts an {"type":"error","error":{...}} object.
func anthropicErrorEvent(sc *jsonx.Scanner, root jsonx.Value) *translate.UpstreamError {
	typ := strings.Clone(sc.Path(root, "error", "type").Str)
	status := anthropicErrorStatus(typ)
	msg := strings.Clone(sc.Path(root, "error", "message").Str)
	if msg == "" {
		msg = "anthropic reported " + typ
	}
	return &translate.UpstreamError{
		Status: status, Type: translate.ErrorType(status), Code: typ, Message: msg,
		Retryable: translate.RetryableStatus(status),
	}
}

//go:noinline // see anthropicStream.malformed
func anthropicMalformed(what string, data []byte) *translate.UpstreamError {
	return &translate.UpstreamError{
		Status: 502, Type: "api_error",
		Message: "decoding anthropic " + what + ": not valid JSON" + anthropicSnippet(data),
	}
}

// ContextExceeded implements translate.ContextLimit: Anthropic says it with a 400
// invalid_request_error whose message starts "prompt is too long" (recorded:
// testdata/fixtures/anthropic/errors/), there being no code of its own; Claude on Vertex
// AI says it with a 413 invalid_request_error "Prompt is too long" (as
// anthropics/anthropic-sdk-python#1028 and anthropics/claude-code#2569 quote it). A 413
// request_too_large (a body over the byte limit) is not one: a larger context would not
// take it either.
func (anthropicProvider) ContextExceeded(e *translate.UpstreamError) bool {
	const prefix = "prompt is too long"
	return (e.Status == 400 || e.Status == 413) && e.Code == "invalid_request_error" &&
		len(e.Message) >= len(prefix) && strings.EqualFold(e.Message[:len(prefix)], prefix)
}
