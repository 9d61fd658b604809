package messagesin

import (
	"strconv"
	"strings"

	"github.com/agate-gateway/agate/translate"
	"github.com/agate-gateway/agate/translate/internal/members"
	"github.com/tidwall/gjson"
)

// TopLevelFields are the top-level members of a Messages request that the parser reads or
// knowingly drops, lower case and space-separated (the form translate.CheckMemberNames
// takes). A body naming one of them twice, or in another case, is rejected: the anthropic
// passthrough forwards the client's bytes, which must read the same to every decoder.
const TopLevelFields = "model messages max_tokens system stream temperature top_p top_k stop_sequences " +
	"metadata tool_choice tools thinking output_config cache_control container context_management " +
	"inference_geo service_tier mcp_servers"

// dropped are the known top-level fields with no counterpart on translated routes; they
// are ignored without a trace (see the package doc). Any other unknown field is reported
// in Request.Extra, for the proxy to count as dropped.
const dropped = " cache_control container context_management inference_geo service_tier mcp_servers "

// Parse reads a POST /v1/messages body. Errors are *translate.ParamError values whose
// Param is the offending field's path (messages[1].content[0].type). The Request's Body is
// an OpenAI chat completions body equivalent to it (the openai provider forwards Body), not
// the Messages body, which the caller keeps for the anthropic passthrough.
func Parse(body []byte) (*translate.Request, error) { return parse(body, true) }

// ParseCountTokens reads a POST /v1/messages/count_tokens body: a Messages request
// without max_tokens.
func ParseCountTokens(body []byte) (*translate.Request, error) { return parse(body, false) }

func parse(body []byte, needMaxTokens bool) (*translate.Request, error) {
	req := &translate.Request{IncludeUsage: true}
	s := string(body)
	if !gjson.Valid(s) {
		return nil, translate.Errorf("", "the request body is not valid JSON")
	}
	root := gjson.Parse(s)
	if !root.IsObject() {
		return nil, translate.Errorf("", "the request body must be a JSON object")
	}
	if err := members.Check(root, "", TopLevelFields); err != nil {
		return nil, err
	}
	p := parser{req: req}
	var system []translate.Part
	root.ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "model":
			req.Model = p.str(v, "model")
		case "messages":
			p.messages(v)
		case "max_tokens":
			req.MaxTokens, req.MaxTokensParam = p.positiveInt(v, "max_tokens"), "max_tokens"
		case "system":
			system = p.text(v, "system")
		case "stream":
			req.Stream = p.bool(v, "stream")
		case "temperature":
			req.Temperature = p.float(v, "temperature")
		case "top_p":
			req.TopP = p.float(v, "top_p")
		case "top_k":
			if v.Type != gjson.Null {
				n := p.positiveInt(v, "top_k")
				req.TopK = &n
			}
		case "stop_sequences":
			p.stops(v)
		case "metadata":
			if v.IsObject() {
				req.User = v.Get("user_id").Str
			} else if v.Type != gjson.Null {
				p.fail("metadata", "must be an object")
			}
		case "tool_choice":
			p.toolChoice(v)
		case "tools":
			p.tools(v)
		case "thinking":
			p.thinking(v)
		case "output_config":
			p.outputConfig(v)
		default:
			if !strings.Contains(dropped, " "+k.Str+" ") {
				req.Extra = append(req.Extra, translate.Field{Name: k.Str, Raw: v.Raw})
			}
		}
		return p.err == nil
	})
	if p.err != nil {
		return nil, p.err
	}
	if p.effort != "" && p.thinkingType != "disabled" {
		req.ReasoningEffort = p.effort
	}
	switch {
	case req.Model == "":
		return nil, translate.Errorf("model", "is required")
	case !root.Get("messages").Exists():
		return nil, translate.Errorf("messages", "is required")
	case needMaxTokens && !root.Get("max_tokens").Exists():
		return nil, translate.Errorf("max_tokens", "is required")
	case len(req.Messages) == 0:
		return nil, translate.Errorf("messages", "must hold at least one message")
	}
	if len(system) > 0 {
		req.Messages = append([]translate.Message{{Role: translate.RoleSystem, Content: system}}, req.Messages...)
	}
	req.Body, req.Edited = string(appendChatBody(nil, req)), true
	return req, nil
}

// parser holds the first error; every method is a no-op once it is set.
type parser struct {
	req          *translate.Request
	err          *translate.ParamError
	effort       string // from output_config.effort, else from thinking
	explicit     bool   // effort came from output_config.effort
	thinkingType string
}

func (p *parser) fail(param, format string, args ...any) {
	if p.err == nil {
		p.err = translate.Errorf(param, format, args...)
	}
}

func (p *parser) str(v gjson.Result, param string) string {
	if v.Type != gjson.String {
		p.fail(param, "must be a string")
	}
	return v.Str
}

func (p *parser) bool(v gjson.Result, param string) bool {
	switch v.Type {
	case gjson.True:
		return true
	case gjson.False, gjson.Null:
		return false
	}
	p.fail(param, "must be a boolean")
	return false
}

func (p *parser) float(v gjson.Result, param string) *float64 {
	switch v.Type {
	case gjson.Null:
		return nil
	case gjson.Number:
		f := v.Float()
		return &f
	}
	p.fail(param, "must be a number")
	return nil
}

func (p *parser) positiveInt(v gjson.Result, param string) int {
	if v.Type != gjson.Number {
		p.fail(param, "must be an integer")
		return 0
	}
	n, err := strconv.ParseInt(v.Raw, 10, 32)
	if err != nil || n < 1 {
		p.fail(param, "must be a positive integer, got %s", clip(v.Raw))
		return 0
	}
	return int(n)
}

func (p *parser) stops(v gjson.Result) {
	if v.Type == gjson.Null {
		return
	}
	if !v.IsArray() {
		p.fail("stop_sequences", "must be an array of strings")
		return
	}
	i := 0
	v.ForEach(func(_, s gjson.Result) bool {
		p.req.Stop = append(p.req.Stop, p.str(s, "stop_sequences["+strconv.Itoa(i)+"]"))
		i++
		return p.err == nil
	})
}

// text reads a string or an array of text blocks (system, a tool_result's content).
func (p *parser) text(v gjson.Result, param string) []translate.Part {
	switch {
	case v.Type == gjson.String:
		if v.Str == "" {
			return nil
		}
		return []translate.Part{{Type: translate.PartText, Text: v.Str}}
	case v.IsArray():
		var parts []translate.Part
		i := 0
		v.ForEach(func(_, b gjson.Result) bool {
			at := param + "[" + strconv.Itoa(i) + "]"
			i++
			if !b.IsObject() {
				p.fail(at, "must be a content block object")
				return false
			}
			if t := b.Get("type").Str; t != "text" {
				p.fail(at+".type", "must be \"text\", got %q", clip(t))
				return false
			}
			parts = append(parts, translate.Part{Type: translate.PartText, Text: p.str(b.Get("text"), at+".text")})
			return p.err == nil
		})
		return parts
	case v.Type == gjson.Null:
		return nil
	}
	p.fail(param, "must be a string or an array of text blocks")
	return nil
}

func (p *parser) messages(v gjson.Result) {
	if !v.IsArray() {
		p.fail("messages", "must be an array")
		return
	}
	i := 0
	v.ForEach(func(_, m gjson.Result) bool {
		p.message(m, "messages["+strconv.Itoa(i)+"]")
		i++
		return p.err == nil
	})
}

func (p *parser) message(m gjson.Result, at string) {
	if !m.IsObject() {
		p.fail(at, "must be an object")
		return
	}
	role := m.Get("role")
	content := m.Get("content")
	if !content.Exists() {
		p.fail(at+".content", "is required")
		return
	}
	switch role.Str {
	case "system": // Claude Code sends these mid-conversation
		parts := p.text(content, at+".content")
		if len(parts) > 0 {
			p.req.Messages = append(p.req.Messages, translate.Message{Role: translate.RoleSystem, Content: parts})
		}
	case "user":
		p.user(content, at+".content")
	case "assistant":
		p.assistant(content, at+".content")
	default:
		p.fail(at+".role", "must be \"user\" or \"assistant\", got %q", clip(role.Raw))
	}
}

// user reads a user message. Its tool_result blocks become core tool messages, in order,
// ahead of a user message with the other blocks.
func (p *parser) user(content gjson.Result, at string) {
	if content.Type == gjson.String {
		p.req.Messages = append(p.req.Messages, translate.Message{Role: translate.RoleUser,
			Content: []translate.Part{{Type: translate.PartText, Text: content.Str}}})
		return
	}
	if !content.IsArray() {
		p.fail(at, "must be a string or an array of content blocks")
		return
	}
	var parts []translate.Part
	i := 0
	content.ForEach(func(_, b gjson.Result) bool {
		bat := at + "[" + strconv.Itoa(i) + "]"
		i++
		if !b.IsObject() {
			p.fail(bat, "must be a content block object")
			return false
		}
		if b.Get("type").Str == "tool_result" {
			p.toolResult(b, bat)
			return p.err == nil
		}
		parts = p.part(parts, b, bat)
		return p.err == nil
	})
	if len(parts) > 0 {
		p.req.Messages = append(p.req.Messages, translate.Message{Role: translate.RoleUser, Content: parts})
	}
}

// part appends the core part of a user content block; blocks without one are dropped.
func (p *parser) part(parts []translate.Part, b gjson.Result, at string) []translate.Part {
	switch t := b.Get("type").Str; t {
	case "text":
		return append(parts, translate.Part{Type: translate.PartText, Text: p.str(b.Get("text"), at+".text")})
	case "image":
		src := b.Get("source")
		switch src.Get("type").Str {
		case "base64":
			return append(parts, translate.Part{Type: translate.PartImage,
				URL: "data:" + src.Get("media_type").Str + ";base64," + src.Get("data").Str})
		case "url":
			return append(parts, translate.Part{Type: translate.PartImage, URL: p.str(src.Get("url"), at+".source.url")})
		}
		p.fail(at+".source.type", "image sources of type %q cannot be sent to this backend: use base64 or url", clip(src.Get("type").Str))
	case "document":
		src := b.Get("source")
		switch src.Get("type").Str {
		case "base64":
			return append(parts, translate.Part{Type: translate.PartFile, Filename: b.Get("title").Str,
				FileData: "data:" + src.Get("media_type").Str + ";base64," + src.Get("data").Str})
		case "text":
			return append(parts, translate.Part{Type: translate.PartText, Text: src.Get("data").Str})
		case "content":
			return append(parts, p.text(src.Get("content"), at+".source.content")...)
		}
		p.fail(at+".source.type", "document sources of type %q cannot be sent to this backend: use base64, text or content", clip(src.Get("type").Str))
	case "search_result":
		for _, c := range b.Get("content").Array() {
			if c.Get("type").Str == "text" {
				parts = append(parts, translate.Part{Type: translate.PartText, Text: c.Get("text").Str})
			}
		}
		return parts
	case "":
		p.fail(at+".type", "is required")
	}
	return parts // thinking, tool_use and server-tool blocks have no user-side counterpart
}

func (p *parser) toolResult(b gjson.Result, at string) {
	id := p.str(b.Get("tool_use_id"), at+".tool_use_id")
	m := translate.Message{Role: translate.RoleTool, ToolCallID: CoreToolID(id), ToolError: b.Get("is_error").Type == gjson.True}
	c := b.Get("content")
	switch {
	case c.Type == gjson.String:
		m.Content = []translate.Part{{Type: translate.PartText, Text: c.Str}}
	case c.IsArray():
		i := 0
		c.ForEach(func(_, cb gjson.Result) bool {
			m.Content = p.part(m.Content, cb, at+".content["+strconv.Itoa(i)+"]")
			i++
			return p.err == nil
		})
	case c.Exists() && c.Type != gjson.Null:
		p.fail(at+".content", "must be a string or an array of content blocks")
	}
	if len(m.Content) == 0 {
		m.Content = []translate.Part{{Type: translate.PartText, Text: ""}}
	}
	p.req.Messages = append(p.req.Messages, m)
}

func (p *parser) assistant(content gjson.Result, at string) {
	m := translate.Message{Role: translate.RoleAssistant}
	if content.Type == gjson.String {
		m.Content = []translate.Part{{Type: translate.PartText, Text: content.Str}}
		p.req.Messages = append(p.req.Messages, m)
		return
	}
	if !content.IsArray() {
		p.fail(at, "must be a string or an array of content blocks")
		return
	}
	var reasoning []string
	i := 0
	content.ForEach(func(_, b gjson.Result) bool {
		bat := at + "[" + strconv.Itoa(i) + "]"
		i++
		switch b.Get("type").Str {
		case "text":
			m.Content = append(m.Content, translate.Part{Type: translate.PartText, Text: p.str(b.Get("text"), bat+".text")})
		case "tool_use":
			input := b.Get("input")
			args := "{}"
			if input.IsObject() {
				args = input.Raw
			}
			m.ToolCalls = append(m.ToolCalls, translate.ToolCall{ID: CoreToolID(p.str(b.Get("id"), bat+".id")),
				Name: p.str(b.Get("name"), bat+".name"), Arguments: args})
		case "thinking":
			t := b.Get("thinking").Str
			reasoning = append(reasoning, t)
			m.ThinkingBlocks = append(m.ThinkingBlocks, translate.ThinkingBlock{Type: "thinking", Thinking: t, Signature: b.Get("signature").Str})
		case "redacted_thinking":
			m.ThinkingBlocks = append(m.ThinkingBlocks, translate.ThinkingBlock{Type: "redacted_thinking", Data: b.Get("data").Str})
		case "":
			p.fail(bat+".type", "is required")
		}
		return p.err == nil // server_tool_use and its results are the upstream's own business
	})
	m.Reasoning = strings.Join(reasoning, "")
	if len(m.Content) > 0 || len(m.ToolCalls) > 0 || len(m.ThinkingBlocks) > 0 {
		p.req.Messages = append(p.req.Messages, m)
	}
}

func (p *parser) tools(v gjson.Result) {
	if v.Type == gjson.Null {
		return
	}
	if !v.IsArray() {
		p.fail("tools", "must be an array")
		return
	}
	i := 0
	v.ForEach(func(_, t gjson.Result) bool {
		at := "tools[" + strconv.Itoa(i) + "]"
		i++
		if !t.IsObject() {
			p.fail(at, "must be an object")
			return false
		}
		if typ := t.Get("type"); typ.Exists() && typ.Str != "custom" {
			return true // an Anthropic-defined tool (web_search_*, bash_*, tool_search_*...)
		}
		tool := translate.Tool{Name: p.str(t.Get("name"), at+".name"), Description: t.Get("description").Str}
		if s := t.Get("input_schema"); s.IsObject() {
			tool.Parameters = s.Raw
		} else if s.Exists() && s.Type != gjson.Null {
			p.fail(at+".input_schema", "must be a JSON Schema object")
		}
		if s := t.Get("strict"); s.IsBool() {
			b := s.Bool()
			tool.Strict = &b
		}
		p.req.Tools = append(p.req.Tools, tool)
		return p.err == nil
	})
}

func (p *parser) toolChoice(v gjson.Result) {
	if v.Type == gjson.Null {
		return
	}
	if !v.IsObject() {
		p.fail("tool_choice", "must be an object")
		return
	}
	tc := &p.req.ToolChoice
	switch t := v.Get("type").Str; t {
	case "auto":
		tc.Mode = translate.ToolChoiceAuto
	case "any":
		tc.Mode = translate.ToolChoiceRequired
	case "tool":
		tc.Mode, tc.Name = translate.ToolChoiceFunction, p.str(v.Get("name"), "tool_choice.name")
	case "none":
		tc.Mode = translate.ToolChoiceNone
	default:
		p.fail("tool_choice.type", "must be auto, any, tool or none, got %q", clip(t))
	}
	if v.Get("disable_parallel_tool_use").Type == gjson.True {
		f := false
		p.req.ParallelToolCalls = &f
	}
}

// thinking maps the thinking configuration to a reasoning effort: a budget of under 4,096
// tokens is low, under 16,384 medium, else high; adaptive is medium unless
// output_config.effort says otherwise.
func (p *parser) thinking(v gjson.Result) {
	if v.Type == gjson.Null {
		return
	}
	if !v.IsObject() {
		p.fail("thinking", "must be an object")
		return
	}
	p.thinkingType = v.Get("type").Str
	switch p.thinkingType {
	case "enabled":
		budget := v.Get("budget_tokens").Int()
		switch {
		case budget < 4096:
			p.setEffort("low", false)
		case budget < 16384:
			p.setEffort("medium", false)
		default:
			p.setEffort("high", false)
		}
	case "adaptive":
		p.setEffort("medium", false)
	case "disabled":
	default:
		p.fail("thinking.type", "must be enabled, adaptive or disabled, got %q", clip(p.thinkingType))
	}
}

// setEffort records an effort; an explicit one (output_config.effort) wins over one
// derived from thinking.
func (p *parser) setEffort(e string, explicit bool) {
	if explicit || !p.explicit {
		p.effort, p.explicit = e, explicit
	}
}

func (p *parser) outputConfig(v gjson.Result) {
	if v.Type == gjson.Null {
		return
	}
	if !v.IsObject() {
		p.fail("output_config", "must be an object")
		return
	}
	if e := v.Get("effort"); e.Exists() && e.Type != gjson.Null {
		switch e.Str {
		case "low", "medium", "high", "xhigh":
			p.setEffort(e.Str, true)
		case "max":
			p.setEffort("xhigh", true)
		default:
			p.fail("output_config.effort", "must be low, medium, high, xhigh or max, got %q", clip(e.Raw))
			return
		}
	}
	if f := v.Get("format"); f.IsObject() {
		if t := f.Get("type").Str; t != "json_schema" {
			p.fail("output_config.format.type", "must be json_schema, got %q", clip(t))
			return
		}
		schema := f.Get("schema")
		if !schema.IsObject() {
			p.fail("output_config.format.schema", "must be a JSON Schema object")
			return
		}
		p.req.ResponseFormat = translate.ResponseFormat{Type: translate.FormatJSONSchema, Name: "output", Schema: schema.Raw}
	}
}

// clip bounds a client string quoted in an error message.
func clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}

// toolIDTilde stands for "~" in the tool ids Agate gives Messages clients: the core
// carries opaque upstream state in tool call ids after a "~" (translate.CarryID), and a
// Messages tool_use id must match ^[a-zA-Z0-9_-]+$.
const toolIDTilde = "__agate"

// ClientToolID returns the tool_use id a Messages client sees for a core tool call id.
func ClientToolID(id string) string {
	if strings.IndexByte(id, '~') < 0 {
		return id
	}
	return strings.ReplaceAll(id, "~", toolIDTilde)
}

// CoreToolID undoes ClientToolID.
func CoreToolID(id string) string {
	if !strings.Contains(id, toolIDTilde) {
		return id
	}
	return strings.ReplaceAll(id, toolIDTilde, "~")
}
