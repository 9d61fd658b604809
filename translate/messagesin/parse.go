package messagesin

import (
	"strconv"
	"strings"

	"github.com/agate-gateway/agate/internal/jsonx"
	"github.com/agate-gateway/agate/translate"
	"github.com/agate-gateway/agate/translate/internal/members"
	"github.com/agate-gateway/agate/translate/internal/slab"
)

// TopLevelFields are the top-level members of a Messages request that the parser reads or
// knowingly drops, lower case and space-separated (the form translate.CheckMemberNames
// takes). A body naming one of them twice, or in another case, is rejected: the anthropic
// passthrough forwards the client's bytes, which must read the same to every decoder.
const TopLevelFields = "model messages max_tokens system stream temperature top_p top_k stop_sequences " +
	"metadata tool_choice tools thinking output_config cache_control container context_management " +
	"inference_geo service_tier mcp_servers"

// topLevelNames is TopLevelFields for members.Check.
var topLevelNames = members.NewNames(TopLevelFields)

// dropped are the known top-level fields with no counterpart on translated routes; they
// are ignored without a trace (see the package doc). Any other unknown field is reported
// in Request.Extra, for the proxy to count as dropped.
const dropped = " cache_control container context_management inference_geo service_tier mcp_servers "

// Parse reads a POST /v1/messages body. Errors are *translate.ParamError values whose
// Param is the offending field's path (messages[1].content[0].type). The Request's Body is
// an OpenAI chat completions body equivalent to it (the openai provider forwards Body), not
// the Messages body, which the caller keeps for the anthropic passthrough.
func Parse(body []byte) (*translate.Request, error) {
	req, _, err := parseOnStack(string(body), true, false, translate.DefaultMaxInflated)
	return req, err
}

// ParseCountTokens reads a POST /v1/messages/count_tokens body: a Messages request
// without max_tokens.
func ParseCountTokens(body []byte) (*translate.Request, error) {
	req, _, err := parseOnStack(string(body), false, false, translate.DefaultMaxInflated)
	return req, err
}

// ParseWithin is Parse (countTokens: ParseCountTokens) with the request's Allowance for
// carried state (translate.Allowance): the state its tool_use ids carry inflates to at
// most maxInflated bytes in all, else the request is refused (translate.StateTooLarge,
// naming the id). Parse and ParseCountTokens allow translate.DefaultMaxInflated.
func ParseWithin(body []byte, countTokens bool, maxInflated int) (*translate.Request, error) {
	req, _, err := parseOnStack(string(body), !countTokens, false, maxInflated)
	return req, err
}

// ParseOwned is ParseWithin for a Messages request (not count_tokens) whose body the
// caller owns and never changes again: the request's strings are views of body instead
// of a copy of it, so body must outlive them (heap memory the caller allocated, never a
// server's recycled buffer). It saves the copy ParseWithin makes of the whole body.
func ParseOwned(body []byte, maxInflated int) (*translate.Request, error) {
	req, _, err := parseOnStack(jsonx.View(body), true, false, maxInflated)
	return req, err
}

// ParseLazy is ParseOwned with the messages' text left as the client escaped it: the
// text of text blocks, of string contents and of tool results is the contents of its
// JSON string literal as written, in the request's Literals (the body), which the
// encoders that are translate.LiteralReaders copy without decoding and Decode decodes
// for any other reader. It makes the same checks, with the same errors, as ParseOwned;
// a passthrough saves decoding what it forwards as it came.
func ParseLazy(body []byte, maxInflated int) (*translate.Request, error) {
	req, _, err := ParsePass(body, maxInflated)
	return req, err
}

// ParsePass is ParseLazy that also returns where the passthrough's body differs from
// body (PassBody).
func ParsePass(body []byte, maxInflated int) (*translate.Request, PassBody, error) {
	return parseOnStack(jsonx.View(body), true, true, maxInflated)
}

// Decode decodes the strings of req, a request ParseLazy read, that it left escaped,
// each into fresh memory (one allocation for all of them), and clears req.Literals: for
// a reader of the request that is not a translate.LiteralReader (the tool loop, tracing,
// the response cache). A request with no Literals is left as it is.
func Decode(req *translate.Request) { req.DecodeLiterals() }

// Stage is the memory a parse works in and needs only while it runs: the parser, the
// request's top-level members and ParseHead's scanners of tools and system, some 3 KB,
// which a parse without one (the package's functions) takes on its goroutine's stack. A
// server's connection goroutine keeps its stack as large as the deepest call it made for
// as long as it runs (a stream's whole life), so a server parses with a Stage
// (Stage.ParseHead, Stage.Build), which it can use for the next parse as soon as this one
// returns: nothing a parse returns refers to its Stage. The zero value is ready; not safe
// for concurrent use.
type Stage struct {
	p      parser
	fields [24]members.Member // the top-level members (members.Collect's, or the walk's)
	// The rest is parseHead's: the walk's first n fields; the indexes of tools and system,
	// made as the walk reads them (jsonx.IndexValue), and their roots; the names seen and
	// the question about the model.
	n             int
	tools, system jsonx.Scanner
	roots         [2]jsonx.Value
	seen          members.Set
	ask           members.ModelAsk
}

// Reset drops what the last parse left in st (the body, its index, the request), so that
// a recycled Stage keeps none of it alive.
func (st *Stage) Reset() { *st = Stage{} }

// start readies st's parser for a parse of s, with the request's Allowance, lazy when
// lazy is set, and returns it. Field by field: a composite literal would be built on the
// stack, its size in the caller's frame, and copied.
func (st *Stage) start(s string, maxInflated int, lazy bool) *parser {
	p := &st.p
	*p = parser{}
	p.sc.Reset(s)
	p.inflate, p.maxInflated, p.lazy = translate.NewAllowance(maxInflated), maxInflated, lazy
	return p
}

// parseOnStack is parse without a caller's Stage: its Stage is this function's frame. It
// is a function of its own, never inlined, so that only such a parse takes that frame.
//
//go:noinline
func parseOnStack(s string, needMaxTokens, lazy bool, maxInflated int) (*translate.Request, PassBody, error) {
	var st Stage
	return st.parse(s, needMaxTokens, lazy, maxInflated)
}

// parse reads body, whose strings the request aliases; lazy leaves the messages' text
// escaped (ParseLazy). It works in st.
func (st *Stage) parse(s string, needMaxTokens, lazy bool, maxInflated int) (*translate.Request, PassBody, error) {
	if !jsonx.ValidUTF8(s) {
		// The anthropic passthrough forwards the body as it is: a decoder upstream could
		// read a member the gateway did not (an overlong "mod\xc1\xa5l").
		return nil, PassBody{}, &translate.ParamError{Code: translate.CodeInvalidUTF8,
			Message: "the request body is not valid UTF-8: send JSON text encoded as UTF-8 (RFC 8259)"}
	}
	req := &translate.Request{IncludeUsage: true}
	p := st.start(s, maxInflated, lazy)
	p.req = req
	root, ok := p.sc.IndexRoot()
	if !ok {
		return nil, PassBody{}, translate.Errorf("", "the request body is not valid JSON")
	}
	if root.Kind != jsonx.Object {
		return nil, PassBody{}, translate.Errorf("", "the request body must be a JSON object")
	}
	// The names are checked before any value is read, so a duplicate is reported first.
	fields, err := members.Collect(&p.sc, root, "", topLevelNames, st.fields[:0])
	if err != nil {
		return nil, PassBody{}, err
	}
	for _, f := range fields {
		if p.field(f.Name, f.V); p.err != nil {
			return nil, PassBody{}, p.err
		}
	}
	if p.effort != "" && p.thinkingType != "disabled" {
		req.ReasoningEffort = p.effort
	}
	switch {
	case req.Model == "":
		return nil, PassBody{}, translate.Errorf("model", "is required")
	case !p.hasMessages:
		return nil, PassBody{}, translate.Errorf("messages", "is required")
	case needMaxTokens && !p.hasMaxTokens:
		return nil, PassBody{}, translate.Errorf("max_tokens", "is required")
	case len(req.Messages) == 0:
		return nil, PassBody{}, translate.Errorf("messages", "must hold at least one message")
	}
	if len(p.system) > 0 {
		// messages left room for it at the front
		req.Messages = append(req.Messages, translate.Message{})
		copy(req.Messages[1:], req.Messages)
		req.Messages[0] = translate.Message{Role: translate.RoleSystem, Content: p.system}
	}
	// The body is written once and never changed: a view of it is its string.
	req.Body, req.Edited = jsonx.View(appendChatBody(make([]byte, 0, 256), req)), true
	if lazy {
		req.Literals = s
	}
	return req, passBody(s, fields), nil
}

// field reads the top-level member k, whose value is v.
func (p *parser) field(k string, v jsonx.Value) {
	req := p.req
	switch k {
	case "model":
		req.Model = p.str(v, func() string { return "model" })
	case "messages":
		p.hasMessages = true
		p.messages(v)
	case "max_tokens":
		p.hasMaxTokens = true
		req.MaxTokens, req.MaxTokensParam = p.positiveInt(v, "max_tokens"), "max_tokens"
	case "system":
		p.text(v, func() string { return "system" }, &p.parts)
		p.system = p.parts.Run()
	case "stream":
		req.Stream = p.bool(v, "stream")
	case "temperature":
		req.Temperature = p.float(v, "temperature")
	case "top_p":
		req.TopP = p.float(v, "top_p")
	case "top_k":
		if v.Kind != jsonx.Null {
			n := p.positiveInt(v, "top_k")
			req.TopK = &n
		}
	case "stop_sequences":
		p.stops(v)
	case "metadata":
		if v.Kind == jsonx.Object {
			req.User = p.sc.Get(v, "user_id").Str
		} else if v.Kind != jsonx.Null {
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
		if !strings.Contains(dropped, " "+k+" ") {
			req.Extra = append(req.Extra, translate.Field{Name: k, Raw: v.Raw})
		}
	}
}

// parser holds the first error; every method is a no-op once it is set.
type parser struct {
	req *translate.Request
	sc  jsonx.Scanner
	// parts and calls hold the content parts and tool calls of the messages, a few
	// allocations for the whole request; inner holds the content of tool_result blocks,
	// which are read while a user message's parts are being collected in parts.
	parts, inner slab.Slab[translate.Part]
	calls        slab.Slab[translate.ToolCall]
	err          *translate.ParamError
	effort       string // from output_config.effort, else from thinking
	explicit     bool   // effort came from output_config.effort
	thinkingType string
	// system is the system prompt's parts; hasMessages and hasMaxTokens say whether the
	// request has those members.
	system                    []translate.Part
	hasMessages, hasMaxTokens bool
	// inflate is what the tool_use ids' carried state may still inflate to, of
	// maxInflated (translate.Allowance).
	inflate     translate.Allowance
	maxInflated int
	// lazy leaves the messages' text escaped (ParseLazy): the members of messages and
	// content blocks are read with their strings as written (members), and those the
	// parser reads itself are decoded (dec).
	lazy bool
	// build is ParseHead's first pass building the messages as it checks them (a request
	// that will be translated): built holds the core messages made so far; heads the
	// current message's content blocks and content its content, as the walk read them;
	// more the members of the block read last that only a build reads (readBlock).
	build   bool
	built   []translate.Message
	heads   []builtBlock
	content jsonx.Value
	more    [bxN]jsonx.Value
}

// members reads the members of obj named in keys into vals (Scanner.Members), with the
// strings as written when the parse is lazy.
func (p *parser) members(obj jsonx.Value, keys []string, vals []jsonx.Value) {
	if p.lazy {
		p.sc.MembersRaw(obj, keys, vals)
	} else {
		p.sc.Members(obj, keys, vals)
	}
}

// dec decodes the string values among vals that members left as written: those the
// parser compares or keeps as values (types, roles, ids, names), as opposed to the text
// it passes on.
func (p *parser) dec(vals ...*jsonx.Value) {
	if !p.lazy {
		return
	}
	for _, v := range vals {
		if v.Kind == jsonx.String && strings.IndexByte(v.Str, '\\') >= 0 {
			v.Str = p.sc.DecodeRaw(v.Str, 256)
		}
	}
}

// rawArgs returns a tool_use block's input, raw JSON, as a tool call's arguments. A lazy
// parse's request may hold raw JSON in its Literals only without a backslash: an encoder
// would read one there as an escape (translate.Request.AppendDecoded), so such an input
// is copied out of the body.
func (p *parser) rawArgs(raw string) string {
	if p.lazy && strings.IndexByte(raw, '\\') >= 0 {
		return strings.Clone(raw)
	}
	return raw
}

func (p *parser) fail(param, format string, args ...any) {
	if p.err == nil {
		p.err = translate.Errorf(param, format, args...)
	}
}

// optional reports whether v, the value of the optional field param, is of kind: null is
// the field unset (false), another kind fails with rule (false).
func (p *parser) optional(v jsonx.Value, kind jsonx.Kind, param, rule string) bool {
	if v.Kind == kind {
		return true
	}
	if v.Kind != jsonx.Null {
		p.fail(param, "%s", rule)
	}
	return false
}

func (p *parser) str(v jsonx.Value, param func() string) string {
	if v.Kind != jsonx.String {
		p.fail(param(), "must be a string")
	}
	return v.Str
}

func (p *parser) bool(v jsonx.Value, param string) bool {
	switch v.Kind {
	case jsonx.True:
		return true
	case jsonx.False, jsonx.Null:
		return false
	}
	p.fail(param, "must be a boolean")
	return false
}

func (p *parser) float(v jsonx.Value, param string) *float64 {
	switch v.Kind {
	case jsonx.Null:
		return nil
	case jsonx.Number:
		f := v.Float()
		return &f
	}
	p.fail(param, "must be a number")
	return nil
}

func (p *parser) positiveInt(v jsonx.Value, param string) int {
	if v.Kind != jsonx.Number {
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

func (p *parser) stops(v jsonx.Value) {
	if !p.optional(v, jsonx.Array, "stop_sequences", "must be an array of strings") {
		return
	}
	i := 0
	p.sc.Each(v, func(_ string, s jsonx.Value) bool {
		k := i
		p.req.Stop = append(p.req.Stop, p.str(s, func() string { return "stop_sequences[" + strconv.Itoa(k) + "]" }))
		i++
		return p.err == nil
	})
}

// text reads a string or an array of text blocks (system, a document's content) into
// the current run of s.
func (p *parser) text(v jsonx.Value, param func() string, s *slab.Slab[translate.Part]) {
	switch {
	case v.Kind == jsonx.String:
		if v.Str != "" {
			s.Push(translate.Part{Type: translate.PartText, Text: v.Str})
		}
		return
	case v.Kind == jsonx.Array:
		i := 0
		p.sc.Each(v, func(_ string, b jsonx.Value) bool {
			k := i
			at := func() string { return param() + "[" + strconv.Itoa(k) + "]" }
			i++
			if b.Kind != jsonx.Object {
				p.fail(at(), "must be a content block object")
				return false
			}
			var f [cbN]jsonx.Value
			p.block(b, &f)
			if t := f[cbType].Str; t != "text" {
				p.fail(at()+".type", "must be \"text\", got %q", clip(t))
				return false
			}
			s.Push(translate.Part{Type: translate.PartText, Text: p.str(f[cbText], func() string { return at() + ".text" }),
				CacheControl: p.cacheControl(f[cbCache], at)})
			return p.err == nil
		})
		return
	case v.Kind == jsonx.Null:
		return
	}
	p.fail(param(), "must be a string or an array of text blocks")
}

// Members of a content block, read in one pass (block), at these positions.
const (
	cbType = iota
	cbText
	cbSource
	cbTitle
	cbContent
	cbCache
	cbToolUseID
	cbIsError
	cbN
)

// block reads the members of the content block b that the parser interprets.
func (p *parser) block(b jsonx.Value, f *[cbN]jsonx.Value) {
	p.members(b, []string{"type", "text", "source", "title", "content", "cache_control", "tool_use_id", "is_error"}, f[:])
	p.dec(&f[cbType], &f[cbTitle], &f[cbToolUseID]) // text and content are passed on
}

// cacheControl returns a block's cache_control as raw JSON, "" when absent or null.
func (p *parser) cacheControl(v jsonx.Value, at func() string) string {
	switch v.Kind {
	case jsonx.Object:
		return v.Raw
	case jsonx.Missing, jsonx.Null:
		return ""
	}
	p.fail(at()+".cache_control", "must be an object")
	return ""
}

func (p *parser) messages(v jsonx.Value) {
	if v.Kind != jsonx.Array {
		p.fail("messages", "must be an array")
		return
	}
	// Most messages are one core message each, and the system prompt goes in front; a
	// user message's tool results are one core message each, so agentic histories (a
	// turn's user question, tool calls, two results and answer: five core messages for
	// four) get half as many again, rather than a growth that copies them all.
	n := 1
	p.sc.Each(v, func(string, jsonx.Value) bool { n++; return true })
	p.req.Messages = make([]translate.Message, 0, n+n/2)
	i := 0
	p.sc.Each(v, func(_ string, m jsonx.Value) bool {
		k := i
		p.message(m, func() string { return "messages[" + strconv.Itoa(k) + "]" })
		i++
		return p.err == nil
	})
}

func (p *parser) message(m jsonx.Value, at func() string) {
	if m.Kind != jsonx.Object {
		p.fail(at(), "must be an object")
		return
	}
	var f [2]jsonx.Value
	p.members(m, []string{"role", "content"}, f[:])
	p.dec(&f[0])
	role, content := f[0], f[1]
	if !content.Exists() {
		p.fail(at()+".content", "is required")
		return
	}
	switch role.Str {
	case "system": // Claude Code sends these mid-conversation
		p.text(content, func() string { return at() + ".content" }, &p.parts)
		if parts := p.parts.Run(); len(parts) > 0 {
			p.req.Messages = append(p.req.Messages, translate.Message{Role: translate.RoleSystem, Content: parts})
		}
	case "user":
		p.user(content, func() string { return at() + ".content" })
	case "assistant":
		p.assistant(content, func() string { return at() + ".content" })
	default:
		p.fail(at()+".role", "must be \"user\" or \"assistant\", got %q", clip(role.Raw))
	}
}

// user reads a user message. Its tool_result blocks become core tool messages, in order,
// ahead of a user message with the other blocks.
func (p *parser) user(content jsonx.Value, at func() string) {
	if content.Kind == jsonx.String {
		p.parts.Push(translate.Part{Type: translate.PartText, Text: content.Str})
		p.req.Messages = append(p.req.Messages, translate.Message{Role: translate.RoleUser, Content: p.parts.Run()})
		return
	}
	if content.Kind != jsonx.Array {
		p.fail(at(), "must be a string or an array of content blocks")
		return
	}
	i := 0
	p.sc.Each(content, func(_ string, b jsonx.Value) bool {
		k := i
		bat := func() string { return at() + "[" + strconv.Itoa(k) + "]" }
		i++
		if b.Kind != jsonx.Object {
			p.fail(bat(), "must be a content block object")
			return false
		}
		var f [cbN]jsonx.Value
		p.block(b, &f)
		if f[cbType].Str == "tool_result" {
			p.toolResult(&f, bat)
		} else {
			p.part(&p.parts, &f, bat)
		}
		return p.err == nil
	})
	if parts := p.parts.Run(); len(parts) > 0 {
		p.req.Messages = append(p.req.Messages, translate.Message{Role: translate.RoleUser, Content: parts})
	}
}

// part pushes the core parts of a user content block, whose members are f, to s; blocks
// without one are dropped. The block's cache_control goes on the last part it pushed.
func (p *parser) part(s *slab.Slab[translate.Part], f *[cbN]jsonx.Value, at func() string) {
	n := s.Len()
	switch f[cbType].Str {
	case "text":
		s.Push(translate.Part{Type: translate.PartText, Text: p.str(f[cbText], func() string { return at() + ".text" })})
	case "image":
		src := f[cbSource]
		switch st := p.sc.Get(src, "type").Str; st {
		case "base64":
			s.Push(translate.Part{Type: translate.PartImage,
				Media: &translate.Media{URL: "data:" + p.sc.Get(src, "media_type").Str + ";base64," + p.sc.Get(src, "data").Str}})
		case "url":
			s.Push(translate.Part{Type: translate.PartImage, Media: &translate.Media{URL: p.str(p.sc.Get(src, "url"), func() string { return at() + ".source.url" })}})
		default:
			p.fail(at()+".source.type", "image sources of type %q cannot be sent to this backend: use base64 or url", clip(st))
		}
	case "document":
		src := f[cbSource]
		switch st := p.sc.Get(src, "type").Str; st {
		case "base64":
			s.Push(translate.Part{Type: translate.PartFile, Media: &translate.Media{Filename: f[cbTitle].Str,
				FileData: "data:" + p.sc.Get(src, "media_type").Str + ";base64," + p.sc.Get(src, "data").Str}})
		case "text":
			s.Push(translate.Part{Type: translate.PartText, Text: p.sc.Get(src, "data").Str})
		case "content":
			p.text(p.sc.Get(src, "content"), func() string { return at() + ".source.content" }, s)
		default:
			p.fail(at()+".source.type", "document sources of type %q cannot be sent to this backend: use base64, text or content", clip(st))
		}
	case "search_result":
		// An object stands for an array holding it, as it always has here.
		one := func(_ string, c jsonx.Value) bool {
			if p.sc.Get(c, "type").Str == "text" {
				s.Push(translate.Part{Type: translate.PartText, Text: p.sc.Get(c, "text").Str})
			}
			return true
		}
		if c := f[cbContent]; c.Kind == jsonx.Object {
			one("", c)
		} else {
			p.sc.Each(c, one)
		}
	case "":
		p.fail(at()+".type", "is required")
	}
	// thinking, tool_use and server-tool blocks have no user-side counterpart
	if cc := p.cacheControl(f[cbCache], at); cc != "" && s.Len() > n {
		s.Last().CacheControl = cc
	}
}

// toolResult reads a tool_result block, whose members are f, as a core tool message. Its
// cache_control goes on the message's last part.
func (p *parser) toolResult(f *[cbN]jsonx.Value, at func() string) {
	id := p.str(f[cbToolUseID], func() string { return at() + ".tool_use_id" })
	m := translate.Message{Role: translate.RoleTool, ToolCallID: CoreToolID(id), ToolError: f[cbIsError].Kind == jsonx.True}
	c := f[cbContent]
	switch {
	case c.Kind == jsonx.String:
		p.inner.Push(translate.Part{Type: translate.PartText, Text: c.Str})
	case c.Kind == jsonx.Array:
		i := 0
		p.sc.Each(c, func(_ string, cb jsonx.Value) bool {
			k := i
			var cf [cbN]jsonx.Value
			p.block(cb, &cf)
			p.part(&p.inner, &cf, func() string { return at() + ".content[" + strconv.Itoa(k) + "]" })
			i++
			return p.err == nil
		})
	case c.Exists() && c.Kind != jsonx.Null:
		p.fail(at()+".content", "must be a string or an array of content blocks")
	}
	if p.inner.Len() == 0 {
		p.inner.Push(translate.Part{Type: translate.PartText, Text: ""})
	}
	if cc := p.cacheControl(f[cbCache], at); cc != "" {
		p.inner.Last().CacheControl = cc
	}
	m.Content = p.inner.Run()
	p.req.Messages = append(p.req.Messages, m)
}

func (p *parser) assistant(content jsonx.Value, at func() string) {
	m := translate.Message{Role: translate.RoleAssistant}
	if content.Kind == jsonx.String {
		p.parts.Push(translate.Part{Type: translate.PartText, Text: content.Str})
		m.Content = p.parts.Run()
		p.req.Messages = append(p.req.Messages, m)
		return
	}
	if content.Kind != jsonx.Array {
		p.fail(at(), "must be a string or an array of content blocks")
		return
	}
	var reasoning []string
	i := 0
	p.sc.Each(content, func(_ string, b jsonx.Value) bool {
		k := i
		bat := func() string { return at() + "[" + strconv.Itoa(k) + "]" }
		i++
		var f [9]jsonx.Value // one pass over the block
		p.members(b, []string{"type", "text", "input", "id", "name", "thinking", "signature", "data", "cache_control"}, f[:])
		p.dec(&f[0], &f[3], &f[4], &f[5], &f[6], &f[7]) // text is passed on
		switch f[0].Str {
		case "text":
			p.parts.Push(translate.Part{Type: translate.PartText, Text: p.str(f[1], func() string { return bat() + ".text" }),
				CacheControl: p.cacheControl(f[8], bat)})
		case "tool_use":
			input := f[2]
			args := "{}"
			if input.Kind == jsonx.Object {
				args = p.rawArgs(input.Raw)
			}
			id := CoreToolID(p.str(f[3], func() string { return bat() + ".id" }))
			if p.err == nil && !p.req.OpenCarried(id, &p.inflate) {
				p.err = translate.StateTooLarge(bat()+".id", p.maxInflated)
			}
			p.calls.Push(translate.ToolCall{ID: id, Name: p.str(f[4], func() string { return bat() + ".name" }), Arguments: args})
		case "thinking":
			t := f[5].Str
			reasoning = append(reasoning, t)
			m.ThinkingBlocks = append(m.ThinkingBlocks, translate.ThinkingBlock{Type: "thinking", Thinking: t, Signature: f[6].Str})
		case "redacted_thinking":
			m.ThinkingBlocks = append(m.ThinkingBlocks, translate.ThinkingBlock{Type: "redacted_thinking", Data: f[7].Str})
		case "":
			p.fail(bat()+".type", "is required")
		}
		return p.err == nil // server_tool_use and its results are the upstream's own business
	})
	m.Content, m.ToolCalls = p.parts.Run(), p.calls.Run()
	m.Reasoning = strings.Join(reasoning, "")
	if len(m.Content) > 0 || len(m.ToolCalls) > 0 || len(m.ThinkingBlocks) > 0 {
		p.req.Messages = append(p.req.Messages, m)
	}
}

func (p *parser) tools(v jsonx.Value) {
	if !p.optional(v, jsonx.Array, "tools", "must be an array") {
		return
	}
	i := 0
	p.sc.Each(v, func(_ string, t jsonx.Value) bool {
		k := i
		at := func() string { return "tools[" + strconv.Itoa(k) + "]" }
		i++
		if t.Kind != jsonx.Object {
			p.fail(at(), "must be an object")
			return false
		}
		if typ := p.sc.Get(t, "type"); typ.Exists() && typ.Str != "custom" {
			// An Anthropic-defined tool (web_search_*, bash_*, tool_search_*...): an
			// anthropic upstream gets it as it is, the others leave it out.
			p.req.Tools = append(p.req.Tools, translate.Tool{Builtin: &translate.Item{Dialect: translate.DialectAnthropic, Type: typ.Str, Raw: t.Raw}})
			return true
		}
		tool := translate.Tool{Name: p.str(p.sc.Get(t, "name"), func() string { return at() + ".name" }), Description: p.sc.Get(t, "description").Str,
			CacheControl: p.cacheControl(p.sc.Get(t, "cache_control"), at)}
		if p.err != nil {
			return false
		}
		// The param is built only for an error: every tool would pay its allocations.
		if translate.CheckToolName(p.req.Tools, tool.Name, "") != nil {
			p.err = translate.CheckToolName(p.req.Tools, tool.Name, at()+".name")
			return false
		}
		if s := p.sc.Get(t, "input_schema"); s.Kind == jsonx.Object {
			tool.Parameters = s.Raw
		} else if s.Exists() && s.Kind != jsonx.Null {
			p.fail(at()+".input_schema", "must be a JSON Schema object")
		}
		if s := p.sc.Get(t, "strict"); s.IsBool() {
			b := s.Kind == jsonx.True
			tool.Strict = &b
		}
		p.req.Tools = append(p.req.Tools, tool)
		return p.err == nil
	})
}

func (p *parser) toolChoice(v jsonx.Value) {
	if !p.optional(v, jsonx.Object, "tool_choice", "must be an object") {
		return
	}
	tc := &p.req.ToolChoice
	switch t := p.sc.Get(v, "type").Str; t {
	case "auto":
		tc.Mode = translate.ToolChoiceAuto
	case "any":
		tc.Mode = translate.ToolChoiceRequired
	case "tool":
		tc.Mode, tc.Name = translate.ToolChoiceFunction, p.str(p.sc.Get(v, "name"), func() string { return "tool_choice.name" })
	case "none":
		tc.Mode = translate.ToolChoiceNone
	default:
		p.fail("tool_choice.type", "must be auto, any, tool or none, got %q", clip(t))
	}
	if p.sc.Get(v, "disable_parallel_tool_use").Kind == jsonx.True {
		f := false
		p.req.ParallelToolCalls = &f
	}
}

// thinking maps the thinking configuration to a reasoning effort: a budget of under 4,096
// tokens is low, under 16,384 medium, else high; adaptive is medium unless
// output_config.effort says otherwise.
func (p *parser) thinking(v jsonx.Value) {
	if !p.optional(v, jsonx.Object, "thinking", "must be an object") {
		return
	}
	p.thinkingType = p.sc.Get(v, "type").Str
	switch p.thinkingType {
	case "enabled":
		budget := looseInt(p.sc.Get(v, "budget_tokens"))
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

// looseInt reads a number, or a string of decimal digits, as an integer; anything else is
// 0, true 1 (how budget_tokens has always been read).
func looseInt(v jsonx.Value) int64 {
	switch v.Kind {
	case jsonx.True:
		return 1
	case jsonx.String:
		if v.Str == "" || v.Str[0] == '+' {
			return 0
		}
		n, err := strconv.ParseInt(v.Str, 10, 64)
		if err != nil {
			return 0
		}
		return n
	}
	return v.Int()
}

// setEffort records an effort; an explicit one (output_config.effort) wins over one
// derived from thinking.
func (p *parser) setEffort(e string, explicit bool) {
	if explicit || !p.explicit {
		p.effort, p.explicit = e, explicit
	}
}

func (p *parser) outputConfig(v jsonx.Value) {
	if !p.optional(v, jsonx.Object, "output_config", "must be an object") {
		return
	}
	if e := p.sc.Get(v, "effort"); e.Exists() && e.Kind != jsonx.Null {
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
	if f := p.sc.Get(v, "format"); f.Kind == jsonx.Object {
		if t := p.sc.Get(f, "type").Str; t != "json_schema" {
			p.fail("output_config.format.type", "must be json_schema, got %q", clip(t))
			return
		}
		schema := p.sc.Get(f, "schema")
		if schema.Kind != jsonx.Object {
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
