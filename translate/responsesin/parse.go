package responsesin

import (
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/agate-gateway/agate/internal/jsonx"
	"github.com/agate-gateway/agate/translate"
	"github.com/agate-gateway/agate/translate/internal/members"
	"github.com/tidwall/gjson"
)

// Request is a parsed POST /v1/responses request.
type Request struct {
	// Core is the request in the gateway's own model, for translating backends. Its Body
	// is a chat completions body of its settings, Edited set (for the OpenAI chat provider,
	// which forwards the body it is given and writes messages, tools and tool_choice from
	// the core when Edited is set); Core.Extra holds the top-level fields no translating backend
	// can honour, for the caller's unsupported-parameter policy.
	Core *translate.Request
	// Body is the request body as received.
	Body string
	// Store is whether the response is to be stored (OpenAI's default: true).
	Store bool
	// PreviousResponseID continues a stored response; "" when unset.
	PreviousResponseID string
	// EncryptedReasoning is set when include names reasoning.encrypted_content.
	EncryptedReasoning bool
	// Input is this request's input items as a JSON array (a string input becomes one
	// user message item), for storing with the response.
	Input string
	// Untranslatable is the first part of the request only a responses backend can serve
	// (a built-in tool, an input item type the core has no equivalent for), as the
	// *translate.ParamError a translating backend answers; nil when there is none.
	Untranslatable error

	instructions string // "" when unset
	history      []translate.Message
	current      []translate.Message
	echo         []byte // the request settings the Response object echoes, see appendEcho
}

// Member names of the objects Parse interprets; see checkMembers.
const (
	topLevelFields = "model input instructions tools tool_choice parallel_tool_calls text reasoning " +
		"max_output_tokens temperature top_p metadata user safety_identifier include stream store " +
		"previous_response_id truncation stream_options background"
	itemFields     = "type id role content status call_id name arguments output summary encrypted_content"
	partFields     = "type text refusal image_url file_id detail file_data filename file_url annotations logprobs"
	toolFields     = "type name description parameters strict"
	formatFields   = "type name description schema strict"
	textFields     = "format verbosity"
	reasonFields   = "effort summary"
	choiceFields   = "type name"
	summaryFields  = "type text"
	encryptedIncl  = "reasoning.encrypted_content"
	dialect        = "responses"
	maxParamLength = 64
)

// Parse parses and validates a Responses request body. Errors are *translate.ParamError
// values naming the offending field with OpenAI's param paths ("input[2].content[0].type").
// In every object it interprets a member named twice, or a known field's name in another
// case, is an error (checkMembers): the body may be forwarded as it is to a
// responses backend, and must read the same to every decoder. The returned Request does
// not alias body.
func Parse(body []byte) (*Request, error) {
	if len(body) == 0 {
		return nil, &translate.ParamError{Message: "the request body is empty: send a JSON object with model and input"}
	}
	if !utf8.Valid(body) {
		return nil, &translate.ParamError{Code: CodeInvalidUTF8,
			Message: "the request body is not valid UTF-8: send JSON text encoded as UTF-8 (RFC 8259)"}
	}
	s := string(body)
	if !gjson.Valid(s) {
		return nil, &translate.ParamError{Message: "we could not parse the JSON body of your request: it is not valid JSON"}
	}
	root := gjson.Parse(s)
	if !root.IsObject() {
		return nil, &translate.ParamError{Message: "the request body must be a JSON object"}
	}
	if err := members.Check(root, "", topLevelFields); err != nil {
		return nil, err
	}
	r := &Request{Body: s, Store: true, Core: &translate.Request{}}
	p := parser{r: r}
	var err error
	root.ForEach(func(k, v gjson.Result) bool {
		err = p.field(k.Str, v)
		return err == nil
	})
	if err != nil {
		return nil, err
	}
	if r.Core.Model == "" {
		return nil, translate.Errorf("model", "model is required")
	}
	if !p.hasInput {
		return nil, translate.Errorf("input", "input is required")
	}
	if err := p.checkToolChoice(); err != nil {
		return nil, err
	}
	r.Core.IncludeUsage = r.Core.Stream
	r.echo = p.appendEcho(nil)
	r.build()
	return r, nil
}

// checkToolChoice applies the chat parser's rules: a named function is one of the tools,
// and required needs a tool.
func (p *parser) checkToolChoice() error {
	c := p.r.Core
	switch c.ToolChoice.Mode {
	case translate.ToolChoiceFunction:
		for i := range c.Tools {
			if c.Tools[i].Name == c.ToolChoice.Name {
				return nil
			}
		}
		return translate.Errorf("tool_choice", "tool_choice names function %q, which is not in tools", clip(c.ToolChoice.Name))
	case translate.ToolChoiceRequired:
		if !gjson.Get(p.tools, "0").Exists() {
			return translate.Errorf("tool_choice", "tool_choice is required but no tools were given")
		}
	}
	return nil
}

// Prepend puts the items of earlier responses (a JSON array: the stored input and output
// items of the response named by previous_response_id) before this request's input.
func (r *Request) Prepend(items string) error {
	p := parser{r: r}
	msgs, err := p.items(gjson.Parse(items), "previous_response_id")
	if err != nil {
		return err
	}
	r.history = msgs
	r.build()
	return nil
}

// Translatable returns nil when Core can be served by a translating backend: the request
// uses nothing only a responses backend serves (Untranslatable), and the conversation
// (earlier items included, see Prepend) has a message.
func (r *Request) Translatable() error {
	if r.Untranslatable != nil {
		return r.Untranslatable
	}
	for _, m := range r.Core.Messages {
		if m.Role != translate.RoleSystem && m.Role != translate.RoleDeveloper {
			return nil
		}
	}
	return translate.Errorf("input", "input has no message to answer: send at least one message or function_call_output item")
}

// build sets Core.Messages and Core.Body from the parts read.
func (r *Request) build() {
	c := r.Core
	c.Messages = c.Messages[:0]
	if r.instructions != "" {
		c.Messages = append(c.Messages, translate.Message{Role: translate.RoleSystem,
			Content: []translate.Part{{Type: translate.PartText, Text: r.instructions}}})
	}
	c.Messages = append(c.Messages, r.history...)
	c.Messages = append(c.Messages, r.current...)
	c.Body, c.Edited = string(appendChatBody(nil, c)), true
}

// parser reads the fields of one request.
type parser struct {
	r        *Request
	hasInput bool
	// Raw values echoed in the Response object; "" when unset.
	tools, toolChoice, text, reasoning, metadata, truncation string
	user, safetyID                                           string
	parallel                                                 *bool
}

// untranslatableErr records the first part of the request a translating backend cannot serve.
func (p *parser) untranslatableErr(param, format string, args ...any) {
	if p.r.Untranslatable == nil {
		p.r.Untranslatable = translate.Errorf(param, format, args...)
	}
}

func (p *parser) field(name string, v gjson.Result) error {
	r, c := p.r, p.r.Core
	if v.Type == gjson.Null {
		if name == "model" || name == "input" {
			return translate.Errorf(name, "%s is required", name)
		}
		return nil // OpenAI treats an explicit null as "not set"
	}
	switch name {
	case "model":
		if v.Type != gjson.String || v.Str == "" {
			return translate.Errorf("model", "must be a non-empty string")
		}
		c.Model = v.Str
	case "input":
		p.hasInput = true
		switch {
		case v.Type == gjson.String:
			r.current = []translate.Message{{Role: translate.RoleUser, Content: []translate.Part{{Type: translate.PartText, Text: v.Str}}}}
			r.Input = string(append(jsonx.AppendString([]byte(`[{"type":"message","role":"user","content":`), v.Str), "}]"...))
		case v.IsArray():
			msgs, err := p.items(v, "input")
			if err != nil {
				return err
			}
			r.current = msgs
			r.Input = v.Raw
		default:
			return translate.Errorf("input", "must be a string or an array of input items")
		}
	case "instructions":
		if v.Type != gjson.String {
			return translate.Errorf("instructions", "must be a string")
		}
		r.instructions = v.Str
	case "stream":
		b, err := boolean(v, "stream")
		if err != nil {
			return err
		}
		c.Stream = b
	case "store":
		b, err := boolean(v, "store")
		if err != nil {
			return err
		}
		r.Store = b
	case "previous_response_id":
		if v.Type != gjson.String || v.Str == "" {
			return translate.Errorf("previous_response_id", "must be a non-empty string")
		}
		r.PreviousResponseID = v.Str
	case "include":
		if !v.IsArray() {
			return translate.Errorf("include", "must be an array of strings")
		}
		var err error
		v.ForEach(func(i, e gjson.Result) bool {
			if e.Type != gjson.String {
				err = translate.Errorf(index("include", int(i.Int())), "must be a string")
				return false
			}
			if e.Str == encryptedIncl {
				r.EncryptedReasoning = true
			}
			return true
		})
		return err
	case "tools":
		if !v.IsArray() {
			return translate.Errorf("tools", "must be an array")
		}
		p.tools = v.Raw
		return p.toolList(v)
	case "tool_choice":
		p.toolChoice = v.Raw
		return p.choice(v)
	case "parallel_tool_calls":
		b, err := boolean(v, name)
		if err != nil {
			return err
		}
		c.ParallelToolCalls, p.parallel = &b, &b
	case "text":
		if err := members.Check(v, "text", textFields); err != nil {
			return err
		}
		if !v.IsObject() {
			return translate.Errorf("text", "must be an object")
		}
		p.text = v.Raw
		return p.format(v.Get("format"))
	case "reasoning":
		if err := members.Check(v, "reasoning", reasonFields); err != nil {
			return err
		}
		if !v.IsObject() {
			return translate.Errorf("reasoning", "must be an object")
		}
		p.reasoning = v.Raw
		if e := v.Get("effort"); e.Exists() && e.Type != gjson.Null {
			switch e.Str {
			case "none", "minimal", "low", "medium", "high", "xhigh":
				c.ReasoningEffort = e.Str
			default:
				return translate.Errorf("reasoning.effort", "must be one of none, minimal, low, medium, high, xhigh")
			}
		}
	case "max_output_tokens":
		n := v.Int()
		if v.Type != gjson.Number || float64(n) != v.Num || n < 1 || n > 1<<31 {
			return translate.Errorf(name, "must be a positive integer")
		}
		c.MaxTokens, c.MaxTokensParam = int(n), name
	case "temperature", "top_p":
		if v.Type != gjson.Number {
			return translate.Errorf(name, "must be a number")
		}
		f := v.Num
		if name == "temperature" {
			if f < 0 || f > 2 {
				return translate.Errorf(name, "must be between 0 and 2")
			}
			c.Temperature = &f
		} else {
			if f < 0 || f > 1 {
				return translate.Errorf(name, "must be between 0 and 1")
			}
			c.TopP = &f
		}
	case "metadata":
		if !v.IsObject() {
			return translate.Errorf("metadata", "must be an object of strings")
		}
		// The Response object echoes metadata and the gateway stores it; it is never sent
		// upstream (on chat completions it would mean something else).
		p.metadata = v.Raw
	case "user", "safety_identifier":
		if v.Type != gjson.String {
			return translate.Errorf(name, "must be a string")
		}
		if name == "user" {
			p.user = v.Str
		} else {
			p.safetyID = v.Str
		}
		if c.User == "" || name == "safety_identifier" {
			c.User = v.Str
		}
	case "truncation":
		if v.Type != gjson.String || (v.Str != "auto" && v.Str != "disabled") {
			return translate.Errorf(name, "must be auto or disabled")
		}
		p.truncation = v.Raw
		if v.Str == "auto" {
			c.Extra = append(c.Extra, translate.Field{Name: name, Raw: v.Raw})
		}
	case "background":
		b, err := boolean(v, name)
		if err != nil {
			return err
		}
		if b {
			c.Extra = append(c.Extra, translate.Field{Name: name, Raw: v.Raw})
		}
	case "stream_options":
		if !v.IsObject() {
			return translate.Errorf(name, "must be an object")
		}
	default:
		c.Extra = append(c.Extra, translate.Field{Name: name, Raw: v.Raw})
	}
	return nil
}

func boolean(v gjson.Result, param string) (bool, error) {
	if v.Type != gjson.True && v.Type != gjson.False {
		return false, translate.Errorf(param, "must be a boolean")
	}
	return v.Type == gjson.True, nil
}

func index(base string, i int) string { return base + "[" + strconv.Itoa(i) + "]" }

// toolList reads tools: function tools into Core.Tools; a built-in tool is served by a
// responses backend only.
func (p *parser) toolList(v gjson.Result) error {
	var err error
	v.ForEach(func(i, t gjson.Result) bool {
		param := index("tools", int(i.Int()))
		if err = members.Check(t, param, toolFields); err != nil {
			return false
		}
		if !t.IsObject() {
			err = translate.Errorf(param, "must be an object")
			return false
		}
		typ := t.Get("type")
		if typ.Type != gjson.String {
			err = translate.Errorf(param+".type", "is required")
			return false
		}
		if typ.Str != "function" {
			p.untranslatableErr(param+".type", "the built-in tool %q is served only by a responses backend; this model's backend runs function tools only",
				clip(typ.Str))
			return true
		}
		name := t.Get("name")
		if name.Type != gjson.String || name.Str == "" {
			err = translate.Errorf(param+".name", "is required")
			return false
		}
		tool := translate.Tool{Name: name.Str, Description: t.Get("description").Str}
		if ps := t.Get("parameters"); ps.IsObject() {
			tool.Parameters = ps.Raw
		} else if ps.Exists() && ps.Type != gjson.Null {
			err = translate.Errorf(param+".parameters", "must be a JSON Schema object")
			return false
		}
		if st := t.Get("strict"); st.Type == gjson.True || st.Type == gjson.False {
			b := st.Type == gjson.True
			tool.Strict = &b
		}
		p.r.Core.Tools = append(p.r.Core.Tools, tool)
		return true
	})
	return err
}

func (p *parser) choice(v gjson.Result) error {
	c := p.r.Core
	if v.Type == gjson.String {
		switch v.Str {
		case "auto", "none", "required":
			c.ToolChoice.Mode = v.Str
			return nil
		}
		return translate.Errorf("tool_choice", "must be auto, none, required or an object")
	}
	if err := members.Check(v, "tool_choice", choiceFields); err != nil {
		return err
	}
	if !v.IsObject() {
		return translate.Errorf("tool_choice", "must be auto, none, required or an object")
	}
	switch typ := v.Get("type").Str; typ {
	case "function":
		name := v.Get("name")
		if name.Type != gjson.String || name.Str == "" {
			return translate.Errorf("tool_choice.name", "is required")
		}
		c.ToolChoice = translate.ToolChoice{Mode: translate.ToolChoiceFunction, Name: name.Str}
	case "":
		return translate.Errorf("tool_choice.type", "is required")
	default:
		p.untranslatableErr("tool_choice.type", "the tool choice %q is served only by a responses backend", clip(typ))
	}
	return nil
}

func (p *parser) format(f gjson.Result) error {
	if !f.Exists() || f.Type == gjson.Null {
		return nil
	}
	if err := members.Check(f, "text.format", formatFields); err != nil {
		return err
	}
	rf := &p.r.Core.ResponseFormat
	switch typ := f.Get("type").Str; typ {
	case "text", "json_object":
		rf.Type = typ
	case "json_schema":
		rf.Type = typ
		name := f.Get("name")
		if name.Type != gjson.String || name.Str == "" {
			return translate.Errorf("text.format.name", "is required")
		}
		rf.Name, rf.Description = name.Str, f.Get("description").Str
		s := f.Get("schema")
		if !s.IsObject() {
			return translate.Errorf("text.format.schema", "must be a JSON Schema object")
		}
		rf.Schema = s.Raw
		if st := f.Get("strict"); st.Type == gjson.True || st.Type == gjson.False {
			b := st.Type == gjson.True
			rf.Strict = &b
		}
	default:
		return translate.Errorf("text.format.type", "must be text, json_object or json_schema")
	}
	return nil
}

// items reads an array of input items into core messages. Reasoning items' summaries go to
// the next assistant message's Reasoning; function calls join the assistant message before
// them.
func (p *parser) items(arr gjson.Result, base string) ([]translate.Message, error) {
	if !arr.IsArray() {
		return nil, translate.Errorf(base, "must be an array of items")
	}
	var msgs []translate.Message
	var reasoning strings.Builder
	var err error
	// open is the index in msgs of the assistant message function calls join, or -1.
	open := -1
	assistant := func() *translate.Message {
		if open < 0 {
			msgs = append(msgs, translate.Message{Role: translate.RoleAssistant})
			open = len(msgs) - 1
		}
		m := &msgs[open]
		if reasoning.Len() > 0 {
			m.Reasoning += reasoning.String()
			reasoning.Reset()
		}
		return m
	}
	arr.ForEach(func(i, it gjson.Result) bool {
		param := index(base, int(i.Int()))
		if err = members.Check(it, param, itemFields); err != nil {
			return false
		}
		if !it.IsObject() {
			err = translate.Errorf(param, "must be an object")
			return false
		}
		typ := it.Get("type").Str
		if typ == "" && it.Get("role").Exists() {
			typ = "message"
		}
		switch typ {
		case "message":
			var m translate.Message
			if m, err = p.message(it, param); err != nil {
				return false
			}
			if m.Role == translate.RoleAssistant {
				open = -1
				a := assistant()
				a.Content, a.Refusal = m.Content, m.Refusal
			} else {
				msgs = append(msgs, m)
				open = -1
			}
		case "function_call":
			call := translate.ToolCall{}
			for _, f := range []struct {
				name string
				dst  *string
			}{{"call_id", &call.ID}, {"name", &call.Name}, {"arguments", &call.Arguments}} {
				v := it.Get(f.name)
				if v.Type != gjson.String || (v.Str == "" && f.name != "arguments") {
					err = translate.Errorf(param+"."+f.name, "must be a non-empty string")
					return false
				}
				*f.dst = v.Str
			}
			a := assistant()
			a.ToolCalls = append(a.ToolCalls, call)
		case "function_call_output":
			id := it.Get("call_id")
			if id.Type != gjson.String || id.Str == "" {
				err = translate.Errorf(param+".call_id", "must be a non-empty string")
				return false
			}
			m := translate.Message{Role: translate.RoleTool, ToolCallID: id.Str}
			out := it.Get("output")
			switch {
			case out.Type == gjson.String:
				m.Content = []translate.Part{{Type: translate.PartText, Text: out.Str}}
			case out.IsArray():
				if m.Content, err = p.parts(out, param+".output", translate.RoleTool); err != nil {
					return false
				}
			default:
				err = translate.Errorf(param+".output", "must be a string or an array of content parts")
				return false
			}
			msgs = append(msgs, m)
			open = -1 // a tool result ends the assistant's turn
		case "reasoning":
			s := it.Get("summary")
			if s.Exists() && !s.IsArray() {
				err = translate.Errorf(param+".summary", "must be an array")
				return false
			}
			s.ForEach(func(j, part gjson.Result) bool {
				pp := index(param+".summary", int(j.Int()))
				if err = members.Check(part, pp, summaryFields); err != nil {
					return false
				}
				if t := part.Get("text"); t.Type == gjson.String {
					if reasoning.Len() > 0 {
						reasoning.WriteString("\n\n")
					}
					reasoning.WriteString(t.Str)
				}
				return true
			})
			if err != nil {
				return false
			}
			open = -1 // the reasoning belongs to the assistant turn that follows
		case "":
			err = translate.Errorf(param+".type", "is required")
			return false
		default:
			p.untranslatableErr(param+".type", "the input item type %q is served only by a responses backend", clip(typ))
		}
		return true
	})
	return msgs, err
}

// message reads a message item.
func (p *parser) message(it gjson.Result, param string) (translate.Message, error) {
	var m translate.Message
	role := it.Get("role")
	switch role.Str {
	case "user", "assistant", "system", "developer":
		m.Role = role.Str
	default:
		return m, translate.Errorf(param+".role", "must be user, assistant, system or developer")
	}
	content := it.Get("content")
	switch {
	case content.Type == gjson.String:
		m.Content = []translate.Part{{Type: translate.PartText, Text: content.Str}}
	case content.IsArray():
		parts, err := p.parts(content, param+".content", m.Role)
		if err != nil {
			return m, err
		}
		for _, pt := range parts {
			if pt.Type == translate.PartRefusal {
				m.Refusal += pt.Text
			} else {
				m.Content = append(m.Content, pt)
			}
		}
	default:
		return m, translate.Errorf(param+".content", "must be a string or an array of content parts")
	}
	return m, nil
}

// parts reads content parts; role says which part types are allowed.
func (p *parser) parts(arr gjson.Result, base, role string) ([]translate.Part, error) {
	var out []translate.Part
	var err error
	arr.ForEach(func(i, v gjson.Result) bool {
		param := index(base, int(i.Int()))
		if err = members.Check(v, param, partFields); err != nil {
			return false
		}
		typ := v.Get("type").Str
		assistant := role == translate.RoleAssistant
		switch {
		case typ == "output_text" && assistant, typ == "input_text" && !assistant:
			t := v.Get("text")
			if t.Type != gjson.String {
				err = translate.Errorf(param+".text", "must be a string")
				return false
			}
			out = append(out, translate.Part{Type: translate.PartText, Text: t.Str})
		case typ == "refusal" && assistant:
			out = append(out, translate.Part{Type: translate.PartRefusal, Text: v.Get("refusal").Str})
		case typ == "input_image" && !assistant:
			u := v.Get("image_url")
			if u.Type != gjson.String || u.Str == "" {
				p.untranslatableErr(param, "an input_image without image_url (a file_id) is served only by a responses backend")
				return true
			}
			out = append(out, translate.Part{Type: translate.PartImage, URL: u.Str, Detail: v.Get("detail").Str})
		case typ == "input_file" && !assistant:
			if v.Get("file_url").Exists() {
				p.untranslatableErr(param+".file_url", "an input_file given by file_url is served only by a responses backend")
				return true
			}
			part := translate.Part{Type: translate.PartFile, FileData: v.Get("file_data").Str, FileID: v.Get("file_id").Str,
				Filename: v.Get("filename").Str}
			if part.FileData == "" && part.FileID == "" {
				err = translate.Errorf(param, "an input_file needs file_data or file_id")
				return false
			}
			out = append(out, part)
		case typ == "":
			err = translate.Errorf(param+".type", "is required")
			return false
		default:
			err = translate.Errorf(param+".type", "the content part type %q is not allowed in a %s message", clip(typ), role)
			return false
		}
		return true
	})
	return out, err
}

func clip(s string) string {
	if len(s) <= maxParamLength {
		return s
	}
	n := maxParamLength
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "..."
}

// appendEcho appends the request settings the Response object repeats, as the members of
// a JSON object without its braces, in the order OpenAI writes them.
func (p *parser) appendEcho(dst []byte) []byte {
	r, c := p.r, p.r.Core
	dst = append(dst, `"instructions":`...)
	if r.instructions != "" {
		dst = jsonx.AppendString(dst, r.instructions)
	} else {
		dst = append(dst, "null"...)
	}
	dst = append(dst, `,"max_output_tokens":`...)
	if c.MaxTokens > 0 {
		dst = jsonx.AppendInt(dst, c.MaxTokens)
	} else {
		dst = append(dst, "null"...)
	}
	dst = append(dst, `,"metadata":`...)
	dst = jsonx.AppendRawOr(dst, p.metadata, "{}")
	dst = append(dst, `,"parallel_tool_calls":`...)
	dst = jsonx.AppendBool(dst, p.parallel == nil || *p.parallel)
	dst = append(dst, `,"previous_response_id":`...)
	if r.PreviousResponseID != "" {
		dst = jsonx.AppendString(dst, r.PreviousResponseID)
	} else {
		dst = append(dst, "null"...)
	}
	dst = append(dst, `,"reasoning":`...)
	dst = jsonx.AppendRawOr(dst, p.reasoning, "null")
	if p.safetyID != "" {
		dst = append(dst, `,"safety_identifier":`...)
		dst = jsonx.AppendString(dst, p.safetyID)
	}
	dst = append(dst, `,"store":`...)
	dst = jsonx.AppendBool(dst, r.Store)
	dst = append(dst, `,"temperature":`...)
	if c.Temperature != nil {
		dst = jsonx.AppendFloat(dst, *c.Temperature)
	} else {
		dst = append(dst, "1"...)
	}
	dst = append(dst, `,"text":`...)
	dst = jsonx.AppendRawOr(dst, p.text, `{"format":{"type":"text"}}`)
	dst = append(dst, `,"tool_choice":`...)
	dst = jsonx.AppendRawOr(dst, p.toolChoice, `"auto"`)
	dst = append(dst, `,"tools":`...)
	dst = p.appendTools(dst)
	dst = append(dst, `,"top_p":`...)
	if c.TopP != nil {
		dst = jsonx.AppendFloat(dst, *c.TopP)
	} else {
		dst = append(dst, "1"...)
	}
	dst = append(dst, `,"truncation":`...)
	dst = jsonx.AppendRawOr(dst, p.truncation, `"disabled"`)
	if p.user != "" {
		dst = append(dst, `,"user":`...)
		dst = jsonx.AppendString(dst, p.user)
	}
	return dst
}

// appendTools echoes tools: function tools with OpenAI's defaults filled in, built-in ones
// as sent.
func (p *parser) appendTools(dst []byte) []byte {
	dst = append(dst, '[')
	fn := 0
	i := 0
	gjson.Parse(p.tools).ForEach(func(_, t gjson.Result) bool {
		if i > 0 {
			dst = append(dst, ',')
		}
		i++
		if t.Get("type").Str != "function" {
			dst = append(dst, t.Raw...)
			return true
		}
		tool := &p.r.Core.Tools[fn]
		fn++
		dst = append(dst, `{"type":"function","name":`...)
		dst = jsonx.AppendString(dst, tool.Name)
		dst = append(dst, `,"description":`...)
		dst = appendStringOrNull(dst, tool.Description)
		dst = append(dst, `,"parameters":`...)
		dst = jsonx.AppendRawOr(dst, tool.Parameters, "null")
		dst = append(dst, `,"strict":`...)
		dst = jsonx.AppendBool(dst, tool.Strict == nil || *tool.Strict)
		dst = append(dst, '}')
		return true
	})
	return append(dst, ']')
}

func appendStringOrNull(dst []byte, s string) []byte {
	if s == "" {
		return append(dst, "null"...)
	}
	return jsonx.AppendString(dst, s)
}

// appendChatBody appends the settings of c as a chat completions body without messages,
// tools and tool_choice, for the OpenAI chat provider: it forwards the body of the request
// it is given, and writes those three from the core request when Edited is set (build
// sets it).
func appendChatBody(dst []byte, c *translate.Request) []byte {
	dst = append(dst, `{"model":`...)
	dst = jsonx.AppendString(dst, c.Model)
	if c.ParallelToolCalls != nil && len(c.Tools) > 0 {
		dst = append(dst, `,"parallel_tool_calls":`...)
		dst = jsonx.AppendBool(dst, *c.ParallelToolCalls)
	}
	if c.MaxTokens > 0 {
		dst = append(dst, `,"max_completion_tokens":`...)
		dst = jsonx.AppendInt(dst, c.MaxTokens)
	}
	if c.Temperature != nil {
		dst = append(dst, `,"temperature":`...)
		dst = jsonx.AppendFloat(dst, *c.Temperature)
	}
	if c.TopP != nil {
		dst = append(dst, `,"top_p":`...)
		dst = jsonx.AppendFloat(dst, *c.TopP)
	}
	if rf := &c.ResponseFormat; rf.Type != "" {
		dst = append(dst, `,"response_format":{"type":`...)
		dst = jsonx.AppendString(dst, rf.Type)
		if rf.Type == translate.FormatJSONSchema {
			dst = append(dst, `,"json_schema":{"name":`...)
			dst = jsonx.AppendString(dst, rf.Name)
			if rf.Description != "" {
				dst = append(dst, `,"description":`...)
				dst = jsonx.AppendString(dst, rf.Description)
			}
			dst = append(dst, `,"schema":`...)
			dst = jsonx.AppendRawOr(dst, rf.Schema, "{}")
			if rf.Strict != nil {
				dst = append(dst, `,"strict":`...)
				dst = jsonx.AppendBool(dst, *rf.Strict)
			}
			dst = append(dst, '}')
		}
		dst = append(dst, '}')
	}
	if c.ReasoningEffort != "" {
		dst = append(dst, `,"reasoning_effort":`...)
		dst = jsonx.AppendString(dst, c.ReasoningEffort)
	}
	if c.User != "" {
		dst = append(dst, `,"user":`...)
		dst = jsonx.AppendString(dst, c.User)
	}
	if c.Stream {
		dst = append(dst, `,"stream":true`...)
	}
	return append(dst, '}')
}
