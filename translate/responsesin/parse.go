package responsesin

import (
	"strings"

	"github.com/agate-gateway/agate/internal/jsonx"
	"github.com/agate-gateway/agate/translate"
	"github.com/agate-gateway/agate/translate/internal/members"
	"github.com/agate-gateway/agate/translate/internal/slab"
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
	// Sealed is set when an input item holds state Agate sealed for a translating backend
	// (a reasoning item's encrypted_content, see Encoder): OpenAI cannot read it, so the
	// body must not be forwarded as it is to a responses backend.
	Sealed bool
	// Input is this request's input items as a JSON array (a string input becomes one
	// user message item), for storing with the response.
	Input string
	// Untranslatable is the first part of the request only a responses backend can serve
	// (a built-in tool, an input item type the core has no equivalent for), as the
	// *translate.ParamError a translating backend answers; nil when there is none.
	Untranslatable error
	// BuiltinTool is the first built-in tool of tools (web_search, file_search...) as the
	// *translate.ParamError a backend other than responses answers; nil when there is none.
	// The tools are in Core.Tools (translate.Tool.Builtin), which a responses upstream gets
	// and the others leave out.
	BuiltinTool error

	instructions string // "" when unset
	// promptCacheKey is prompt_cache_key, "" when unset: a caching hint, echoed, passed
	// to an OpenAI chat upstream (whose API has the same field) and dropped for the
	// others, which cache by prompt prefix without a key.
	promptCacheKey string
	flat           flatTools
	history        []translate.Message
	current        []translate.Message
	// lead is current with one free slot in front (current is lead[1:]) when input was an
	// array: build puts the instructions there and uses it as Core.Messages without a copy
	// when there is no history.
	lead []translate.Message
	echo []byte // the request settings the Response object echoes, see appendEcho
	// echoLater is set on a Request ParseHead returned incomplete, whose echo is made only
	// when an Encoder asks for it (echoOf): a passthrough forwards the upstream's Response
	// object and reads none.
	echoLater bool
	// inflate is what the carried state of the request's items (encrypted_content, call
	// ids), earlier items included (Prepend), may still inflate to, of maxInflated.
	inflate     translate.Allowance
	maxInflated int
	// model is where the top-level model's value lies in Body (AppendBody); its End is 0
	// for a Request Parse did not make.
	model translate.Span
	// lazy is set on a Request ParseHeadLazy returned incomplete: Build parses it lazily.
	lazy bool
}

// Member names of the objects Parse interprets; see members.Read. The i* constants are
// the positions of the names in their list, where members.Read stores their values.
const (
	topLevelFields = "model input instructions tools tool_choice parallel_tool_calls text reasoning " +
		"max_output_tokens temperature top_p metadata user safety_identifier include stream store " +
		"previous_response_id truncation stream_options background prompt_cache_key client_metadata"
	itemFields    = "type id role content status call_id name arguments output summary encrypted_content namespace"
	partFields    = "type text refusal image_url file_id detail file_data filename file_url annotations logprobs"
	toolFields    = "type name description parameters strict"
	formatFields  = "type name description schema strict"
	textFields    = "format verbosity"
	reasonFields  = "effort summary"
	choiceFields  = "type name"
	summaryFields = "type text"
	encryptedIncl = "reasoning.encrypted_content"
	logprobsIncl  = "message.output_text.logprobs"
	dialect       = "responses"
)

// The lists above as members.Names, for members.Check and members.Read.
var (
	topLevelNames = members.NewNames(topLevelFields)
	itemNames     = members.NewNames(itemFields)
	partNames     = members.NewNames(partFields)
	toolNames     = members.NewNames(toolFields)
	formatNames   = members.NewNames(formatFields)
	textNames     = members.NewNames(textFields)
	reasonNames   = members.NewNames(reasonFields)
	choiceNames   = members.NewNames(choiceFields)
	summaryNames  = members.NewNames(summaryFields)
)

// Positions in itemFields.
const (
	itemType = iota
	itemID
	itemRole
	itemContent
	itemStatus
	itemCallID
	itemName
	itemArguments
	itemOutput
	itemSummary
	itemEncrypted
	itemNamespace
	itemN
)

// Positions in partFields.
const (
	partType = iota
	partText
	partRefusal
	partImageURL
	partFileID
	partDetail
	partFileData
	partFilename
	partFileURL
	partAnnotations
	partLogprobs
	partN
)

// Positions in toolFields and formatFields (which share their first three names).
const (
	toolType = iota
	toolName
	toolDescription
	toolParameters // schema in formatFields
	toolStrict
	toolN
)

// Positions in textFields, reasonFields, choiceFields and summaryFields.
const (
	textFormat   = 0
	reasonEffort = 0
	choiceType   = 0
	choiceName   = 1
	summaryText  = 1
	twoFieldsN   = 2
)

// Parse parses and validates a Responses request body. Errors are *translate.ParamError
// values naming the offending field with OpenAI's param paths ("input[2].content[0].type").
// In every object it interprets a member named twice, or a known field's name in another
// case, is an error (members.Read): the body may be forwarded as it is to a
// responses backend, and must read the same to every decoder. The returned Request does
// not alias body.
func Parse(body []byte) (*Request, error) { return ParseWithin(body, translate.DefaultMaxInflated) }

// ParseWithin is Parse with the request's Allowance for carried state
// (translate.Allowance): the sealed blocks of its reasoning items and the state of its
// call ids, with those of the items Prepend adds, inflate to at most maxInflated bytes in
// all, else the request is refused (translate.StateTooLarge, naming the field). Parse
// allows translate.DefaultMaxInflated.
func ParseWithin(body []byte, maxInflated int) (*Request, error) {
	return parseBody(body, maxInflated, false)
}

// ParseLazy is ParseWithin with the messages' text left as the client escaped it: the
// text of message contents and of text parts, function_call arguments and
// function_call_output outputs are the contents of their JSON string literals as
// written, in Core.Literals (the Request's Body), which the encoders that are
// translate.LiteralReaders copy without decoding and Decode decodes for any other reader.
// It makes the same checks, with the same errors, as ParseWithin, and after Decode its
// Request is ParseWithin's.
func ParseLazy(body []byte, maxInflated int) (*Request, error) {
	return parseBody(body, maxInflated, true)
}

// Decode decodes the strings of r, a Request ParseLazy read, that it left escaped, and
// clears r.Core.Literals (translate.Request.DecodeLiterals): for a reader of the request
// that is not a translate.LiteralReader (the tool loop, tracing, the response cache). A
// request with no Literals is left as it is.
func Decode(r *Request) { r.Core.DecodeLiterals() }

// parseBody is ParseWithin, or ParseLazy when lazy is set.
func parseBody(body []byte, maxInflated int, lazy bool) (*Request, error) {
	if len(body) == 0 {
		return nil, &translate.ParamError{Message: "the request body is empty: send a JSON object with model and input"}
	}
	if !jsonx.ValidUTF8(jsonx.View(body)) {
		return nil, &translate.ParamError{Code: CodeInvalidUTF8,
			Message: "the request body is not valid UTF-8: send JSON text encoded as UTF-8 (RFC 8259)"}
	}
	return parseOnStack(string(body), maxInflated, lazy)
}

// Stage is the memory a parse works in and needs only while it runs: the parser, the
// request's top-level members, ParseHead's index of tools and the names it saw, some
// 2.5 KB, which a parse without one (the package's functions) takes on its goroutine's
// stack. A server's connection goroutine keeps its stack as large as the deepest call it
// made for as long as it runs (a stream's whole life), so a server parses with a Stage
// (Stage.ParseHeadLazy, Stage.Build), which it can use for the next parse as soon as
// this one returns: nothing a parse returns refers to its Stage. The zero value is
// ready; not safe for concurrent use.
type Stage struct {
	p      parser
	fields [24]members.Member // the top-level members (members.Collect's, or the walk's)
	// The rest is parseHead's: the walk's first n fields, the index of tools, made as the
	// walk reads it (jsonx.IndexValue), the names seen and the question about the model.
	n     int
	tools jsonx.Scanner
	seen  members.Set
	ask   members.ModelAsk
}

// Reset drops what the last parse left in st (the body, its index, the request), so that
// a recycled Stage keeps none of it alive.
func (st *Stage) Reset() { *st = Stage{} }

// start readies st's parser for a parse of s, lazy when lazy is set, and returns it.
// Field by field: a composite literal would be built on the stack, its size in the
// caller's frame, and copied.
func (st *Stage) start(s string, lazy bool) *parser {
	p := &st.p
	*p = parser{}
	p.sc.Reset(s)
	p.lazy = lazy
	return p
}

// newRequest returns an empty Request over the body s with its Core, the two in one
// allocation: every parse makes both, and a Core lives as long as its Request.
func newRequest(s string, maxInflated int) *Request {
	both := new(struct {
		r    Request
		core translate.Request
	})
	both.r = Request{Body: s, Store: true, Core: &both.core, inflate: translate.NewAllowance(maxInflated), maxInflated: maxInflated}
	return &both.r
}

// parseOnStack is parseString without a caller's Stage: its Stage is this function's
// frame. It is a function of its own, never inlined, so that only such a parse takes
// that frame.
//
//go:noinline
func parseOnStack(s string, maxInflated int, lazy bool) (*Request, error) {
	var st Stage
	return st.parseString(s, maxInflated, lazy)
}

// parseString is ParseWithin (lazy: ParseLazy) for s, a non-empty body that is valid
// UTF-8, which the Request keeps as its Body. It works in st.
func (st *Stage) parseString(s string, maxInflated int, lazy bool) (*Request, error) {
	r := newRequest(s, maxInflated)
	p := st.start(s, lazy)
	p.r = r
	root, ok := p.sc.IndexRoot()
	if !ok {
		return nil, &translate.ParamError{Message: "we could not parse the JSON body of your request: it is not valid JSON"}
	}
	if root.Kind != jsonx.Object {
		return nil, &translate.ParamError{Message: "the request body must be a JSON object"}
	}
	// The names are checked before any value is read, so a duplicate is reported first.
	fields, err := members.Collect(&p.sc, root, "", topLevelNames, st.fields[:0])
	if err != nil {
		return nil, err
	}
	// tools first: a function_call input item of a namespace tool's function takes the
	// name the tools give it upstream (see flatten).
	for _, f := range fields {
		if f.Name == "tools" {
			if err := p.field(f.Name, f.V); err != nil {
				return nil, err
			}
		}
	}
	for _, f := range fields {
		if f.Name == "tools" {
			continue
		}
		if err := p.field(f.Name, f.V); err != nil {
			return nil, err
		}
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
	r.echo = p.appendEcho(make([]byte, 0, p.echoSize()))
	r.build()
	if lazy {
		r.Core.Literals = s
	}
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
		if p.nTools == 0 {
			return translate.Errorf("tool_choice", "tool_choice is required but no tools were given")
		}
	}
	return nil
}

// Prepend puts the items of earlier responses (a JSON array: the stored input and output
// items of the response named by previous_response_id) before this request's input.
// Their carried state is taken from what the request's Allowance has left (ParseWithin).
func (r *Request) Prepend(items string) error {
	p := parser{r: r, sc: jsonx.NewScanner(items)}
	arr, _ := p.sc.IndexRoot() // not an array when not JSON: items reports it
	msgs, err := p.items(arr, func() string { return "previous_response_id" }, 0)
	if pe, ok := err.(*translate.ParamError); ok && pe.Code == translate.CodeStateTooLarge {
		pe.Param = "previous_response_id" // the stored items' places mean nothing to the client
	}
	if err != nil {
		return err
	}
	r.history = msgs
	r.build()
	return nil
}

// Translatable returns nil when Core can be served on the translated path: the request
// uses nothing only a responses backend serves (Untranslatable; BuiltinTool unless every
// backend that may serve it is one, responsesOnly), and the conversation (earlier items
// included, see Prepend) has a message.
func (r *Request) Translatable(responsesOnly bool) error {
	if r.Untranslatable != nil {
		return r.Untranslatable
	}
	if r.BuiltinTool != nil && !responsesOnly {
		return r.BuiltinTool
	}
	for _, m := range r.Core.Messages {
		if m.Role != translate.RoleSystem && m.Role != translate.RoleDeveloper {
			return nil
		}
	}
	return translate.Errorf("input", "input has no message to answer: send at least one message or function_call_output item")
}

// build sets Core.Messages and Core.Body from the parts read. Without earlier items
// (Prepend) Core.Messages is the input's own array (lead), not a copy of it.
func (r *Request) build() {
	c := r.Core
	switch {
	case len(r.history) == 0 && r.lead != nil && r.instructions != "":
		r.lead[0] = r.system()
		c.Messages = r.lead
	case len(r.history) == 0 && r.lead != nil:
		c.Messages = r.current
	default:
		c.Messages = make([]translate.Message, 0, 1+len(r.history)+len(r.current))
		if r.instructions != "" {
			c.Messages = append(c.Messages, r.system())
		}
		c.Messages = append(c.Messages, r.history...)
		c.Messages = append(c.Messages, r.current...)
	}
	// The body is written once and never changed: a view of it is its string.
	c.Body, c.Edited = jsonx.View(appendChatBody(make([]byte, 0, 256), c, r.promptCacheKey)), true
}

// system is the instructions as the conversation's system message.
func (r *Request) system() translate.Message {
	return translate.Message{Role: translate.RoleSystem, Content: []translate.Part{{Type: translate.PartText, Text: r.instructions}}}
}

// parser reads the fields of one request.
type parser struct {
	r  *Request
	sc jsonx.Scanner
	// partSlab and calls hold the messages' content parts and tool calls, a few allocations
	// for the whole request.
	partSlab slab.Slab[translate.Part]
	calls    slab.Slab[translate.ToolCall]
	hasInput bool
	// Raw values echoed in the Response object; "" when unset.
	tools, toolChoice, text, reasoning, metadata, truncation string
	user, safetyID                                           string
	parallel                                                 *bool
	toolsV                                                   jsonx.Value // tools, for the echo
	nTools                                                   int         // elements of tools
	pending                                                  []pendingTool
	// toolsSc, when its input is set, is the scanner toolsV comes from (toolsOver);
	// otherwise it is sc.
	toolsSc jsonx.Scanner
	// lazy leaves the messages' text as written (ParseLazy): the members of items and
	// content parts that hold it (itemLiterals, partLiterals) are read without decoding.
	lazy bool
	// turns, when set, is where ParseHead's first pass builds the input items' messages
	// as it checks them (a request that will be translated).
	turns *turns
}

// The members of an item and of a content part that ParseLazy leaves as written: a
// message's string content, a function call's arguments and a string output, a text
// part's text. Everything else the parser compares or keeps (types, roles, ids, names,
// refusals, summaries) is decoded.
const (
	itemLiterals = 1<<itemContent | 1<<itemArguments | 1<<itemOutput
	partLiterals = 1 << partText
)

// read is members.Read of obj, the members named in lit (itemLiterals, partLiterals)
// left as written when the parse is lazy.
func (p *parser) read(obj jsonx.Value, base func() string, known members.Names, vals []jsonx.Value, lit uint64) error {
	if !p.lazy {
		lit = 0
	}
	return members.ReadRaw(&p.sc, obj, base, known, vals, lit)
}

// untranslatableErr records the first part of the request a translating backend cannot serve.
func (p *parser) untranslatableErr(param, format string, args ...any) {
	if p.r.Untranslatable == nil {
		p.r.Untranslatable = translate.Errorf(param, format, args...)
	}
}

// field reads the top-level member name, whose value is v.
func (p *parser) field(name string, v jsonx.Value) error {
	r, c := p.r, p.r.Core
	if v.Kind == jsonx.Null {
		if name == "model" || name == "input" {
			return translate.Errorf(name, "%s is required", name)
		}
		return nil // OpenAI treats an explicit null as "not set"
	}
	switch name {
	case "model":
		r.model = translate.Span{Start: v.At, End: v.At + len(v.Raw)}
		return str(v, name, true, &c.Model)
	case "previous_response_id":
		return str(v, name, true, &r.PreviousResponseID)
	case "input":
		return p.input(v)
	case "instructions":
		return str(v, name, false, &r.instructions)
	case "prompt_cache_key":
		return str(v, name, false, &r.promptCacheKey)
	case "stream":
		return boolean(v, name, &c.Stream)
	case "store":
		return boolean(v, name, &r.Store)
	case "include":
		return p.include(v)
	case "tools":
		if v.Kind != jsonx.Array {
			return translate.Errorf("tools", "must be an array")
		}
		p.tools, p.toolsV = v.Raw, v
		return p.toolList(v)
	case "tool_choice":
		p.toolChoice = v.Raw
		return p.choice(v)
	case "parallel_tool_calls":
		var b bool
		if err := boolean(v, name, &b); err != nil {
			return err
		}
		c.ParallelToolCalls, p.parallel = &b, &b
	case "text":
		return p.textField(v)
	case "reasoning":
		return p.reasoningField(v)
	case "max_output_tokens":
		n := v.Int()
		if v.Kind != jsonx.Number || float64(n) != v.Float() || n < 1 || n > 1<<31 {
			return translate.Errorf(name, "must be a positive integer")
		}
		c.MaxTokens, c.MaxTokensParam = int(n), name
	case "temperature":
		return number(v, name, 2, &c.Temperature)
	case "top_p":
		return number(v, name, 1, &c.TopP)
	case "metadata":
		if v.Kind != jsonx.Object {
			return translate.Errorf("metadata", "must be an object of strings")
		}
		// The Response object echoes metadata and the gateway stores it; it is never sent
		// upstream (on chat completions it would mean something else).
		p.metadata = v.Raw
	case "user", "safety_identifier":
		return p.userField(name, v)
	case "truncation", "background":
		return p.unsupported(name, v)
	case "stream_options", "client_metadata":
		// client_metadata is Codex CLI's (not in OpenAI's published API): ids of its
		// installation, session and turn for OpenAI's side. Like metadata it is the
		// client's bookkeeping, never sent to a translated upstream; it is not echoed
		// (OpenAI's Response has no such field).
		if v.Kind != jsonx.Object {
			return translate.Errorf(name, "must be an object")
		}
	default:
		c.Extra = append(c.Extra, translate.Field{Name: name, Raw: v.Raw})
	}
	return nil
}

// input reads input: a string (one user message) or an array of input items.
func (p *parser) input(v jsonx.Value) error {
	r := p.r
	p.hasInput = true
	switch v.Kind {
	case jsonx.String:
		r.current = []translate.Message{{Role: translate.RoleUser, Content: []translate.Part{{Type: translate.PartText, Text: v.Str}}}}
		r.Input = string(append(jsonx.AppendString([]byte(`[{"type":"message","role":"user","content":`), v.Str), "}]"...))
	case jsonx.Array:
		msgs, err := p.items(v, func() string { return "input" }, 1)
		if err != nil {
			return err
		}
		r.lead, r.current = msgs, msgs[1:]
		r.Input = v.Raw
	default:
		return translate.Errorf("input", "must be a string or an array of input items")
	}
	return nil
}

// include reads include, an array of strings: the ones the gateway knows set their
// options.
func (p *parser) include(v jsonx.Value) error {
	if v.Kind != jsonx.Array {
		return translate.Errorf("include", "must be an array of strings")
	}
	var err error
	i := 0
	p.sc.Each(v, func(_ string, e jsonx.Value) bool {
		if e.Kind != jsonx.String {
			err = translate.Errorf(index("include", i), "must be a string")
			return false
		}
		switch e.Str {
		case encryptedIncl:
			p.r.EncryptedReasoning = true
		case logprobsIncl:
			// No translating backend serves logprobs to a Responses client: the
			// caller's unsupported-parameter policy applies, naming the element.
			p.r.Core.Extra = append(p.r.Core.Extra, translate.Field{Name: index("include", i), Raw: e.Raw})
		}
		i++
		return true
	})
	return err
}

// settings reads the object v of the top-level member name, its members names into f
// (members.Read), and keeps its text for the echo in *raw.
func (p *parser) settings(name string, v jsonx.Value, names members.Names, f []jsonx.Value, raw *string) error {
	if err := members.Read(&p.sc, v, func() string { return name }, names, f); err != nil {
		return err
	}
	if v.Kind != jsonx.Object {
		return translate.Errorf(name, "must be an object")
	}
	*raw = v.Raw
	return nil
}

// textField reads text, whose format sets the response format.
func (p *parser) textField(v jsonx.Value) error {
	var f [twoFieldsN]jsonx.Value
	if err := p.settings("text", v, textNames, f[:], &p.text); err != nil {
		return err
	}
	return p.format(f[textFormat])
}

// reasoningField reads reasoning, whose effort sets the reasoning effort.
func (p *parser) reasoningField(v jsonx.Value) error {
	var f [twoFieldsN]jsonx.Value
	if err := p.settings("reasoning", v, reasonNames, f[:], &p.reasoning); err != nil {
		return err
	}
	if e := f[reasonEffort]; e.Exists() && e.Kind != jsonx.Null {
		switch e.Str {
		case "none", "minimal", "low", "medium", "high", "xhigh":
			p.r.Core.ReasoningEffort = e.Str
		default:
			return translate.Errorf("reasoning.effort", "must be one of none, minimal, low, medium, high, xhigh")
		}
	}
	return nil
}

// userField reads user or safety_identifier (name), echoed; the core's User is the
// safety_identifier when there is one, else the user.
func (p *parser) userField(name string, v jsonx.Value) error {
	if v.Kind != jsonx.String {
		return translate.Errorf(name, "must be a string")
	}
	if name == "user" {
		p.user = v.Str
	} else {
		p.safetyID = v.Str
	}
	if c := p.r.Core; c.User == "" || name == "safety_identifier" {
		c.User = v.Str
	}
	return nil
}

// unsupported reads truncation or background (name): a value no translating backend
// honours (truncation auto, background true) goes to the core's Extra, for the caller's
// unsupported-parameter policy.
func (p *parser) unsupported(name string, v jsonx.Value) error {
	var set bool
	if name == "truncation" {
		if v.Kind != jsonx.String || (v.Str != "auto" && v.Str != "disabled") {
			return translate.Errorf(name, "must be auto or disabled")
		}
		p.truncation, set = v.Raw, v.Str == "auto"
	} else if err := boolean(v, name, &set); err != nil {
		return err
	}
	if set {
		p.r.Core.Extra = append(p.r.Core.Extra, translate.Field{Name: name, Raw: v.Raw})
	}
	return nil
}

// number reads a number from 0 to hi into a new *dst.
func number(v jsonx.Value, name string, hi float64, dst **float64) error {
	if v.Kind != jsonx.Number {
		return translate.Errorf(name, "must be a number")
	}
	f := v.Float()
	if f < 0 || f > hi {
		return translate.Errorf(name, "must be between 0 and %g", hi)
	}
	*dst = &f
	return nil
}

// str reads a string (nonEmpty: one that is not "") into *dst.
func str(v jsonx.Value, param string, nonEmpty bool, dst *string) error {
	if v.Kind != jsonx.String || nonEmpty && v.Str == "" {
		if nonEmpty {
			return translate.Errorf(param, "must be a non-empty string")
		}
		return translate.Errorf(param, "must be a string")
	}
	*dst = v.Str
	return nil
}

// boolean reads a boolean into *dst.
func boolean(v jsonx.Value, param string, dst *bool) error {
	if !v.IsBool() {
		return translate.Errorf(param, "must be a boolean")
	}
	*dst = v.Kind == jsonx.True
	return nil
}

// toolList reads tools: function tools into Core.Tools, the functions of namespace tools
// too under their flat names (see flatten); a built-in tool is served by a responses
// backend only.
func (p *parser) toolList(v jsonx.Value) error {
	n := 0
	p.sc.Each(v, func(string, jsonx.Value) bool { n++; return true })
	p.r.Core.Tools = make([]translate.Tool, 0, n)
	var err error
	i := 0
	p.sc.Each(v, func(_ string, t jsonx.Value) bool {
		at := i
		param := func() string { return index("tools", at) }
		i++
		p.nTools = i
		if t.Kind == jsonx.Object && p.sc.Get(t, "type").Str == "namespace" {
			err = p.namespace(t, param)
			return err == nil
		}
		var tool translate.Tool
		var ok bool
		if tool, ok, err = p.functionTool(t, param); err != nil {
			return false
		}
		if ok {
			// The param is built only for an error: every tool would pay its allocations.
			if translate.CheckToolName(p.r.Core.Tools, tool.Name, "") != nil {
				err = translate.CheckToolName(p.r.Core.Tools, tool.Name, param()+".name")
				return false
			}
		} else if p.r.BuiltinTool == nil {
			p.r.BuiltinTool = translate.Errorf(param()+".type", "the built-in tool %q is served only by a responses backend; this model's backend runs function tools only",
				clip(tool.Builtin.Type))
		}
		p.r.Core.Tools = append(p.r.Core.Tools, tool)
		return true
	})
	if err != nil {
		return err
	}
	return p.flatten()
}

// functionTool reads the tool t (at param): ok is false for a tool of another type (a
// built-in tool), returned as Tool.Builtin for the caller to place.
func (p *parser) functionTool(t jsonx.Value, param func() string) (tool translate.Tool, ok bool, err error) {
	var f [toolN]jsonx.Value
	if err = members.Read(&p.sc, t, param, toolNames, f[:]); err != nil {
		return tool, false, err
	}
	if t.Kind != jsonx.Object {
		return tool, false, translate.Errorf(param(), "must be an object")
	}
	typ := f[toolType]
	if typ.Kind != jsonx.String {
		return tool, false, translate.Errorf(param()+".type", "is required")
	}
	if typ.Str != "function" {
		return translate.Tool{Builtin: &translate.Item{Dialect: translate.DialectResponses, Type: typ.Str, Raw: t.Raw}}, false, nil
	}
	name := f[toolName]
	if name.Kind != jsonx.String || name.Str == "" {
		return tool, false, translate.Errorf(param()+".name", "is required")
	}
	tool = translate.Tool{Name: name.Str, Description: f[toolDescription].Str}
	if ps := f[toolParameters]; ps.Kind == jsonx.Object {
		tool.Parameters = ps.Raw
	} else if ps.Exists() && ps.Kind != jsonx.Null {
		return tool, false, translate.Errorf(param()+".parameters", "must be a JSON Schema object")
	}
	if st := f[toolStrict]; st.IsBool() {
		b := st.Kind == jsonx.True
		tool.Strict = &b
	}
	return tool, true, nil
}

func (p *parser) choice(v jsonx.Value) error {
	c := p.r.Core
	if v.Kind == jsonx.String {
		switch v.Str {
		case "auto", "none", "required":
			c.ToolChoice.Mode = v.Str
			return nil
		}
		return translate.Errorf("tool_choice", "must be auto, none, required or an object")
	}
	var f [twoFieldsN]jsonx.Value
	if err := members.Read(&p.sc, v, func() string { return "tool_choice" }, choiceNames, f[:]); err != nil {
		return err
	}
	if v.Kind != jsonx.Object {
		return translate.Errorf("tool_choice", "must be auto, none, required or an object")
	}
	switch typ := f[choiceType].Str; typ {
	case "function":
		name := f[choiceName]
		if name.Kind != jsonx.String || name.Str == "" {
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

func (p *parser) format(v jsonx.Value) error {
	if !v.Exists() || v.Kind == jsonx.Null {
		return nil
	}
	var f [toolN]jsonx.Value
	if err := members.Read(&p.sc, v, func() string { return "text.format" }, formatNames, f[:]); err != nil {
		return err
	}
	rf := &p.r.Core.ResponseFormat
	switch typ := f[toolType].Str; typ {
	case "text", "json_object":
		rf.Type = typ
	case "json_schema":
		rf.Type = typ
		name := f[toolName]
		if name.Kind != jsonx.String || name.Str == "" {
			return translate.Errorf("text.format.name", "is required")
		}
		rf.Name, rf.Description = name.Str, f[toolDescription].Str
		s := f[toolParameters]
		if s.Kind != jsonx.Object {
			return translate.Errorf("text.format.schema", "must be a JSON Schema object")
		}
		rf.Schema = s.Raw
		if st := f[toolStrict]; st.IsBool() {
			b := st.Kind == jsonx.True
			rf.Strict = &b
		}
	default:
		return translate.Errorf("text.format.type", "must be text, json_object or json_schema")
	}
	return nil
}

// items reads an array of input items into core messages. Reasoning items' summaries go to
// the next assistant message's Reasoning, and the blocks Agate sealed in their
// encrypted_content (see Encoder) to its ThinkingBlocks, where each upstream encoder
// takes its own dialect's (blocks with no assistant item after them, such as the state of a
// Gemini turn without calls, which comes after its message, go to the assistant message
// before them); other encrypted content (another server's) is ignored. Function calls
// join the assistant message before them.
func (p *parser) items(arr jsonx.Value, base func() string, lead int) ([]translate.Message, error) {
	if arr.Kind != jsonx.Array {
		return nil, translate.Errorf(base(), "must be an array of items")
	}
	n := lead
	p.sc.Each(arr, func(string, jsonx.Value) bool { n++; return true })
	t := turns{msgs: make([]translate.Message, lead, n), open: -1, last: -1}
	var err error
	i := 0
	p.sc.Each(arr, func(_ string, it jsonx.Value) bool {
		at := i
		i++
		err = p.item(&t, it, func() string { return index(base(), at) })
		return err == nil
	})
	t.closeCalls(&p.calls)
	t.endTurn()
	return t.msgs, err
}

// turns collects the messages of an items array (see items).
type turns struct {
	msgs      []translate.Message
	reasoning strings.Builder           // summaries for the next assistant message
	blocks    []translate.ThinkingBlock // sealed blocks for the next assistant message
	// open is the index in msgs of the assistant message function calls join, or -1; its
	// calls are the current run of the parser's calls until closeCalls. last is the latest
	// assistant message's index, -1 once another message follows it. (turns holds no
	// pointer into the parser: the closure items hands jsonx's Each would move the parser
	// to the heap with it.)
	open, last int
}

// closeCalls gives the open assistant message its function calls, the current run of
// calls.
func (t *turns) closeCalls(calls *slab.Slab[translate.ToolCall]) {
	if calls := calls.Run(); t.open >= 0 && calls != nil {
		t.msgs[t.open].ToolCalls = calls
	}
	t.open = -1
}

// assistant returns the open assistant message, opened if there is none, with the
// reasoning and blocks collected since the last.
func (t *turns) assistant() *translate.Message {
	if t.open < 0 {
		t.msgs = append(t.msgs, translate.Message{Role: translate.RoleAssistant})
		t.open = len(t.msgs) - 1
	}
	t.last = t.open
	m := &t.msgs[t.open]
	if t.reasoning.Len() > 0 {
		m.Reasoning += t.reasoning.String()
		t.reasoning.Reset()
	}
	m.ThinkingBlocks = append(m.ThinkingBlocks, t.blocks...)
	t.blocks = t.blocks[:0]
	return m
}

// endTurn gives blocks no assistant item took to the assistant message before them.
func (t *turns) endTurn() {
	if len(t.blocks) > 0 && t.last >= 0 {
		t.msgs[t.last].ThinkingBlocks = append(t.msgs[t.last].ThinkingBlocks, t.blocks...)
	}
	t.blocks, t.last = t.blocks[:0], -1
}

// item reads the input item it, whose param path param returns, into t.
func (p *parser) item(t *turns, it jsonx.Value, param func() string) error {
	var f [itemN]jsonx.Value
	if err := p.read(it, param, itemNames, f[:], itemLiterals); err != nil {
		return err
	}
	if it.Kind != jsonx.Object {
		return translate.Errorf(param(), "must be an object")
	}
	typ := f[itemType].Str
	if typ == "" && f[itemRole].Exists() {
		typ = "message"
	}
	switch typ {
	case "message":
		m, err := p.message(&f, param)
		if err != nil {
			return err
		}
		t.closeCalls(&p.calls)
		if m.Role == translate.RoleAssistant {
			a := t.assistant()
			a.Content, a.Refusal = m.Content, m.Refusal
		} else {
			t.endTurn()
			t.msgs = append(t.msgs, m)
		}
	case "function_call":
		return p.functionCall(t, &f, param)
	case "function_call_output":
		return p.functionCallOutput(t, &f, param)
	case "reasoning":
		return p.reasoningItem(t, &f, param)
	case "web_search_call", "file_search_call", "code_interpreter_call", "image_generation_call", "mcp_call", "mcp_list_tools":
		// A built-in tool's call the upstream ran itself (an output item of an
		// earlier response, as the Encoder passes them on): the answer after it
		// says what it found, so a translating backend does without it.
	case "":
		return translate.Errorf(param()+".type", "is required")
	default:
		p.untranslatableErr(param()+".type", "the input item type %q is served only by a responses backend", clip(typ))
	}
	return nil
}

// functionCall reads a function_call item, whose members are f: a call of the open
// assistant message.
func (p *parser) functionCall(t *turns, f *[itemN]jsonx.Value, param func() string) error {
	call := translate.ToolCall{}
	for _, g := range [...]struct {
		name string
		at   int
		dst  *string
	}{{"call_id", itemCallID, &call.ID}, {"name", itemName, &call.Name}, {"arguments", itemArguments, &call.Arguments}} {
		v := f[g.at]
		if v.Kind != jsonx.String || (v.Str == "" && g.at != itemArguments) {
			return translate.Errorf(param()+"."+g.name, "must be a non-empty string")
		}
		*g.dst = v.Str
	}
	switch ns := f[itemNamespace]; ns.Kind {
	case jsonx.String:
		if ns.Str == "" {
			return translate.Errorf(param()+".namespace", "must be a non-empty string")
		}
		call.Name = p.r.flat.flatName(ns.Str, call.Name)
	case jsonx.Missing, jsonx.Null:
	default:
		return translate.Errorf(param()+".namespace", "must be a string")
	}
	if !p.r.Core.OpenCarried(call.ID, &p.r.inflate) {
		return translate.StateTooLarge(param()+".call_id", p.r.maxInflated)
	}
	t.assistant()
	p.calls.Push(call)
	return nil
}

// functionCallOutput reads a function_call_output item, whose members are f: a tool
// message, which ends the assistant's turn.
func (p *parser) functionCallOutput(t *turns, f *[itemN]jsonx.Value, param func() string) error {
	id := f[itemCallID]
	if id.Kind != jsonx.String || id.Str == "" {
		return translate.Errorf(param()+".call_id", "must be a non-empty string")
	}
	t.endTurn()
	m := translate.Message{Role: translate.RoleTool, ToolCallID: id.Str}
	switch out := f[itemOutput]; out.Kind {
	case jsonx.String:
		p.partSlab.Push(translate.Part{Type: translate.PartText, Text: out.Str})
		m.Content = p.partSlab.Run()
	case jsonx.Array:
		var err error
		if m.Content, err = p.parts(out, func() string { return param() + ".output" }, translate.RoleTool); err != nil {
			return err
		}
	default:
		return translate.Errorf(param()+".output", "must be a string or an array of content parts")
	}
	t.closeCalls(&p.calls)
	t.msgs = append(t.msgs, m)
	return nil
}

// reasoningItem reads a reasoning item, whose members are f: its summaries and the blocks
// Agate sealed in its encrypted_content go to the assistant turn that follows.
func (p *parser) reasoningItem(t *turns, f *[itemN]jsonx.Value, param func() string) error {
	s := f[itemSummary]
	if s.Exists() && s.Kind != jsonx.Array {
		return translate.Errorf(param()+".summary", "must be an array")
	}
	var err error
	j := 0
	p.sc.Each(s, func(_ string, part jsonx.Value) bool {
		sat := j
		pp := func() string { return index(param()+".summary", sat) }
		j++
		var sf [twoFieldsN]jsonx.Value
		if err = members.Read(&p.sc, part, pp, summaryNames, sf[:]); err != nil {
			return false
		}
		if st := sf[summaryText]; st.Kind == jsonx.String {
			if t.reasoning.Len() > 0 {
				t.reasoning.WriteString("\n\n")
			}
			t.reasoning.WriteString(st.Str)
		}
		return true
	})
	if err != nil {
		return err
	}
	switch enc := f[itemEncrypted]; enc.Kind {
	case jsonx.String:
		b, ok, over := p.r.inflate.OpenBlock(enc.Str)
		if over {
			return translate.StateTooLarge(param()+".encrypted_content", p.r.maxInflated)
		}
		if ok {
			t.blocks = append(t.blocks, b)
			p.r.Sealed = true
		}
	case jsonx.Missing, jsonx.Null:
	default:
		return translate.Errorf(param()+".encrypted_content", "must be a string")
	}
	t.closeCalls(&p.calls) // the reasoning belongs to the assistant turn that follows
	return nil
}

// message reads a message item, given its members.
func (p *parser) message(f *[itemN]jsonx.Value, param func() string) (translate.Message, error) {
	var m translate.Message
	switch role := f[itemRole].Str; role {
	case "user", "assistant", "system", "developer":
		m.Role = role
	default:
		return m, translate.Errorf(param()+".role", "must be user, assistant, system or developer")
	}
	switch content := f[itemContent]; content.Kind {
	case jsonx.String:
		p.partSlab.Push(translate.Part{Type: translate.PartText, Text: content.Str})
		m.Content = p.partSlab.Run()
	case jsonx.Array:
		parts, err := p.parts(content, func() string { return param() + ".content" }, m.Role)
		if err != nil {
			return m, err
		}
		m.Content = parts[:0] // parts is this message's own: filter it in place
		for _, pt := range parts {
			if pt.Type == translate.PartRefusal {
				m.Refusal += pt.Text
			} else {
				m.Content = append(m.Content, pt)
			}
		}
		if len(m.Content) == 0 {
			m.Content = nil
		}
	default:
		return m, translate.Errorf(param()+".content", "must be a string or an array of content parts")
	}
	return m, nil
}

// parts reads content parts; role says which part types are allowed.
func (p *parser) parts(arr jsonx.Value, base func() string, role string) ([]translate.Part, error) {
	var err error
	i := 0
	p.sc.Each(arr, func(_ string, v jsonx.Value) bool {
		at := i
		param := func() string { return index(base(), at) }
		i++
		var f [partN]jsonx.Value
		if err = p.read(v, param, partNames, f[:], partLiterals); err != nil {
			return false
		}
		typ := f[partType].Str
		assistant := role == translate.RoleAssistant
		switch {
		case typ == "output_text" && assistant, typ == "input_text" && !assistant:
			t := f[partText]
			if t.Kind != jsonx.String {
				err = translate.Errorf(param()+".text", "must be a string")
				return false
			}
			p.partSlab.Push(translate.Part{Type: translate.PartText, Text: t.Str})
		case typ == "refusal" && assistant:
			p.partSlab.Push(translate.Part{Type: translate.PartRefusal, Text: f[partRefusal].Str})
		case typ == "input_image" && !assistant:
			u := f[partImageURL]
			if u.Kind != jsonx.String || u.Str == "" {
				p.untranslatableErr(param(), "an input_image without image_url (a file_id) is served only by a responses backend")
				return true
			}
			p.partSlab.Push(translate.Part{Type: translate.PartImage, Media: &translate.Media{URL: u.Str, Detail: f[partDetail].Str}})
		case typ == "input_file" && !assistant:
			if f[partFileURL].Exists() {
				p.untranslatableErr(param()+".file_url", "an input_file given by file_url is served only by a responses backend")
				return true
			}
			part := translate.Part{Type: translate.PartFile, Media: &translate.Media{FileData: f[partFileData].Str, FileID: f[partFileID].Str,
				Filename: f[partFilename].Str}}
			if part.Media.FileData == "" && part.Media.FileID == "" {
				err = translate.Errorf(param(), "an input_file needs file_data or file_id")
				return false
			}
			p.partSlab.Push(part)
		case typ == "":
			err = translate.Errorf(param()+".type", "is required")
			return false
		default:
			err = translate.Errorf(param()+".type", "the content part type %q is not allowed in a %s message", clip(typ), role)
			return false
		}
		return true
	})
	out := p.partSlab.Run()
	if err != nil {
		return nil, err
	}
	return out, nil
}

// echoSize is about the length of what appendEcho writes, so that it allocates once.
func (p *parser) echoSize() int {
	return 400 + 2*len(p.r.instructions) + len(p.metadata) + len(p.reasoning) + len(p.text) +
		len(p.toolChoice) + 2*len(p.tools) + len(p.user) + len(p.safetyID)
}

// echoOf returns r's echo: ParseWithin's (ParseLazy's when r is ParseHeadLazy's), made
// from r.Body for a Request ParseHead returned incomplete (echoLater), whose Body the
// full parse accepts (FuzzParseHead); should it not, the echo is empty.
func (r *Request) echoOf() []byte {
	if !r.echoLater {
		return r.echo
	}
	full, err := parseOnStack(r.Body, r.maxInflated, r.lazy)
	if err != nil {
		return nil
	}
	return full.echo
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
	if r.promptCacheKey != "" {
		dst = append(dst, `,"prompt_cache_key":`...)
		dst = jsonx.AppendString(dst, r.promptCacheKey)
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
	sc := &p.sc
	if p.toolsSc.Input() != "" {
		sc = &p.toolsSc
	}
	sc.Each(p.toolsV, func(_ string, t jsonx.Value) bool {
		if i > 0 {
			dst = append(dst, ',')
		}
		i++
		if sc.Get(t, "type").Str == "namespace" {
			// Its functions follow the other tools in Core.Tools (see flatten).
			dst = append(dst, t.Raw...)
			return true
		}
		tool := &p.r.Core.Tools[fn] // one core tool per other element, in order
		fn++
		if tool.Builtin != nil {
			dst = append(dst, t.Raw...)
			return true
		}
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
// sets it). cacheKey is the prompt_cache_key, "" for none.
func appendChatBody(dst []byte, c *translate.Request, cacheKey string) []byte {
	dst = append(dst, `{"model":`...)
	dst = jsonx.AppendString(dst, c.Model)
	if c.ParallelToolCalls != nil && c.Functions() > 0 {
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
	if cacheKey != "" {
		dst = append(dst, `,"prompt_cache_key":`...)
		dst = jsonx.AppendString(dst, cacheKey)
	}
	if c.Stream {
		dst = append(dst, `,"stream":true`...)
	}
	return append(dst, '}')
}
