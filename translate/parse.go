package translate

import (
	"math"
	"strconv"

	"github.com/tidwall/gjson"
)

// ParseRequest parses and validates an OpenAI chat completions request body. Errors are
// *ParamError values naming the offending field. The body is copied once; the returned
// Request does not alias the caller's buffer.
func ParseRequest(body []byte) (*Request, error) {
	if len(body) == 0 {
		return nil, &ParamError{Message: "the request body is empty: send a JSON object with model and messages"}
	}
	s := string(body)
	if !gjson.Valid(s) {
		return nil, &ParamError{Message: "we could not parse the JSON body of your request: it is not valid JSON"}
	}
	root := gjson.Parse(s)
	if !root.IsObject() {
		return nil, &ParamError{Message: "the request body must be a JSON object"}
	}
	p := parser{req: &Request{Body: s}}
	root.ForEach(p.field)
	if p.err != nil {
		return nil, p.err
	}
	if err := p.req.check(); err != nil {
		return nil, err
	}
	return p.req, nil
}

type parser struct {
	req     *Request
	err     *ParamError
	sawMsgs bool
	sawOpts bool
}

func (p *parser) fail(param, format string, args ...any) bool {
	p.err = Errorf(param, format, args...)
	return false
}

func (p *parser) field(k, v gjson.Result) bool {
	r := p.req
	name := k.Str
	if v.Type == gjson.Null {
		// OpenAI treats an explicit null as "not set" for optional fields.
		switch name {
		case "model", "messages":
			return p.fail(name, "%s is required", name)
		}
		return true
	}
	switch name {
	case "model":
		if v.Type != gjson.String {
			return p.fail("model", "must be a string")
		}
		r.Model = v.Str
	case "messages":
		if !v.IsArray() {
			return p.fail("messages", "must be an array of messages")
		}
		p.sawMsgs = true
		i := 0
		v.ForEach(func(_, m gjson.Result) bool {
			if !p.message(i, m) {
				return false
			}
			i++
			return true
		})
	case "stream":
		if !isBool(v) {
			return p.fail("stream", "must be a boolean")
		}
		r.Stream = v.Bool()
	case "stream_options":
		if !v.IsObject() {
			return p.fail("stream_options", "must be an object")
		}
		p.sawOpts = true
		if iu := v.Get("include_usage"); iu.Exists() && iu.Type != gjson.Null {
			if !isBool(iu) {
				return p.fail("stream_options.include_usage", "must be a boolean")
			}
			r.IncludeUsage = iu.Bool()
		}
	case "tools":
		if !v.IsArray() {
			return p.fail("tools", "must be an array")
		}
		i := 0
		v.ForEach(func(_, t gjson.Result) bool {
			if !p.tool(i, t) {
				return false
			}
			i++
			return true
		})
	case "tool_choice":
		return p.toolChoice(v)
	case "parallel_tool_calls":
		if !isBool(v) {
			return p.fail(name, "must be a boolean")
		}
		b := v.Bool()
		r.ParallelToolCalls = &b
	case "max_tokens", "max_completion_tokens":
		n, ok := positiveInt(v)
		if !ok {
			return p.fail(name, "must be an integer of at least 1")
		}
		if name == "max_completion_tokens" || r.MaxTokens == 0 {
			r.MaxTokens, r.MaxTokensParam = n, name
		}
	case "temperature":
		return p.float(name, v, 0, 2, &r.Temperature)
	case "top_p":
		return p.float(name, v, 0, 1, &r.TopP)
	case "presence_penalty":
		return p.float(name, v, -2, 2, &r.PresencePenalty)
	case "frequency_penalty":
		return p.float(name, v, -2, 2, &r.FrequencyPenalty)
	case "stop":
		switch {
		case v.Type == gjson.String:
			r.Stop = []string{v.Str}
		case v.IsArray():
			ok := true
			v.ForEach(func(_, s gjson.Result) bool {
				if s.Type != gjson.String {
					ok = false
					return false
				}
				r.Stop = append(r.Stop, s.Str)
				return true
			})
			if !ok {
				return p.fail("stop", "must be a string or an array of strings")
			}
		default:
			return p.fail("stop", "must be a string or an array of strings")
		}
	case "n":
		n, ok := positiveInt(v)
		if !ok {
			return p.fail("n", "must be an integer of at least 1")
		}
		r.N = n
	case "seed":
		if v.Type != gjson.Number || v.Num != math.Trunc(v.Num) {
			return p.fail("seed", "must be an integer")
		}
		s := v.Int()
		r.Seed = &s
	case "logprobs":
		if !isBool(v) {
			return p.fail(name, "must be a boolean")
		}
		r.Logprobs = v.Bool()
	case "top_logprobs":
		if v.Type != gjson.Number || v.Num != math.Trunc(v.Num) || v.Num < 0 || v.Num > 20 {
			return p.fail(name, "must be an integer from 0 to 20")
		}
		n := int(v.Num)
		r.TopLogprobs = &n
	case "response_format":
		return p.responseFormat(v)
	case "reasoning_effort":
		switch v.Str {
		case "none", "minimal", "low", "medium", "high", "xhigh":
			if v.Type == gjson.String {
				r.ReasoningEffort = v.Str
				return true
			}
		}
		return p.fail(name, "must be one of none, minimal, low, medium, high, xhigh")
	case "user":
		if v.Type != gjson.String {
			return p.fail(name, "must be a string")
		}
		r.User = v.Str
	case "metadata":
		if !v.IsObject() {
			return p.fail(name, "must be an object of string values")
		}
		ok := true
		v.ForEach(func(_, mv gjson.Result) bool {
			ok = mv.Type == gjson.String
			return ok
		})
		if !ok {
			return p.fail(name, "must be an object of string values")
		}
		r.Metadata = v.Raw
	default:
		r.Extra = append(r.Extra, Field{Name: name, Raw: v.Raw})
	}
	return true
}

func (r *Request) check() *ParamError {
	if r.Model == "" {
		return Errorf("model", "model is required")
	}
	if len(r.Messages) == 0 {
		return Errorf("messages", "messages must be a non-empty array")
	}
	if !r.Stream && r.IncludeUsage {
		return Errorf("stream_options", "stream_options is only allowed when stream is true")
	}
	if r.ToolChoice.Mode == ToolChoiceFunction {
		found := false
		for i := range r.Tools {
			if r.Tools[i].Name == r.ToolChoice.Name {
				found = true
				break
			}
		}
		if !found {
			return Errorf("tool_choice", "tool_choice names function %q, which is not in tools", r.ToolChoice.Name)
		}
	}
	if r.ToolChoice.Mode == ToolChoiceRequired && len(r.Tools) == 0 {
		return Errorf("tool_choice", "tool_choice is required but no tools were given")
	}
	return nil
}

func (p *parser) message(i int, m gjson.Result) bool {
	if !m.IsObject() {
		return p.fail(idx("messages", i), "each message must be an object")
	}
	var msg Message
	var role, content gjson.Result
	ok := true
	m.ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "role":
			role = v
		case "content":
			content = v
		}
		if v.Type == gjson.Null {
			return true
		}
		switch k.Str {
		case "name":
			if v.Type != gjson.String {
				ok = p.fail(idx("messages", i)+".name", "must be a string")
			}
			msg.Name = v.Str
		case "tool_call_id":
			if v.Type != gjson.String {
				ok = p.fail(idx("messages", i)+".tool_call_id", "must be a string")
			}
			msg.ToolCallID = v.Str
		case "tool_calls":
			ok = p.toolCalls(i, &msg, v)
		case "reasoning_content":
			if v.Type == gjson.String {
				msg.Reasoning = v.Str
			}
		case "thinking_blocks":
			v.ForEach(func(_, b gjson.Result) bool {
				msg.ThinkingBlocks = append(msg.ThinkingBlocks, ThinkingBlock{
					Type: b.Get("type").Str, Thinking: b.Get("thinking").Str,
					Signature: b.Get("signature").Str, Data: b.Get("data").Str,
				})
				return true
			})
		case "refusal":
			if v.Type == gjson.String {
				msg.Refusal = v.Str
			}
		}
		return ok
	})
	if !ok {
		return false
	}
	if role.Type != gjson.String {
		return p.fail(idx("messages", i)+".role", "role is required and must be a string")
	}
	switch role.Str {
	case RoleSystem, RoleDeveloper, RoleUser, RoleAssistant, RoleTool:
		msg.Role = role.Str
	default:
		return p.fail(idx("messages", i)+".role", "unknown role %q: use system, developer, user, assistant or tool", role.Str)
	}
	if len(msg.ToolCalls) > 0 && msg.Role != RoleAssistant {
		return p.fail(idx("messages", i)+".tool_calls", "only assistant messages may carry tool_calls")
	}
	if content.Exists() && content.Type != gjson.Null && !p.content(i, &msg, content) {
		return false
	}
	switch msg.Role {
	case RoleTool:
		if msg.ToolCallID == "" {
			return p.fail(idx("messages", i)+".tool_call_id", "tool messages need tool_call_id")
		}
	case RoleAssistant:
		if !content.Exists() && len(msg.ToolCalls) == 0 && msg.Refusal == "" {
			return p.fail(idx("messages", i)+".content", "assistant messages need content or tool_calls")
		}
	default:
		if !content.Exists() || content.Type == gjson.Null {
			return p.fail(idx("messages", i)+".content", "%s messages need content", msg.Role)
		}
	}
	p.req.Messages = append(p.req.Messages, msg)
	return true
}

func (p *parser) content(i int, msg *Message, v gjson.Result) bool {
	if v.Type == gjson.String {
		msg.Content = []Part{{Type: PartText, Text: v.Str}}
		return true
	}
	if !v.IsArray() {
		return p.fail(idx("messages", i)+".content", "must be a string or an array of content parts")
	}
	j := 0
	ok := true
	v.ForEach(func(_, c gjson.Result) bool {
		pj := j
		param := func() string { return idx(idx("messages", i)+".content", pj) }
		j++
		if !c.IsObject() {
			ok = p.fail(param(), "each content part must be an object")
			return false
		}
		t := c.Get("type").Str
		var part Part
		switch t {
		case "text":
			tx := c.Get("text")
			if tx.Type != gjson.String {
				ok = p.fail(param()+".text", "text parts need a string text")
				return false
			}
			part = Part{Type: PartText, Text: tx.Str}
		case "image_url":
			u := c.Get("image_url")
			url := u.Get("url")
			if u.Type == gjson.String { // a lenient shape some clients send
				url = u
			}
			if url.Type != gjson.String || url.Str == "" {
				ok = p.fail(param()+".image_url.url", "image_url parts need image_url.url")
				return false
			}
			part = Part{Type: PartImage, URL: url.Str, Detail: u.Get("detail").Str}
		case "file":
			f := c.Get("file")
			part = Part{Type: PartFile, FileData: f.Get("file_data").Str, FileID: f.Get("file_id").Str, Filename: f.Get("filename").Str}
			if part.FileData == "" && part.FileID == "" {
				ok = p.fail(param()+".file", "file parts need file.file_data or file.file_id")
				return false
			}
		case "input_audio":
			a := c.Get("input_audio")
			part = Part{Type: PartAudio, AudioData: a.Get("data").Str, AudioFormat: a.Get("format").Str}
			if part.AudioData == "" {
				ok = p.fail(param()+".input_audio.data", "input_audio parts need input_audio.data")
				return false
			}
		case "refusal":
			if msg.Role != RoleAssistant {
				ok = p.fail(param()+".type", "refusal parts are only allowed in assistant messages")
				return false
			}
			part = Part{Type: PartRefusal, Text: c.Get("refusal").Str}
		default:
			ok = p.fail(param()+".type", "unknown content part type %q", t)
			return false
		}
		if part.Type != PartText && part.Type != PartRefusal && msg.Role != RoleUser {
			ok = p.fail(param()+".type", "%s parts are only allowed in user messages", t)
			return false
		}
		msg.Content = append(msg.Content, part)
		return true
	})
	return ok
}

func (p *parser) toolCalls(i int, msg *Message, v gjson.Result) bool {
	base := func() string { return idx("messages", i) + ".tool_calls" }
	if !v.IsArray() {
		return p.fail(base(), "must be an array")
	}
	j := 0
	ok := true
	v.ForEach(func(_, c gjson.Result) bool {
		pj := j
		param := func() string { return idx(base(), pj) }
		j++
		var id, typ, name, args gjson.Result
		c.ForEach(func(k, f gjson.Result) bool {
			switch k.Str {
			case "id":
				id = f
			case "type":
				typ = f
			case "function":
				f.ForEach(func(fk, fv gjson.Result) bool {
					switch fk.Str {
					case "name":
						name = fv
					case "arguments":
						args = fv
					}
					return true
				})
			}
			return true
		})
		if id.Type != gjson.String || id.Str == "" {
			ok = p.fail(param()+".id", "tool calls need a string id")
			return false
		}
		if typ.Exists() && typ.Str != "function" {
			ok = p.fail(param()+".type", "only function tool calls are supported")
			return false
		}
		if name.Type != gjson.String || name.Str == "" {
			ok = p.fail(param()+".function.name", "tool calls need function.name")
			return false
		}
		if args.Exists() && args.Type != gjson.String && args.Type != gjson.Null {
			ok = p.fail(param()+".function.arguments", "must be a string of JSON")
			return false
		}
		msg.ToolCalls = append(msg.ToolCalls, ToolCall{ID: id.Str, Name: name.Str, Arguments: args.Str})
		return true
	})
	return ok
}

func (p *parser) tool(i int, t gjson.Result) bool {
	param := idx("tools", i)
	if !t.IsObject() {
		return p.fail(param, "each tool must be an object")
	}
	if typ := t.Get("type").Str; typ != "function" {
		return p.fail(param+".type", "only function tools are supported, got %q", typ)
	}
	fn := t.Get("function")
	name := fn.Get("name")
	if name.Type != gjson.String || !validToolName(name.Str) {
		return p.fail(param+".function.name", "function names must be 1 to 64 characters of a-z, A-Z, 0-9, _ and -")
	}
	tool := Tool{Name: name.Str, Description: fn.Get("description").Str}
	if ps := fn.Get("parameters"); ps.Exists() && ps.Type != gjson.Null {
		if !ps.IsObject() {
			return p.fail(param+".function.parameters", "must be a JSON Schema object")
		}
		tool.Parameters = ps.Raw
	}
	if st := fn.Get("strict"); isBool(st) {
		b := st.Bool()
		tool.Strict = &b
	}
	for k := range p.req.Tools {
		if p.req.Tools[k].Name == tool.Name {
			return p.fail(param+".function.name", "duplicate function name %q", tool.Name)
		}
	}
	p.req.Tools = append(p.req.Tools, tool)
	return true
}

func (p *parser) toolChoice(v gjson.Result) bool {
	r := p.req
	if v.Type == gjson.String {
		switch v.Str {
		case ToolChoiceAuto, ToolChoiceNone, ToolChoiceRequired:
			r.ToolChoice.Mode = v.Str
			return true
		}
		return p.fail("tool_choice", "must be auto, none, required or a named function")
	}
	if !v.IsObject() || v.Get("type").Str != "function" {
		return p.fail("tool_choice", "must be auto, none, required or {\"type\":\"function\",\"function\":{\"name\":...}}")
	}
	name := v.Get("function.name")
	if name.Type != gjson.String || name.Str == "" {
		return p.fail("tool_choice.function.name", "a named tool_choice needs function.name")
	}
	r.ToolChoice = ToolChoice{Mode: ToolChoiceFunction, Name: name.Str}
	return true
}

func (p *parser) responseFormat(v gjson.Result) bool {
	if !v.IsObject() {
		return p.fail("response_format", "must be an object")
	}
	rf := &p.req.ResponseFormat
	switch t := v.Get("type").Str; t {
	case FormatText, FormatJSONObject:
		rf.Type = t
	case FormatJSONSchema:
		js := v.Get("json_schema")
		if !js.IsObject() {
			return p.fail("response_format.json_schema", "json_schema formats need a json_schema object")
		}
		name := js.Get("name")
		if name.Type != gjson.String || name.Str == "" {
			return p.fail("response_format.json_schema.name", "json_schema.name is required")
		}
		schema := js.Get("schema")
		if schema.Exists() && !schema.IsObject() {
			return p.fail("response_format.json_schema.schema", "must be a JSON Schema object")
		}
		rf.Type, rf.Name, rf.Description, rf.Schema = t, name.Str, js.Get("description").Str, schema.Raw
		if st := js.Get("strict"); isBool(st) {
			b := st.Bool()
			rf.Strict = &b
		}
	default:
		return p.fail("response_format.type", "must be text, json_object or json_schema")
	}
	return true
}

func (p *parser) float(name string, v gjson.Result, lo, hi float64, dst **float64) bool {
	if v.Type != gjson.Number {
		return p.fail(name, "must be a number")
	}
	if v.Num < lo || v.Num > hi {
		return p.fail(name, "must be between %g and %g", lo, hi)
	}
	f := v.Num
	*dst = &f
	return true
}

func isBool(v gjson.Result) bool { return v.Type == gjson.True || v.Type == gjson.False }

func positiveInt(v gjson.Result) (int, bool) {
	if v.Type != gjson.Number || v.Num != math.Trunc(v.Num) || v.Num < 1 || v.Num > math.MaxInt32 {
		return 0, false
	}
	return int(v.Num), true
}

func idx(base string, i int) string { return base + "[" + strconv.Itoa(i) + "]" }

func validToolName(s string) bool {
	if len(s) == 0 || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}
