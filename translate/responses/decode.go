package responses

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/agate-gateway/agate/internal/jsonx"
	"github.com/agate-gateway/agate/translate"
)

// DecodeError maps an OpenAI error body ({"error":{message,type,param,code}}) to the
// client's error. The upstream speaks OpenAI already, so its status, type, param and code
// are passed on; quota exhaustion (insufficient_quota) is a 429 that no retry fixes.
func (responsesProvider) DecodeError(status int, body []byte) *translate.UpstreamError {
	e := &translate.UpstreamError{Status: status, Type: translate.ErrorType(status), Retryable: translate.RetryableStatus(status)}
	sc := jsonx.NewScanner(string(body)) // a copy: the error outlives body
	root, ok := sc.Root()
	eo := sc.Get(root, "error")
	if !ok || eo.Kind != jsonx.Object {
		e.Message = "upstream returned HTTP " + strconv.Itoa(status) + ": " + responsesSnippet(body)
		if eo.Kind == jsonx.String {
			e.Message = eo.Str
		}
		return e
	}
	if m := sc.Get(eo, "message").Str; m != "" {
		e.Message = m
	} else {
		e.Message = "upstream returned HTTP " + strconv.Itoa(status)
	}
	if t := sc.Get(eo, "type").Str; t != "" {
		e.Type = t
	}
	e.Param, e.Code = sc.Get(eo, "param").Str, sc.Get(eo, "code").Str
	if e.Code == "insufficient_quota" || e.Type == "insufficient_quota" {
		e.Retryable = false
	}
	return e
}

// responsesSnippet returns a bounded, printable prefix of an unparseable body.
func responsesSnippet(b []byte) string {
	const max = 256
	if len(b) > max {
		return string(b[:max]) + "..."
	}
	if len(b) == 0 {
		return "(empty body)"
	}
	return string(b)
}

// responsesFailure maps an in-band failure (an error event or a failed response's error
// object) to an UpstreamError. The Responses API reports codes, not statuses, so the
// status is chosen from the code.
func responsesFailure(sc *jsonx.Scanner, eo jsonx.Value, flat bool, fallback string) *translate.UpstreamError {
	code, typ := strings.Clone(sc.Get(eo, "code").Str), strings.Clone(sc.Get(eo, "type").Str)
	if flat { // the type field is the event's own ("error")
		typ = ""
	}
	msg := strings.Clone(sc.Get(eo, "message").Str)
	if msg == "" {
		msg = fallback
	}
	status := 502
	switch code {
	case "rate_limit_exceeded", "insufficient_quota":
		status = 429
	case "server_error", "":
		status = 502
	case "invalid_prompt", "context_length_exceeded", "invalid_image", "invalid_image_format",
		"invalid_base64_image", "invalid_image_url", "image_too_large", "image_too_small",
		"image_parse_error", "image_content_policy_violation", "invalid_image_mode",
		"image_file_too_large", "unsupported_image_media_type", "empty_image_file",
		"failed_to_download_image", "image_file_not_found", "vector_store_timeout":
		status = 400
	}
	if typ == "" {
		typ = translate.ErrorType(status)
	}
	return &translate.UpstreamError{
		Status: status, Type: typ, Code: code, Param: strings.Clone(sc.Get(eo, "param").Str), Message: msg,
		Retryable: translate.RetryableStatus(status) && code != "insufficient_quota",
	}
}

// responsesUsage reads a Responses usage object. input_tokens already includes cached
// tokens and output_tokens includes reasoning tokens, as OpenAI chat counts them.
func responsesUsage(sc *jsonx.Scanner, u jsonx.Value) translate.Usage {
	return translate.Usage{
		PromptTokens:     int(sc.Get(u, "input_tokens").Int()),
		CompletionTokens: int(sc.Get(u, "output_tokens").Int()),
		CachedTokens:     int(sc.Path(u, "input_tokens_details", "cached_tokens").Int()),
		ReasoningTokens:  int(sc.Path(u, "output_tokens_details", "reasoning_tokens").Int()),
	}
}

// responsesFinish maps a terminal response's status to an OpenAI finish reason.
func responsesFinish(sc *jsonx.Scanner, resp jsonx.Value, calls bool) string {
	if sc.Get(resp, "status").Str == "incomplete" {
		if sc.Path(resp, "incomplete_details", "reason").Str == "content_filter" {
			return translate.FinishContentFilter
		}
		return translate.FinishLength // max_output_tokens, and any truncation reason added later
	}
	if calls {
		return translate.FinishToolCalls
	}
	return translate.FinishStop
}

// responsesCarry accumulates the reasoning items that precede a function call, to be
// carried in the call's id (CarryID) so that a stateless client sends them back. The state
// is {"id":"fc_...","reasoning":[{"id","summary":[{"text"}],"encrypted_content"}...]}.
type responsesCarry struct {
	items []byte // comma-separated reasoning objects
}

func (c *responsesCarry) addReasoning(sc *jsonx.Scanner, item jsonx.Value) {
	if len(c.items) > 0 {
		c.items = append(c.items, ',')
	}
	c.items = append(c.items, `{"id":`...)
	c.items = jsonx.AppendString(c.items, sc.Get(item, "id").Str)
	c.items = append(c.items, `,"summary":[`...)
	k := 0
	sc.Each(sc.Get(item, "summary"), func(_ string, s jsonx.Value) bool {
		if k > 0 {
			c.items = append(c.items, ',')
		}
		k++
		c.items = append(c.items, `{"text":`...)
		c.items = jsonx.AppendString(c.items, sc.Get(s, "text").Str)
		c.items = append(c.items, '}')
		return true
	})
	c.items = append(c.items, ']')
	if enc := sc.Get(item, "encrypted_content"); enc.Kind == jsonx.String {
		c.items = append(c.items, `,"encrypted_content":`...)
		c.items = jsonx.AppendString(c.items, enc.Str)
	}
	c.items = append(c.items, '}')
}

// callID returns the client-facing id for a function call: the plain call_id, or the
// call_id carrying the pending reasoning (which is then consumed).
func (c *responsesCarry) callID(callID, itemID string) string {
	if len(c.items) == 0 {
		return callID
	}
	state := make([]byte, 0, len(c.items)+len(itemID)+32)
	state = append(state, `{"id":`...)
	state = jsonx.AppendString(state, itemID)
	state = append(state, `,"reasoning":[`...)
	state = append(state, c.items...)
	state = append(state, `]}`...)
	c.items = c.items[:0]
	return translate.CarryID(callID, state)
}

// DecodeResponse decodes a whole Responses object into events.
func (responsesProvider) DecodeResponse(body []byte, emit translate.Emit) error {
	sc := jsonx.NewScanner(jsonx.View(body))
	resp, ok := sc.Root()
	if !ok {
		return &translate.UpstreamError{Status: 502, Type: "api_error", Message: "decoding responses body: not valid JSON: " + responsesSnippet(body)}
	}
	if resp.Kind != jsonx.Object {
		return &translate.UpstreamError{Status: 502, Type: "api_error", Message: "decoding responses body: not a JSON object"}
	}
	if err := emit(&translate.Event{Kind: translate.EventStart, ID: sc.Get(resp, "id").Str, Model: sc.Get(resp, "model").Str}); err != nil {
		return err
	}
	if sc.Get(resp, "status").Str == "failed" || sc.Get(resp, "error").Kind == jsonx.Object {
		ue := responsesFailure(&sc, sc.Get(resp, "error"), false, "the upstream response failed")
		if err := emit(&translate.Event{Kind: translate.EventError, Err: ue}); err != nil {
			return err
		}
		return ue
	}
	var (
		carry responsesCarry
		calls int
		err   error
	)
	sc.Each(sc.Get(resp, "output"), func(_ string, item jsonx.Value) bool {
		switch sc.Get(item, "type").Str {
		case "reasoning":
			err = eachSummary(&sc, item, func(text string) error {
				return emit(&translate.Event{Kind: translate.EventReasoningDelta, Text: text})
			})
			carry.addReasoning(&sc, item)
			if err == nil {
				err = emit(&translate.Event{Kind: translate.EventReasoningBlock, Block: reasoningBlock(&sc, item)})
			}
		case "message":
			sc.Each(sc.Get(item, "content"), func(_ string, p jsonx.Value) bool {
				switch sc.Get(p, "type").Str {
				case "output_text":
					err = emit(&translate.Event{Kind: translate.EventTextDelta, Text: sc.Get(p, "text").Str})
				case "refusal":
					err = emit(&translate.Event{Kind: translate.EventRefusalDelta, Text: sc.Get(p, "refusal").Str})
				}
				return err == nil
			})
		case "function_call":
			id := carry.callID(sc.Get(item, "call_id").Str, sc.Get(item, "id").Str)
			if err = emit(&translate.Event{Kind: translate.EventToolCallStart, Index: calls, CallID: id, Name: sc.Get(item, "name").Str}); err != nil {
				return false
			}
			if err = emit(&translate.Event{Kind: translate.EventToolCallArgsDelta, Index: calls, Text: sc.Get(item, "arguments").Str}); err != nil {
				return false
			}
			err = emit(&translate.Event{Kind: translate.EventToolCallEnd, Index: calls})
			calls++
		default:
			// A built-in tool's item (web_search_call...) is the upstream's own call,
			// never a client tool call: passed on whole for clients of this wire.
			if typ := sc.Get(item, "type").Str; builtinItem(typ) {
				err = emit(&translate.Event{Kind: translate.EventBuiltinItem,
					Item: &translate.Item{Dialect: translate.DialectResponses, Type: typ, Raw: item.Raw}})
			}
		}
		return err == nil
	})
	if err != nil {
		return err
	}
	if u := sc.Get(resp, "usage"); u.Kind == jsonx.Object {
		if err := emit(&translate.Event{Kind: translate.EventUsage, Usage: responsesUsage(&sc, u)}); err != nil {
			return err
		}
	}
	return emit(&translate.Event{Kind: translate.EventFinish, FinishReason: responsesFinish(&sc, resp, calls > 0)})
}

func responsesTruncated(phase string) *translate.UpstreamError {
	return &translate.UpstreamError{Status: 502, Type: "api_error",
		Message: fmt.Sprintf("responses stream ended %s, before response.completed", phase)}
}

// eachSummary calls f with the text of each summary part of a reasoning item, each but
// the first led by a blank line, until f returns an error, which it returns.
func eachSummary(sc *jsonx.Scanner, item jsonx.Value, f func(text string) error) error {
	var err error
	k := 0
	sc.Each(sc.Get(item, "summary"), func(_ string, s jsonx.Value) bool {
		text := sc.Get(s, "text").Str
		if k > 0 {
			text = "\n\n" + text
		}
		k++
		err = f(text)
		return err == nil
	})
	return err
}

// reasoningBlock returns a reasoning item as the core's reasoning block: its id, its
// summary parts joined by blank lines, its encrypted content.
func reasoningBlock(sc *jsonx.Scanner, item jsonx.Value) *translate.ThinkingBlock {
	b := &translate.ThinkingBlock{Type: "reasoning", ID: sc.Get(item, "id").Str}
	eachSummary(sc, item, func(text string) error {
		b.Thinking += text
		return nil
	})
	if enc := sc.Get(item, "encrypted_content"); enc.Kind == jsonx.String {
		b.Data = enc.Str
	}
	return b
}

// ContextExceeded implements translate.ContextLimit: the Responses API's error code
// context_length_exceeded, as chat completions says it.
func (responsesProvider) ContextExceeded(e *translate.UpstreamError) bool {
	return e.Status == 400 && e.Code == "context_length_exceeded"
}
