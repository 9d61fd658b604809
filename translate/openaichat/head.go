package openaichat

import (
	"encoding/binary"
	"math/bits"
	"strings"

	"github.com/agate-gateway/agate/internal/jsonx"
	"github.com/agate-gateway/agate/translate"
)

// The passthrough's first pass: a request whose messages are checked but not built.

// ParseHead is ParseRequestLazyStringWithin for a caller that may forward the body as it
// came (the OpenAI passthrough) and need none of its messages: every member but
// messages is read into the request as the full parse reads it (the model and its span,
// stream, stream_options, max_tokens, tools, tool_choice...), and the messages array is
// checked without being built, when its messages are of the shapes that walk can vouch
// for: each an object of role, content (a string or null), name, tool_call_id,
// tool_calls (id, type "function", function with name and arguments), refusal and
// reasoning_content, each given once, with string or null values, whose role-dependent
// rules hold; the carried state of tool call ids is opened into the request (Carried) as
// the full parse opens it. Anything else (content parts, thinking blocks, any other
// member name, a message the full parse refuses, a syntax error) is
// left to the full parse, which ParseHead then runs and whose request or error it
// returns. So a body is accepted or refused, with the same error, exactly as
// ParseRequestLazyStringWithin would (FuzzParseHeadMatchesParse).
//
// complete is false when the request has no Messages: Build completes it. passes, if
// not nil, is asked whether a request for a model may be passed through; when it says
// no, the messages are built at once (complete true), as a translated request reads
// them. It is asked the model the body names before messages, or else the one a search
// from the body's end finds (guessModel; the walk over messages does not know the model
// yet); when that guess is not the model the body names, and passes refuses the real
// one, the messages are built after all (a second parse).
//
// scratch and stage are ParseRequestLazyString's.
func ParseHead(body string, scratch *Scratch, stage *Stage, maxInflated int, passes func(model string) bool) (req *translate.Request, complete bool, err error) {
	var p *parser
	if stage != nil {
		p = &stage.p
	} else {
		p = new(parser)
	}
	p.head, p.passes = true, passes
	req, err = p.parseWithin(body, true, scratch, maxInflated)
	headed, gaveUp, guess := p.headed, p.gaveUp, p.guess
	p.head, p.passes, p.guess = false, nil, ""
	if gaveUp {
		req, err = p.parseWithin(body, true, scratch, maxInflated)
		return req, true, err
	}
	if err != nil || !headed {
		return req, true, err
	}
	if passes != nil && req.Model != guess && !passes(req.Model) {
		// Read with the model guessed wrongly: a translated request, whose messages are read.
		req, err = p.parseWithin(body, true, scratch, maxInflated)
		return req, true, err
	}
	return req, false, nil
}

// Build completes req, a request ParseHead returned incomplete, in place: its Messages
// and the carried state of their tool call ids (Carried), from the body it holds, by the
// full parse (ParseRequestLazyStringWithin's: its strings left escaped). Its other
// members, which its owner may have changed since, are left as they are. The messages
// are built in memory of their own, not in the Scratch req was parsed into; stage, if
// not nil, is the parse's working memory (see Stage). ParseHead vouched for the body,
// so Build fails only if req.Body changed.
func Build(req *translate.Request, stage *Stage, maxInflated int) error {
	var p *parser
	if stage != nil {
		p = &stage.p
	} else {
		p = new(parser)
	}
	full, err := p.parseWithin(req.Body, true, nil, maxInflated)
	if err != nil {
		return err
	}
	req.Messages, req.Carried = full.Messages, full.Carried
	return nil
}

// headMessages checks the messages array at the cursor without building it (ParseHead).
// It reports false when the walk leaves it to the full parse: p.gaveUp is then set, and
// the request is parsed again from its start.
func (p *parser) headMessages() bool {
	if p.passes != nil {
		model := p.req.Model
		if p.req.Spans.Model.End == 0 { // after messages, or nowhere
			model = guessModel(p.sc.Input())
			p.guess = model
		}
		if !p.passes(model) {
			return p.messages() // a translated request: built now
		}
	}
	sc := &p.sc
	if sc.Peek() != '[' {
		return p.giveUp()
	}
	n := 0
	for sc.NextElem(&n) {
		if !p.headMessage() {
			return p.giveUp()
		}
	}
	if sc.Failed() || n == 0 {
		return p.giveUp()
	}
	p.headed = true
	return true
}

// giveUp stops the first pass: the caller parses again with the full parse.
func (p *parser) giveUp() bool {
	p.gaveUp = true
	return false
}

// guessModel returns the string value of the last member named model in s, written as
// `"model":` with the string after it (whitespace allowed around the colon), or "" when
// there is none: a guess, as the member may be inside another object; the walk reads the
// real one. It looks from the end at each colon (lastColon), as what follows the model
// (the tools) is short beside the messages, and strings.LastIndex hashes every byte it
// passes (some 14 instructions a byte; LastIndexByte's loop, 7).
func guessModel(s string) string {
	const name = `"model"`
	for end := len(s); ; {
		i := lastColon(s, end)
		if i < 0 {
			return ""
		}
		j := i
		for j > 0 && s[j-1] <= ' ' {
			j--
		}
		if j >= len(name) && s[j-len(name):j] == name {
			sc := jsonx.NewScanner(s[i+1:])
			if sc.Peek() != '"' {
				return ""
			}
			m, _ := sc.Str()
			return m
		}
		end = j
	}
}

// lastColon is strings.LastIndexByte(s[:end], ':') eight bytes at a time: in a word,
// the bytes equal to ':' are the zero bytes of the word xor ':'s, of which the classic
// test marks every one, and above one, maybe a ';' too (its borrow), which is checked.
func lastColon(s string, end int) int {
	b := jsonx.Bytes(s[:end])
	const ones, highs, colons = 0x0101010101010101, 0x8080808080808080, 0x3a3a3a3a3a3a3a3a
	i := len(b)
	for ; i >= 8; i -= 8 {
		x := binary.LittleEndian.Uint64(b[i-8:i]) ^ colons
		for m := (x - ones) &^ x & highs; m != 0; {
			k := 63 - bits.LeadingZeros64(m) // the highest marked byte's high bit
			if j := i - 8 + k>>3; b[j] == ':' {
				return j
			}
			m &^= 1 << k
		}
	}
	for i--; i >= 0; i-- {
		if b[i] == ':' {
			return i
		}
	}
	return -1
}

// headValues is what ParseHead's walk keeps of a message (readHeadMessage).
type headValues struct {
	role                  string
	content               jsonx.Kind // Missing, Null or String
	calls                 int
	hasCallID, hasRefusal bool
}

// headCallValues is what it keeps of a tool call and its function (readHeadToolCall).
type headCallValues struct {
	id, typ, name    string
	hasType, hasFunc bool
}

// headMessage checks the message at the cursor, reporting false when the full parse is
// to read it: anything but the shapes ParseHead lists, or a message it refuses. The
// member ladder and rule are readMessage's (members.table); a refused name, whose error
// the full parse will make again, gives up as well.
func (p *parser) headMessage() bool {
	if p.sc.Peek() != '{' {
		return false
	}
	var o headValues
	if !p.readHeadMessage(&o, noBase) {
		return false
	}
	switch o.role {
	case translate.RoleAssistant:
		return o.content != jsonx.Missing || o.calls > 0 || o.hasRefusal
	case translate.RoleTool:
		return o.calls == 0 && o.hasCallID
	case translate.RoleSystem, translate.RoleDeveloper, translate.RoleUser:
		return o.calls == 0 && o.content != jsonx.Missing && o.content != jsonx.Null
	}
	return false // no role, or an unknown one: refused
}

// headMessageMember reads the member at position f of a message (readHeadMessage).
func (p *parser) headMessageMember(f int, o *headValues) bool {
	sc := &p.sc
	c := sc.Peek()
	switch f {
	case hmRole:
		if c != '"' {
			return false
		}
		var ok bool
		o.role, ok = sc.Str() // decoded, as the full parse reads it
		return ok
	case hmContent:
		switch c {
		case '"':
			o.content = jsonx.String
			return sc.SkipString()
		case 'n':
			o.content = jsonx.Null
			return sc.Literal("null")
		}
		return false // content parts: the full parse's
	case hmToolCalls:
		return p.headToolCalls(&o.calls)
	case hmName, hmToolCallID, hmRefusal, hmReasoningContent:
		switch c {
		case '"':
			at := sc.Pos()
			if !sc.SkipString() {
				return false
			}
			full := sc.Pos()-at > len(`""`) // an escape decodes to at least one byte
			o.hasCallID = o.hasCallID || f == hmToolCallID && full
			o.hasRefusal = o.hasRefusal || f == hmRefusal && full
			return true
		case 'n':
			return sc.Literal("null")
		}
	}
	return false // thinking_blocks, any other name, any other value
}

// headToolCalls checks a message's tool_calls (toolCalls), adding their number to *calls.
func (p *parser) headToolCalls(calls *int) bool {
	sc := &p.sc
	switch sc.Peek() {
	case 'n':
		return sc.Literal("null")
	case '[':
	default:
		return false
	}
	for n := 0; sc.NextElem(&n); {
		if !p.headToolCall() {
			return false
		}
		*calls++
	}
	return !sc.Failed()
}

// headToolCall checks the tool call at the cursor (toolCall): an id (whose carried
// state it opens into the request), the type "function" or none, a function with a name
// and string or null arguments.
func (p *parser) headToolCall() bool {
	if p.sc.Peek() != '{' {
		return false
	}
	var o headCallValues
	if !p.readHeadToolCall(&o, noBase) ||
		o.id == "" || o.hasType && o.typ != "function" || !o.hasFunc || o.name == "" {
		return false
	}
	// Carried state is opened as the full parse opens it, in the same order and under
	// the same Allowance; past it, the full parse's error.
	return strings.IndexByte(o.id, translate.CarrySep[0]) < 0 || p.req.OpenCarried(o.id, &p.inflate)
}

// headToolCallMember reads the member at position f of a tool call (readHeadToolCall).
func (p *parser) headToolCallMember(f int, o *headCallValues) bool {
	sc := &p.sc
	c := sc.Peek()
	var ok bool
	switch f {
	case hcID:
		if c != '"' {
			return false
		}
		o.id, ok = sc.Str()
		return ok
	case hcType:
		if c != '"' {
			return false
		}
		o.typ, ok = sc.Str()
		o.hasType = true
		return ok
	case hcFunction:
		o.hasFunc = true
		return c == '{' && p.readHeadToolCallFunc(o, noBase)
	}
	return false
}

// headToolCallFuncMember reads the member at position f of a tool call's function
// (readHeadToolCallFunc): its name, and arguments a string or null.
func (p *parser) headToolCallFuncMember(f int, o *headCallValues) bool {
	sc := &p.sc
	c := sc.Peek()
	switch {
	case f == hfName:
		if c != '"' {
			return false
		}
		var ok bool
		o.name, ok = sc.Str()
		return ok
	case f == hfArguments && c == '"':
		return sc.SkipString()
	case f == hfArguments && c == 'n':
		return sc.Literal("null")
	}
	return false
}
