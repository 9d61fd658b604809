package openaichat

import (
	"math"
	"strconv"
	"strings"

	"github.com/agate-gateway/agate/internal/jsonx"
	"github.com/agate-gateway/agate/translate"
	"github.com/agate-gateway/agate/translate/internal/slab"
)

// CodeInvalidUTF8 is the ParamError code of a request body that is not UTF-8.
const CodeInvalidUTF8 = translate.CodeInvalidUTF8

// ParseRequest parses and validates an OpenAI chat completions request body. Errors are
// *ParamError values naming the offending field; a body that is not UTF-8 (Code
// CodeInvalidUTF8), not valid JSON (RFC 8259) or not a JSON object has Param "". The body
// is copied once; the returned Request does not alias the caller's buffer.
//
// In every object it interprets (the request, its messages, content parts, tools, tool
// calls, tool_choice, response_format, stream_options, metadata and thinking blocks), a
// member name given twice, or a known field's name in another case ("MODEL"), is an error
// with Code CodeDuplicateKey or CodeKeyCase whose Param names the key: such bodies read
// differently to different JSON decoders, and the OpenAI passthrough forwards the body.
func ParseRequest(body []byte) (*translate.Request, error) {
	return parseRequest(string(body), false)
}

// ParseRequestLazy is ParseRequest, with the same validation and the same errors for
// every body, except that the message strings no check reads (text content, refusals,
// reasoning_content and tool call arguments) keep their JSON escapes: a string with a
// backslash in one of those fields is its literal's contents as written. That is all a
// caller forwarding the body as it is (the OpenAI passthrough) needs, and it skips their
// decoding. A caller that reads those strings must call Decode first.
func ParseRequestLazy(body []byte) (*translate.Request, error) {
	return parseRequest(string(body), true)
}

// ParseRequestLazyString is ParseRequestLazy for a body held as a string, which it does
// not copy: the request's strings alias body. A caller passing a view of a buffer
// (jsonx.View) must leave the buffer unchanged for as long as anything uses the request.
// With a non-nil scratch the request and its message and part arrays are built in the
// scratch's memory (see Scratch); with a non-nil stage the parse works in the stage's
// memory, not on its goroutine's stack (see Stage).
func ParseRequestLazyString(body string, scratch *Scratch, stage *Stage) (*translate.Request, error) {
	return ParseRequestLazyStringWithin(body, scratch, stage, translate.DefaultMaxInflated)
}

// ParseRequestLazyStringWithin is ParseRequestLazyString with the request's Allowance
// for carried state (translate.Allowance): the compressed state of its tool call ids
// inflates to at most maxInflated bytes in all, else the request is refused
// (translate.StateTooLarge, naming the id). The other parse functions allow
// translate.DefaultMaxInflated.
func ParseRequestLazyStringWithin(body string, scratch *Scratch, stage *Stage, maxInflated int) (*translate.Request, error) {
	if stage == nil {
		return parseOnStack(body, scratch, maxInflated)
	}
	return stage.p.parseWithin(body, true, scratch, maxInflated)
}

// parseOnStack is a parse without a Stage: its parser, staging arrays included, is this
// function's frame. It is a function of its own, never inlined, so that the frame is
// taken only by such a parse: a local parser in ParseRequestLazyStringWithin would put
// it (7.7 KB) on the stack of every parse, a Stage's too.
//
//go:noinline
func parseOnStack(body string, scratch *Scratch, maxInflated int) (*translate.Request, error) {
	var p parser
	return p.parseWithin(body, true, scratch, maxInflated)
}

// Stage is the memory a parse works in and needs only while it runs: some 15 KB of
// staging arrays, which a parse without one takes on its goroutine's stack. A server's
// connection goroutine keeps its stack as large as the deepest call it made for as long
// as it runs (a stream's whole life), so a server parses with a Stage, which it can use
// for the next parse as soon as this one returns. Not safe for concurrent use.
type Stage struct{ p parser }

// Reset drops what a Stage holds beyond its staging arrays' own size. Their entries may
// keep the last parse's strings alive until the next parse writes over them.
func (st *Stage) Reset() {
	if cap(st.p.msgs.spill) > maxKeptMessages || cap(st.p.parts.spill) > maxKeptMessages ||
		st.p.index.Cap() > maxKeptIndex {
		*st = Stage{}
	}
}

// Scratch is memory a parse reuses from one request to the next: the Request itself and
// its message and content-part arrays. A request parsed into a Scratch lives in it, so
// Reset it only once nothing uses that request (nor a message or part of it) any more.
// Not safe for concurrent use.
type Scratch struct {
	req   translate.Request
	msgs  []translate.Message
	parts []translate.Part
	// decoded's arena holds the strings DecodeInto decoded.
	decoded jsonx.Scanner
	// calls is the memory of the messages' tool calls (parser.calls), tools that of the
	// request's tool list: reused by the next request when the Scratch is Reset.
	calls []translate.ToolCall
	tools []translate.Tool
	// floats holds the request's sampling parameters (parser.float), so that reading one
	// allocates nothing.
	floats [4]float64
}

// maxKeptMessages bounds the message and part arrays a Scratch keeps for reuse, and
// maxKeptDecoded the memory of its decoded strings.
const (
	maxKeptMessages = 1024
	maxKeptDecoded  = 256 << 10
)

// maxKeptIndex bounds the words of the first pass's string index a Stage keeps for reuse:
// 256 KB, a body of 1 MB (two words a 64-byte block).
const maxKeptIndex = 1 << 15

// Reset drops every reference the last request left, keeping the arrays' memory (up to
// maxKeptMessages entries each) for the next.
func (sc *Scratch) Reset() {
	sc.req = translate.Request{}
	clear(sc.msgs) // the entries the last request used (take)
	clear(sc.parts)
	if cap(sc.msgs) > maxKeptMessages {
		sc.msgs = nil
	}
	if cap(sc.parts) > maxKeptMessages {
		sc.parts = nil
	}
	sc.msgs, sc.parts = sc.msgs[:0], sc.parts[:0]
	// The whole capacity: the request's owner may have appended to its tool list.
	clear(sc.calls[:cap(sc.calls)])
	clear(sc.tools[:cap(sc.tools)])
	if cap(sc.calls) > maxKeptMessages {
		sc.calls = nil
	}
	if cap(sc.tools) > maxKeptMessages {
		sc.tools = nil
	}
	sc.calls, sc.tools = sc.calls[:0], sc.tools[:0]
	if sc.decoded.ArenaCap() > maxKeptDecoded {
		sc.decoded = jsonx.Scanner{}
	}
	sc.decoded.Reset("") // its strings are the last request's, no longer used
}

// Decode decodes, in place, the strings ParseRequestLazy left escaped in req, which then
// equals what ParseRequest returns for the same body. A string left escaped is one that
// lies in req.Body's memory and holds a backslash: a decoded string with a backslash
// lives elsewhere (in the scanner's arena), and a string without escapes is the same
// either way. So Decode is idempotent, and cheap on a request ParseRequest returned.
func Decode(req *translate.Request) { DecodeInto(req, nil) }

// DecodeInto is Decode with the decoded strings written in scratch's memory, which then
// holds them under the same rule as the request it parsed (see Scratch); a nil scratch
// means fresh memory.
func DecodeInto(req *translate.Request, scratch *Scratch) {
	req.Literals = "" // no string is left escaped
	escaped := func(s string) bool { return jsonx.Within(s, req.Body) && strings.IndexByte(s, '\\') >= 0 }
	total := 0
	payloadStrings(req, func(s *string) {
		if escaped(*s) {
			total += len(*s)
		}
	})
	if total == 0 {
		return
	}
	sc := new(jsonx.Scanner)
	if scratch != nil {
		sc = &scratch.decoded
	}
	payloadStrings(req, func(s *string) {
		if escaped(*s) {
			*s = sc.DecodeRaw(*s, total) // one arena for all of them
		}
	})
}

// payloadStrings calls fn with each string of req that ParseRequestLazy may leave
// escaped.
func payloadStrings(req *translate.Request, fn func(*string)) {
	for i := range req.Messages {
		m := &req.Messages[i]
		fn(&m.Reasoning)
		fn(&m.Refusal)
		for j := range m.Content {
			if t := m.Content[j].Type; t == translate.PartText || t == translate.PartRefusal {
				fn(&m.Content[j].Text)
			}
		}
		for j := range m.ToolCalls {
			fn(&m.ToolCalls[j].Arguments)
		}
	}
}

func parseRequest(s string, lazy bool) (*translate.Request, error) {
	return parseFresh(s, lazy, nil)
}

// parseFresh parses with a parser on its own stack.
//
//go:noinline
func parseFresh(s string, lazy bool, scratch *Scratch) (*translate.Request, error) {
	var p parser
	return p.parse(s, lazy, scratch)
}

// parse starts p afresh and parses s with it.
func (p *parser) parse(s string, lazy bool, scratch *Scratch) (*translate.Request, error) {
	return p.parseWithin(s, lazy, scratch, translate.DefaultMaxInflated)
}

// parseWithin is parse with maxInflated bytes of carried state allowed.
func (p *parser) parseWithin(s string, lazy bool, scratch *Scratch, maxInflated int) (*translate.Request, error) {
	// Each field is set on its own: a composite literal would be built on the stack.
	p.sc = jsonx.NewScanner(s)
	p.maxInflated, p.inflate = maxInflated, translate.NewAllowance(maxInflated)
	p.err = nil
	p.msgs.reset()
	p.parts.reset()
	p.calls = slab.Slab[translate.ToolCall]{}
	p.lazy, p.scratch = lazy, scratch
	p.headed, p.gaveUp = false, false
	if scratch != nil {
		p.calls.Reuse(scratch.calls)
		defer func() { scratch.calls = p.calls.Mem() }() // kept, grown or not, for the next
	}
	if len(s) == 0 {
		return nil, &translate.ParamError{Message: "the request body is empty: send a JSON object with model and messages"}
	}
	if !jsonx.ValidUTF8(s) {
		return nil, &translate.ParamError{Code: CodeInvalidUTF8,
			Message: "the request body is not valid UTF-8: send JSON text encoded as UTF-8 (RFC 8259)"}
	}
	if scratch != nil {
		scratch.req = translate.Request{Body: s}
		p.req = &scratch.req
	} else {
		p.req = &translate.Request{Body: s}
	}
	if lazy {
		p.req.Literals = s // the payload strings it leaves escaped lie in s
	}
	if p.sc.Peek() != '{' {
		if !jsonx.Valid(s) {
			return nil, errInvalidJSON()
		}
		return nil, &translate.ParamError{Message: "the request body must be a JSON object"}
	}
	ok := p.object() && p.sc.AtEnd()
	if p.gaveUp {
		return nil, nil // ParseHead parses again
	}
	if !ok {
		// A syntax error anywhere outranks a field error: find one past the field error.
		if p.err == nil || !jsonx.Valid(s) {
			return nil, errInvalidJSON()
		}
		return nil, p.err
	}
	if err := check(p.req, p.headed); err != nil {
		return nil, err
	}
	return p.req, nil
}

// span is v's byte range in the parsed body.
func span(v *jsonx.Value) translate.Span {
	return translate.Span{Start: v.At, End: v.At + len(v.Raw)}
}

func errInvalidJSON() *translate.ParamError {
	return &translate.ParamError{Message: "we could not parse the JSON body of your request: it is not valid JSON"}
}

// parser reads a request in one pass of its scanner. Each method reads the value at the
// cursor and returns false on a syntax error (sc.Failed()) or a field error (err).
type parser struct {
	sc  jsonx.Scanner
	req *translate.Request
	err *translate.ParamError
	// msgs and parts collect the messages of a messages array and their content parts
	// until the array ends, when each is copied out in one allocation of the exact size.
	msgs  stash[pendingMessage]
	parts stash[translate.Part]
	// calls holds the messages' tool calls, a few allocations for the whole request.
	calls slab.Slab[translate.ToolCall]
	// lazy leaves the escapes of the strings payload reads (ParseRequestLazy).
	lazy bool
	// scratch, if not nil, holds the memory the message and part arrays are built in.
	scratch *Scratch
	// inflate is what the tool call ids' carried state may still inflate to, of
	// maxInflated (translate.Allowance).
	inflate     translate.Allowance
	maxInflated int
	// head has the messages array checked, not built (ParseHead), when passes (if not
	// nil) lets the model be passed through; guess is the model it was asked about when
	// the body names it after messages (guessModel). headed says the walk vouched for
	// the array; gaveUp that it left the body to the full parse.
	head, headed, gaveUp bool
	passes               func(model string) bool
	guess                string
	// index is the first pass's index of the strings from the messages array on
	// (headMessages builds it before its walk reads it).
	index jsonx.StringIndex
}

// payload reads the value at the cursor into v: a string that no check reads and that
// a lazy parse leaves as written (jsonx.Scanner.ValueRaw).
func (p *parser) payload(v *jsonx.Value) bool {
	if p.lazy {
		return p.sc.ValueRaw(v)
	}
	return p.sc.Value(v)
}

// firstPayload is payload with First's rule: a value already read is kept.
func (p *parser) firstPayload(v *jsonx.Value) bool {
	if v.Kind != jsonx.Missing {
		return p.sc.Skip()
	}
	return p.payload(v)
}

// pendingMessage is a message whose content parts are parts[start:end] of its parser.
type pendingMessage struct {
	msg        translate.Message
	start, end int
}

func (p *parser) fail(param, format string, args ...any) bool {
	p.err = translate.Errorf(param, format, args...)
	return false
}

func (p *parser) object() bool {
	return p.readTopLevel(noBase) && p.err == nil
}

// skipAfterError moves past the array at offset at, in which a field error was found, so
// that the walk of the top-level fields can go on. gjson's parser went on after an error
// in messages or tools (and only there), so a later field's error replaces it.
func (p *parser) skipAfterError(at int) bool {
	if p.sc.Failed() {
		return false
	}
	p.sc.Seek(at)
	return p.sc.Skip()
}

// topLevelMember reads the value of the top-level member at position f of topLevelFields
// (-1 for a name it does not hold, kept in Extra).
func (p *parser) topLevelMember(f int) bool {
	sc, r := &p.sc, p.req
	name := sc.Key() // a name read by NextField: members.table tries no compact form here
	if sc.Peek() == 'n' {
		return p.null(f, name)
	}
	var v jsonx.Value
	switch f {
	case rqModel:
		if !p.typed(name, &v, jsonx.String, "must be a string") {
			return false
		}
		r.Model, r.Spans.Model = v.Str, span(&v)
	case rqMessages:
		if p.head {
			return p.headMessages() // ParseHead's first pass (head.go)
		}
		return p.messages()
	case rqStream:
		if !p.typed(name, &v, jsonx.True, "must be a boolean") {
			return false
		}
		r.Stream, r.Spans.Stream = v.Kind == jsonx.True, span(&v)
	case rqStreamOptions:
		return p.streamOptions()
	case rqTools:
		return p.tools()
	case rqToolChoice:
		return p.toolChoice()
	case rqParallelToolCalls:
		if !p.typed(name, &v, jsonx.True, "must be a boolean") {
			return false
		}
		b := v.Kind == jsonx.True
		r.ParallelToolCalls = &b
	case rqMaxTokens, rqMaxCompletionTokens, rqN:
		return p.count(f, name)
	case rqTemperature:
		return p.float(name, 0, 2, &r.Temperature, 0)
	case rqTopP:
		return p.float(name, 0, 1, &r.TopP, 1)
	case rqPresencePenalty:
		return p.float(name, -2, 2, &r.PresencePenalty, 2)
	case rqFrequencyPenalty:
		return p.float(name, -2, 2, &r.FrequencyPenalty, 3)
	case rqStop:
		return p.stop()
	case rqSeed, rqTopLogprobs:
		return p.integer(f, name)
	case rqLogprobs:
		if !p.typed(name, &v, jsonx.True, "must be a boolean") {
			return false
		}
		r.Logprobs = v.Kind == jsonx.True
	case rqResponseFormat:
		return p.responseFormat()
	case rqReasoningEffort:
		if !sc.Value(&v) {
			return false
		}
		switch v.Str {
		case "none", "minimal", "low", "medium", "high", "xhigh":
			r.ReasoningEffort = v.Str
			return true
		}
		return p.fail(name, "must be one of none, minimal, low, medium, high, xhigh")
	case rqUser:
		if !p.typed(name, &v, jsonx.String, "must be a string") {
			return false
		}
		r.User = v.Str
	case rqMetadata:
		return p.metadata()
	default:
		at := sc.Pos()
		if !sc.Skip() {
			return false
		}
		r.Extra = append(r.Extra, translate.Field{Name: name, Raw: sc.Input()[at:sc.Pos()]})
	}
	return true
}

// null reads the null value of the top-level member name (position f): OpenAI treats an
// explicit null as "not set" for optional fields.
func (p *parser) null(f int, name string) bool {
	sc, r := &p.sc, p.req
	switch f {
	case rqModel, rqMessages:
		return p.fail(name, "%s is required", name)
	case rqStream:
		r.Spans.Stream = translate.Span{Start: sc.Pos(), End: sc.Pos() + len("null")}
	case rqStreamOptions:
		r.Spans.StreamOptions = translate.Span{Start: sc.Pos(), End: sc.Pos() + len("null")}
	}
	return sc.Literal("null")
}

// typed reads the value of the member name into v and fails with rule unless it is of
// kind (jsonx.True for either boolean).
func (p *parser) typed(name string, v *jsonx.Value, kind jsonx.Kind, rule string) bool {
	if !p.sc.Value(v) {
		return false
	}
	if k := v.Kind; k != kind && (kind != jsonx.True || k != jsonx.False) {
		return p.fail(name, "%s", rule)
	}
	return true
}

// count reads max_tokens, max_completion_tokens or n (position f): an integer of at least 1.
func (p *parser) count(f int, name string) bool {
	var v jsonx.Value
	if !p.sc.Value(&v) {
		return false
	}
	n, ok := positiveInt(&v)
	if !ok {
		return p.fail(name, "must be an integer of at least 1")
	}
	if r := p.req; f == rqN {
		r.N = n
	} else if f == rqMaxCompletionTokens || r.MaxTokens == 0 {
		r.MaxTokens, r.MaxTokensParam = n, name
	}
	return true
}

// integer reads seed or top_logprobs (position f).
func (p *parser) integer(f int, name string) bool {
	var v jsonx.Value
	if !p.sc.Value(&v) {
		return false
	}
	x := v.Float()
	if f == rqSeed {
		if v.Kind != jsonx.Number || x != math.Trunc(x) {
			return p.fail(name, "must be an integer")
		}
		s := jsonInt(v.Raw, x)
		p.req.Seed = &s
		return true
	}
	if v.Kind != jsonx.Number || x != math.Trunc(x) || x < 0 || x > 20 {
		return p.fail(name, "must be an integer from 0 to 20")
	}
	n := int(x)
	p.req.TopLogprobs = &n
	return true
}

// messages reads the messages array.
func (p *parser) messages() bool {
	p.msgs.reset()
	p.parts.reset()
	ok := p.elements("messages", "must be an array of messages", false)
	if ok && p.err == nil { // else the request is refused: nothing to keep
		p.flushMessages()
	}
	return ok
}

// tools reads the tools array.
func (p *parser) tools() bool {
	return p.elements("tools", "must be an array", true)
}

// elements reads the array of the top-level member name, failing with rule when it is
// not one, each element with tool or else message. After an element's field error the walk
// moves past the array (skipAfterError) and returns true, the error kept. (A function
// value in place of tools would move the parser to the heap: escape analysis cannot see
// that it keeps no pointer to it.)
func (p *parser) elements(name, rule string, tools bool) bool {
	sc := &p.sc
	if sc.Peek() != '[' {
		return p.fail(name, "%s", rule)
	}
	at := sc.Pos()
	for n := 0; sc.NextElem(&n); {
		if tools && !p.tool(n-1) || !tools && !p.message(n-1) {
			return p.skipAfterError(at)
		}
	}
	return !sc.Failed()
}

// streamOptions reads stream_options, whose span the request keeps.
func (p *parser) streamOptions() bool {
	sc, r := &p.sc, p.req
	if sc.Peek() != '{' {
		return p.fail("stream_options", "must be an object")
	}
	start := sc.Pos()
	var iu jsonx.Value
	if !p.fields(func() string { return "stream_options" }, want{"include_usage", &iu}) {
		return false
	}
	r.Spans.StreamOptions = translate.Span{Start: start, End: sc.Pos()}
	if iu.Kind != jsonx.Missing && iu.Kind != jsonx.Null {
		if !iu.IsBool() {
			return p.fail("stream_options.include_usage", "must be a boolean")
		}
		r.IncludeUsage = iu.Kind == jsonx.True
	}
	return true
}

// metadata reads metadata, an object of string values kept as written.
func (p *parser) metadata() bool {
	sc := &p.sc
	if sc.Peek() != '{' {
		return p.fail("metadata", "must be an object of string values")
	}
	at := sc.Pos()
	var seen keySet
	for n := 0; sc.NextField(&n); {
		if !p.member(&seen, func() string { return "metadata" }, noNames) {
			return false
		}
		if sc.Peek() != '"' {
			return p.fail("metadata", "must be an object of string values")
		}
		if !sc.SkipString() {
			return false
		}
	}
	if sc.Failed() {
		return false
	}
	p.req.Metadata = sc.Input()[at:sc.Pos()]
	return true
}

// flushMessages appends the messages collected from a messages array to the request.
func (p *parser) flushMessages() {
	sc := p.scratch
	if p.req.Messages != nil {
		sc = nil // the scratch's arrays hold this request's first messages
	}
	var parts []translate.Part
	if p.parts.n > 0 {
		if sc != nil {
			parts = take(&sc.parts, p.parts.n)
		} else {
			parts = make([]translate.Part, p.parts.n)
		}
		p.parts.copyTo(parts)
	}
	var msgs []translate.Message
	if sc != nil {
		msgs = take(&sc.msgs, p.msgs.n)
	} else {
		msgs = make([]translate.Message, p.msgs.n)
	}
	for k := range msgs {
		pm := p.msgs.at(k)
		msgs[k] = pm.msg
		if pm.end > pm.start {
			msgs[k].Content = parts[pm.start:pm.end:pm.end]
		}
	}
	if r := p.req; r.Messages == nil {
		r.Messages = msgs
	} else {
		r.Messages = append(r.Messages, msgs...)
	}
}

// take returns n entries of *kept's memory, growing it if it has fewer, for the caller
// to fill; *kept's length becomes n (what Scratch.Reset clears). The capacity of what it
// returns ends at n, so an append by a user of the request copies.
func take[T any](kept *[]T, n int) []T {
	if cap(*kept) < n {
		*kept = make([]T, n)
	}
	*kept = (*kept)[:n]
	return (*kept)[:n:n]
}

// check applies the request's rules across its members; headed says that ParseHead's
// walk vouched for a non-empty messages array it did not build.
func check(r *translate.Request, headed bool) *translate.ParamError {
	if r.Model == "" {
		return translate.Errorf("model", "model is required")
	}
	if len(r.Messages) == 0 && !headed {
		return translate.Errorf("messages", "messages must be a non-empty array")
	}
	if !r.Stream && r.IncludeUsage {
		return translate.Errorf("stream_options", "stream_options is only allowed when stream is true")
	}
	if r.ToolChoice.Mode == translate.ToolChoiceFunction {
		found := false
		for i := range r.Tools {
			if r.Tools[i].Name == r.ToolChoice.Name {
				found = true
				break
			}
		}
		if !found {
			return translate.Errorf("tool_choice", "tool_choice names function %q, which is not in tools", r.ToolChoice.Name)
		}
	}
	if r.ToolChoice.Mode == translate.ToolChoiceRequired && len(r.Tools) == 0 {
		return translate.Errorf("tool_choice", "tool_choice is required but no tools were given")
	}
	return nil
}

// toolValues is what a tool's members and its function's hold, read by toolMember and
// toolFuncMember.
type toolValues struct {
	typ, name, description, parameters, strict jsonx.Value
	// typed is set when parameters has a member named type (see schema).
	typed bool
	i     int // the tool's index
}

// param is the tool's param path (see partValues.param).
func (o *toolValues) param() string { return translate.ParamIndex("tools", o.i) }

func (p *parser) tool(i int) bool {
	o := toolValues{i: i}
	param := o.param
	if p.sc.Peek() != '{' {
		return p.fail(param(), "each tool must be an object")
	}
	if !p.readTool(&o, param) {
		return false
	}
	if o.typ.Str != "function" {
		return p.fail(param()+".type", "only function tools are supported, got %q", o.typ.Str)
	}
	if o.name.Kind != jsonx.String || !translate.ValidToolName(o.name.Str) {
		return p.fail(param()+".function.name", translate.ToolNameRule)
	}
	tool := translate.Tool{Name: o.name.Str, Description: o.description.Str}
	if o.parameters.Kind != jsonx.Missing && o.parameters.Kind != jsonx.Null {
		if o.parameters.Kind != jsonx.Object {
			return p.fail(param()+".function.parameters", "must be a JSON Schema object")
		}
		tool.Parameters, tool.ParametersTyped = o.parameters.Raw, o.typed
	}
	if o.strict.IsBool() {
		b := o.strict.Kind == jsonx.True
		tool.Strict = &b
	}
	r := p.req
	for k := range r.Tools {
		if r.Tools[k].Name == tool.Name {
			return p.fail(param()+".function.name", "duplicate function name %q", tool.Name)
		}
	}
	if r.Tools == nil {
		if sc := p.scratch; sc != nil && cap(sc.tools) > 0 {
			r.Tools = sc.tools[:0]
		} else {
			r.Tools = make([]translate.Tool, 0, 4)
		}
	}
	r.Tools = append(r.Tools, tool)
	if sc := p.scratch; sc != nil && cap(r.Tools) > cap(sc.tools) {
		sc.tools = r.Tools[:0] // the larger array, for the next request
	}
	return true
}

// toolMember reads a member of a tool other than type and function (readTool reads those
// into o): it skips it.
func (p *parser) toolMember(int, *toolValues) bool { return p.sc.Skip() }

// toolFuncMember reads the member at position f of a tool's function into o
// (readToolFunc reads name, description and strict itself): parameters, a JSON Schema
// object whose top-level type member sets o.typed; any other member is skipped.
func (p *parser) toolFuncMember(f int, o *toolValues) bool {
	switch {
	case f != tfParameters:
		return p.sc.Skip()
	case p.sc.Peek() == '{':
		return p.schema(&o.parameters, &o.typed)
	}
	return p.sc.Value(&o.parameters)
}

func (p *parser) toolChoice() bool {
	sc, r := &p.sc, p.req
	switch sc.Peek() {
	case '"':
		var v jsonx.Value
		if !sc.Value(&v) {
			return false
		}
		switch v.Str {
		case translate.ToolChoiceAuto, translate.ToolChoiceNone, translate.ToolChoiceRequired:
			r.ToolChoice.Mode = v.Str
			return true
		}
		return p.fail("tool_choice", "must be auto, none, required or a named function")
	case '{':
	default:
		return p.fail("tool_choice", "must be auto, none, required or {\"type\":\"function\",\"function\":{\"name\":...}}")
	}
	var o toolChoiceValues
	if !p.readToolChoice(&o, func() string { return "tool_choice" }) {
		return false
	}
	if o.typ.Str != "function" {
		return p.fail("tool_choice", "must be auto, none, required or {\"type\":\"function\",\"function\":{\"name\":...}}")
	}
	if o.name.Kind != jsonx.String || o.name.Str == "" {
		return p.fail("tool_choice.function.name", "a named tool_choice needs function.name")
	}
	r.ToolChoice = translate.ToolChoice{Mode: translate.ToolChoiceFunction, Name: o.name.Str}
	return true
}

// toolChoiceValues is what a tool_choice object's members hold, read by toolChoiceMember.
type toolChoiceValues struct{ typ, name jsonx.Value }

// toolChoiceMember reads the member at position f of tool_choice into o (readToolChoice
// reads type itself): gjson's Get("function.name") took the first name in any function
// object.
func (p *parser) toolChoiceMember(f int, o *toolChoiceValues) bool {
	if f == tchFunction && o.name.Kind == jsonx.Missing && p.sc.Peek() == '{' {
		return p.fields(func() string { return "tool_choice.function" }, want{"name", &o.name})
	}
	return p.sc.Skip()
}

func (p *parser) responseFormat() bool {
	sc := &p.sc
	if sc.Peek() != '{' {
		return p.fail("response_format", "must be an object")
	}
	var o responseFormatValues
	if !p.readResponseFormat(&o, func() string { return "response_format" }) {
		return false
	}
	rf := &p.req.ResponseFormat
	switch t := o.typ.Str; t {
	case translate.FormatText, translate.FormatJSONObject:
		rf.Type = t
	case translate.FormatJSONSchema:
		if !o.schemaObject {
			return p.fail("response_format.json_schema", "json_schema formats need a json_schema object")
		}
		if o.name.Kind != jsonx.String || o.name.Str == "" {
			return p.fail("response_format.json_schema.name", "json_schema.name is required")
		}
		if o.schema.Kind != jsonx.Missing && o.schema.Kind != jsonx.Object {
			return p.fail("response_format.json_schema.schema", "must be a JSON Schema object")
		}
		rf.Type, rf.Name, rf.Description, rf.Schema = t, o.name.Str, o.description.Str, o.schema.Raw
		if o.strict.IsBool() {
			b := o.strict.Kind == jsonx.True
			rf.Strict = &b
		}
	default:
		return p.fail("response_format.type", "must be text, json_object or json_schema")
	}
	return true
}

// responseFormatValues is what a response_format object's members hold, read by
// responseFormatMember. The first of duplicate keys wins, as with gjson's Get.
type responseFormatValues struct {
	typ, name, description, schema, strict jsonx.Value
	sawSchema, schemaObject                bool
}

// responseFormatMember reads the member at position f of response_format into o
// (readResponseFormat reads type itself).
func (p *parser) responseFormatMember(f int, o *responseFormatValues) bool {
	if f != rfJSONSchema {
		return p.sc.Skip()
	}
	o.schemaObject = o.schemaObject || !o.sawSchema && p.sc.Peek() == '{'
	return p.firstFields(&o.sawSchema, func() string { return "response_format.json_schema" }, want{"name", &o.name},
		want{"description", &o.description}, want{"schema", &o.schema}, want{"strict", &o.strict})
}

func (p *parser) stop() bool {
	sc, r := &p.sc, p.req
	switch sc.Peek() {
	case '"':
		s, ok := sc.Str()
		if !ok {
			return false
		}
		r.Stop = []string{s}
		return true
	case '[':
		for n := 0; sc.NextElem(&n); {
			if sc.Peek() != '"' {
				return p.fail("stop", "must be a string or an array of strings")
			}
			s, ok := sc.Str()
			if !ok {
				return false
			}
			r.Stop = append(r.Stop, s)
		}
		return !sc.Failed()
	}
	return p.fail("stop", "must be a string or an array of strings")
}

// float reads a number between lo and hi into *dst. With a scratch it is kept in the
// scratch's slot, whose place it shares with the request; else in a new allocation.
func (p *parser) float(name string, lo, hi float64, dst **float64, slot int) bool {
	var v jsonx.Value
	if !p.sc.Value(&v) {
		return false
	}
	if v.Kind != jsonx.Number {
		return p.fail(name, "must be a number")
	}
	f := v.Float()
	if f < lo || f > hi {
		return p.fail(name, "must be between %g and %g", lo, hi)
	}
	if p.scratch != nil {
		p.scratch.floats[slot] = f
		*dst = &p.scratch.floats[slot]
		return true
	}
	q := new(float64)
	*q = f
	*dst = q
	return true
}

func positiveInt(v *jsonx.Value) (int, bool) {
	if v.Kind != jsonx.Number {
		return 0, false
	}
	f := v.Float()
	if f != math.Trunc(f) || f < 1 || f > math.MaxInt32 {
		return 0, false
	}
	return int(f), true
}

// jsonInt converts the integral number raw, whose value is f, to an int64: exactly when
// raw is plain digits that fit, else saturating at the int64 range.
func jsonInt(raw string, f float64) int64 {
	const maxExact = 1<<53 - 1 // gjson's bound
	if f >= -maxExact && f <= maxExact {
		return int64(f)
	}
	if n, err := strconv.ParseInt(raw, 10, 64); err == nil {
		return n
	}
	if f < 0 {
		return math.MinInt64
	}
	return math.MaxInt64
}

// stash collects values in a fixed array, then on the heap past its size. Kept in a
// parser on the stack, it makes collecting a run of values cost no allocation. A stash
// is filled either with add (a copy of a value built elsewhere) or with slot and push (a
// value built in place), not both.
type stash[T any] struct {
	n     int
	fixed [32]T
	spill []T
}

// reset empties the stash. The spill keeps its length, its entries the last values
// (as the fixed array keeps its own): add and slot write over them, so a stash reused
// (a Stage's) appends to the spill only past the most values it has held, and slot's
// entries need no zero value appended first.
func (s *stash[T]) reset() { s.n = 0 }

func (s *stash[T]) add(v *T) {
	if s.n < len(s.fixed) {
		s.fixed[s.n] = *v
	} else if k := s.n - len(s.fixed); k < len(s.spill) {
		s.spill[k] = *v
	} else {
		s.spill = append(s.spill, *v)
	}
	s.n++
}

// slot returns the entry after the last one kept, for the caller to zero, build a value
// in place and then keep it with push; a slot not pushed is handed out again by the next
// call. It holds what was there before: the caller zeroes it with a composite literal of
// its type, which compiles to a clear of the memory (a generic zero value is copied). The
// pointer is valid until the next slot or add.
func (s *stash[T]) slot() *T {
	if s.n < len(s.fixed) {
		return &s.fixed[s.n]
	}
	if k := s.n - len(s.fixed); k < len(s.spill) {
		return &s.spill[k]
	}
	var zero T
	s.spill = append(s.spill, zero)
	return &s.spill[len(s.spill)-1]
}

// push keeps the value built in the last slot.
func (s *stash[T]) push() { s.n++ }

func (s *stash[T]) at(i int) *T {
	if i < len(s.fixed) {
		return &s.fixed[i]
	}
	return &s.spill[i-len(s.fixed)]
}

// copyTo copies the values to dst, which has room for them.
func (s *stash[T]) copyTo(dst []T) {
	if s.n <= len(s.fixed) {
		copy(dst, s.fixed[:s.n])
		return
	}
	copy(dst[copy(dst, s.fixed[:]):], s.spill[:s.n-len(s.fixed)])
}
