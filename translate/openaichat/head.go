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
// yet) when the body is guessFrom bytes or more (a smaller body's messages are built at
// once); when that guess is not the model the body names, and passes refuses the real
// one, the messages are built after all (a second parse).
//
// scratch and stage are ParseRequestLazyString's.
func ParseHead(body string, scratch *Scratch, stage *Stage, maxInflated int, passes func(model string) bool) (req *translate.Request, complete bool, err error) {
	if stage == nil {
		return parseHeadOnStack(body, scratch, maxInflated, passes)
	}
	p := &stage.p
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
	if stage == nil {
		return buildOnStack(req, maxInflated)
	}
	p := &stage.p
	full, err := p.parseWithin(req.Body, true, nil, maxInflated)
	if err != nil {
		return err
	}
	req.Messages, req.Carried = full.Messages, full.Carried
	return nil
}

// parseHeadOnStack is ParseHead without a Stage: the parser on this function's stack. A
// function of its own, never inlined, as parseOnStack: a parser that ParseHead declared
// (or took with new, which did not escape) was a local of ParseHead's frame, 7.8 KB on
// every parse, a Stage's included, and so on the stack of every server connection that
// parsed a chat request: fasthttp's connection goroutine kept 16 KiB through a stream
// (PERFORMANCE.md, "The stream event and peak RSS, fifteenth session").
//
//go:noinline
func parseHeadOnStack(body string, scratch *Scratch, maxInflated int, passes func(model string) bool) (*translate.Request, bool, error) {
	var st Stage
	return ParseHead(body, scratch, &st, maxInflated, passes)
}

// buildOnStack is Build without a Stage (parseHeadOnStack).
//
//go:noinline
func buildOnStack(req *translate.Request, maxInflated int) error {
	var st Stage
	return Build(req, &st, maxInflated)
}

// headMessages checks the messages array at the cursor without building it (ParseHead).
// It reports false when the walk leaves it to the full parse: p.gaveUp is then set, and
// the request is parsed again from its start.
func (p *parser) headMessages() bool {
	if p.passes != nil {
		model := p.req.Model
		if p.req.Spans.Model.End == 0 { // after messages, or nowhere
			if len(p.sc.Input()) < guessFrom {
				return p.messages() // small: built now, as the full parse would
			}
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
	// The strings' ends, found a block at a time from the array on (a compact body's):
	// the walk's string reads below take each from the index, or, where it does not
	// hold (Build's false leaves it empty), read it as the Scanner does.
	p.index.Build(sc.Input(), sc.Pos())
	n := 0
	// After an element, a comma right after it is the next one's (EndIs, NextElem's
	// fastest case; n, above 0, is not counted further); else NextElem reads what is there.
	for more := sc.NextElem(&n); more; more = sc.EndIs(',') || sc.NextElem(&n) {
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

// guessFrom is the size of the smallest body whose model, named after its messages, is
// guessed (guessModel): below it the messages are built at once, as the full parse builds
// them, for the guess costs a translated request more than a first pass saves a passed
// one on a body that small (census, thirteenth session: the bench's 250-byte chat request
// to Anthropic paid ~250 instructions for the guess, its passthrough saved none).
const guessFrom = 2048

// giveUp stops the first pass: the caller parses again with the full parse.
func (p *parser) giveUp() bool {
	p.gaveUp = true
	return false
}

// guessModel returns the string value of the last member named model in s, written as
// `"model":` with the string after it (whitespace allowed around the colon), or "" when
// the last such member's value is not a string or there is none: a guess, as the member
// may be inside another object; the walk reads the real one. It looks from the end, as
// what follows the model (the tools) is short beside the messages, at each colon, eight
// bytes at a time: in a word, the bytes equal to ':' are the zero bytes of the word xor
// ':'s, of which the classic test marks every one, and above one, maybe a ';' too (its
// borrow), which is checked. A colon after `l"` (or after whitespace) is looked at
// further (modelAt); strings.LastIndex hashes every byte it passes (some 14 instructions
// a byte), and a call for each colon cost the bench's 10 KB body 5.1 K instructions.
func guessModel(s string) string {
	b := jsonx.Bytes(s)
	const ones, highs, colons = 0x0101010101010101, 0x8080808080808080, 0x3a3a3a3a3a3a3a3a
	i := len(b)
	for ; i >= 8; i -= 8 {
		x := binary.LittleEndian.Uint64(b[i-8:i]) ^ colons
		for m := (x - ones) &^ x & highs; m != 0; {
			k := 63 - bits.LeadingZeros64(m) // the highest marked byte's high bit
			m &^= 1 << k
			if j := i - 8 + k>>3; b[j] == ':' && j >= len(`"model"`) && (b[j-1] <= ' ' || b[j-1] == '"' && b[j-2] == 'l') {
				if model, found := modelAt(s, j); found {
					return model
				}
			}
		}
	}
	for i--; i >= 0; i-- {
		if b[i] == ':' {
			if model, found := modelAt(s, i); found {
				return model
			}
		}
	}
	return ""
}

// modelAt reports whether the colon at s[i] follows the name "model" (whitespace
// allowed between), and then the string after it ("" if it is not a string).
func modelAt(s string, i int) (model string, found bool) {
	const name = `"model"`
	j := i
	for j > 0 && s[j-1] <= ' ' {
		j--
	}
	if j < len(name) || s[j-len(name):j] != name {
		return "", false
	}
	sc := jsonx.NewScanner(s[i+1:])
	if sc.Peek() != '"' {
		return "", true
	}
	model, _ = sc.Str()
	return model, true
}

// headMessage checks the message at the cursor, reporting false when the full parse is
// to read it: anything but the shapes ParseHead lists, or a message it refuses.
//
// The SDKs' shape is read straight, each member once without the ladder's tries: role,
// content, then tool_calls or tool_call_id, each value read and counted as the ladder
// (headMessageLadder) reads and counts it; the ladder takes over at the first member
// that is not the next of these, with the member count, the last member and the seen
// set as it would have left them. The content's string or null is read with its name,
// in one step (its string by SkipStringIn from its quote, without headText's call and
// Peek). This function is the common path only, small enough for a profile to inline
// (cost ~1,700); the ladder is a call of its own.
func (p *parser) headMessage() bool {
	sc := &p.sc
	if !sc.MemberIs(`{"role":`) {
		return p.headMessageLadder(&headMsg{f: -1})
	}
	// What the ladder would have read, in locals (registers) until it is handed over.
	var (
		role      headRoleKind
		content   jsonx.Kind
		calls     int
		hasCallID bool
	)
	switch { // the common roles by MemberIs's value form in line, the rest by headRole
	case sc.MemberIs(`"assistant"`):
		role = roleAssistant
	case sc.MemberIsShort(`"tool"`):
		role = roleTool
	case sc.MemberIsShort(`"user"`):
		role = roleText
	default:
		var ok bool
		if role, ok = p.headRole(); !ok {
			return false
		}
	}
	switch {
	case sc.MemberIs(`,"content":"`):
		if sc.Seek(sc.Pos() - 1); !sc.SkipStringIn(&p.index) { // from the quote
			return false
		}
		content = jsonx.String
	case sc.MemberIs(`,"content":null`):
		content = jsonx.Null
	default:
		return p.headMessageLadder(&headMsg{n: 1, f: mRole, seen: 1 << mRole, role: role})
	}
	const seen = 1<<mRole | 1<<mContent
	f := mContent
	switch {
	case role == roleTool && sc.MemberIs(`,"tool_call_id":`): // a tool's reply: its id next
		f = mToolCallID
		if at, in := sc.Pos(), sc.Input(); at < len(in) && in[at] == '"' { // a string, in line
			if !sc.SkipStringIn(&p.index) {
				return false
			}
			hasCallID = sc.Pos()-at > len(`""`) // an escape decodes to at least one byte
		} else if k, _ := p.headText(); k == jsonx.Missing {
			return false
		}
	case sc.EndIs('}'):
		return headValid(role, content, 0, false, false)
	case sc.MemberIs(`,"tool_calls":`):
		f = mToolCalls
		if !p.headToolCalls(&calls) {
			return false
		}
	case sc.MemberIs(`,"tool_call_id":`):
		f = mToolCallID
		var k jsonx.Kind
		if k, hasCallID = p.headText(); k == jsonx.Missing {
			return false
		}
	}
	if sc.EndIs('}') {
		return headValid(role, content, calls, hasCallID, false)
	}
	return p.headMessageLadder(&headMsg{n: 1, f: f, seen: seen | 1<<(f&63), role: role,
		content: content, calls: calls, hasCallID: hasCallID})
}

// headMsg is what headMessage has read of a message: the member count n, the last
// member f and the members seen, and what the role rules need.
type headMsg struct {
	seen                  uint
	n, f                  int
	role                  headRoleKind
	content               jsonx.Kind // Missing, Null or String
	calls                 int
	hasCallID, hasRefusal bool
}

// valid reports whether the message read holds to its role's rules (headValid).
func (m *headMsg) valid() bool {
	return headValid(m.role, m.content, m.calls, m.hasCallID, m.hasRefusal)
}

// headValid reports whether a message of the role, the content's kind, the number of
// tool calls and a tool_call_id and a refusal that are not empty (or not) holds to its
// role's rules.
func headValid(role headRoleKind, content jsonx.Kind, calls int, hasCallID, hasRefusal bool) bool {
	switch role {
	case roleAssistant:
		return content != jsonx.Missing || calls > 0 || hasRefusal
	case roleTool:
		return calls == 0 && hasCallID
	case roleText:
		return calls == 0 && content != jsonx.Missing && content != jsonx.Null
	}
	return false // no role, or an unknown one: refused
}

// headRoleKind is a message's role as the role rules read it (headMsg.valid).
type headRoleKind uint8

const (
	roleNone      headRoleKind = iota // no role, or an unknown one
	roleAssistant                     // translate.RoleAssistant
	roleTool                          // translate.RoleTool
	roleText                          // system, developer or user: content is a string
)

// headMessageLadder reads the rest of the message at the cursor by the member ladder of
// readMessage, the SDKs' orders first, from where headMessage left it (m).
func (p *parser) headMessageLadder(m *headMsg) bool {
	sc := &p.sc
	if m.n == 0 && sc.Peek() != '{' {
		return false
	}
	var (
		ok, full bool
		k        jsonx.Kind
	)
	for {
		switch f := m.f; {
		case m.n > 0 && sc.EndIs('}'):
			return m.valid()
		case m.n == 0 && sc.MemberIs(`{"role":`):
			m.n, m.f = 1, mRole
		case m.n == 0 && sc.MemberIs(`{"content":`):
			m.n, m.f = 1, mContent
		case f == mRole && sc.MemberIs(`,"content":`):
			m.f = mContent
		case (f == mContent || f == mToolCalls || f == mToolCallID) && sc.MemberIs(`,"role":`):
			m.f = mRole
		case f == mContent && sc.MemberIs(`,"tool_calls":`):
			m.f = mToolCalls
		case f == mContent && sc.MemberIs(`,"tool_call_id":`):
			m.f = mToolCallID
		case sc.NextField(&m.n):
			if m.f = messageField(sc.Key()); m.f < 0 {
				return false // any other name, or one in another case: the member rule's
			}
		default:
			if sc.Failed() {
				return false
			}
			return m.valid()
		}
		f := m.f
		if m.seen&(1<<(f&63)) != 0 { // (f&63: no shift past the word to test for)
			return false // a duplicate: refused
		}
		m.seen |= 1 << (f & 63)
		switch f {
		case mRole:
			if m.role, ok = p.headRole(); !ok {
				return false
			}
		case mContent:
			if m.content, _ = p.headText(); m.content == jsonx.Missing {
				return false // content parts: the full parse's
			}
		case mToolCalls:
			if !p.headToolCalls(&m.calls) {
				return false
			}
		case mName, mToolCallID, mRefusal, mReasoningContent:
			if k, full = p.headText(); k == jsonx.Missing {
				return false
			}
			m.hasCallID = m.hasCallID || f == mToolCallID && full
			m.hasRefusal = m.hasRefusal || f == mRefusal && full
		default:
			return false // thinking_blocks
		}
	}
}

// headRole reads a message's role at the cursor, decoded as the full parse reads it, as
// its kind (roleNone for an unknown one); ok is false when it is not a string or the
// string is refused.
func (p *parser) headRole() (role headRoleKind, ok bool) {
	sc := &p.sc
	switch {
	case sc.Peek() != '"':
		return roleNone, false
	case sc.MemberIs(`"assistant"`): // the common roles, by MemberIs's value form
		return roleAssistant, true
	case sc.MemberIsShort(`"tool"`):
		return roleTool, true
	case sc.MemberIsShort(`"user"`):
		return roleText, true
	}
	s, ok := sc.StrIn(&p.index)
	switch s {
	case translate.RoleAssistant:
		return roleAssistant, ok
	case translate.RoleTool:
		return roleTool, ok
	case translate.RoleSystem, translate.RoleDeveloper, translate.RoleUser:
		return roleText, ok
	}
	return roleNone, ok
}

// headText reads the string or null at the cursor (a message's content, name,
// tool_call_id, refusal or reasoning_content) without decoding it: its kind, String or
// Null, or Missing for anything else (content parts) or a string or literal refused;
// full reports a string that decodes to at least one byte.
func (p *parser) headText() (k jsonx.Kind, full bool) {
	sc := &p.sc
	switch sc.Peek() {
	case '"':
		at := sc.Pos()
		if !sc.SkipStringIn(&p.index) {
			return jsonx.Missing, false
		}
		return jsonx.String, sc.Pos()-at > len(`""`) // an escape decodes to at least one byte
	case 'n':
		if !sc.Literal("null") {
			return jsonx.Missing, false
		}
		return jsonx.Null, false
	}
	return jsonx.Missing, false
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
	n := 0
	for more := sc.NextElem(&n); more; more = sc.EndIs(',') || sc.NextElem(&n) { // headMessages'
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
//
// The SDKs' shape is read straight (headMessage's): id, type, function, and in the
// function name and arguments, each string read with its name (by StrIn or SkipStringIn
// from its quote) and the type "function" by a compare; the ladders
// (headToolCallLadder, headToolCallFunc) take over at the first member that differs.
func (p *parser) headToolCall() bool {
	sc := &p.sc
	if !sc.MemberIsShort(`{"id":"`) {
		return p.headToolCallLadder(&headCall{f: -1})
	}
	sc.Seek(sc.Pos() - 1) // at the quote
	id, ok := sc.StrIn(&p.index)
	if !ok {
		return false
	}
	if !sc.MemberIs(`,"type":`) {
		return p.headToolCallLadder(&headCall{n: 1, f: tcID, seen: 1 << tcID, id: id})
	}
	if !sc.MemberIs(`"function"`) && !p.headType() { // MemberIs's value form first
		return false
	}
	if !sc.MemberIs(`,"function":`) {
		return p.headToolCallLadder(&headCall{n: 1, f: tcType, seen: 1<<tcID | 1<<tcType, id: id})
	}
	var name string
	if !sc.MemberIs(`{"name":"`) {
		if sc.Peek() != '{' || !p.headToolCallFunc(&name, -1, 0) {
			return false
		}
	} else {
		sc.Seek(sc.Pos() - 1) // at the quote
		if name, ok = sc.StrIn(&p.index); !ok {
			return false
		}
		if !sc.MemberIs(`,"arguments":"`) {
			if !p.headToolCallFunc(&name, fnName, 1<<fnName) {
				return false
			}
		} else if sc.Seek(sc.Pos() - 1); !sc.SkipStringIn(&p.index) {
			return false
		} else if !sc.EndIs('}') && !p.headToolCallFunc(&name, fnArguments, 1<<fnName|1<<fnArguments) {
			return false
		}
	}
	if !sc.EndIs('}') {
		return p.headToolCallLadder(&headCall{n: 1, f: tcFunction, seen: 1<<tcID | 1<<tcType | 1<<tcFunction,
			id: id, name: name, hasFunc: true})
	}
	if id == "" || name == "" { // headToolCallDone's checks, in line
		return false
	}
	return strings.IndexByte(id, translate.CarrySep[0]) < 0 || p.req.OpenCarried(id, &p.inflate)
}

// headCall is what headToolCall has read of a tool call when its ladder takes over: the
// member count n, the last member f and the members seen, the id and the function's name.
type headCall struct {
	seen     uint
	n, f     int
	id, name string
	hasFunc  bool
}

// headToolCallLadder reads the rest of the tool call at the cursor by the member ladder
// of readToolCall from where headToolCall left it (t).
func (p *parser) headToolCallLadder(t *headCall) bool {
	sc := &p.sc
	if t.n == 0 && sc.Peek() != '{' {
		return false
	}
	for {
		switch f := t.f; {
		case t.n > 0 && sc.EndIs('}'):
			return p.headToolCallDone(t.id, t.name, t.hasFunc)
		case t.n == 0 && sc.MemberIsShort(`{"id":`):
			t.n, t.f = 1, tcID
		case (f == tcID || f == tcFunction) && sc.MemberIs(`,"type":`):
			t.f = tcType
		case (f == tcID || f == tcType) && sc.MemberIs(`,"function":`):
			t.f = tcFunction
		case sc.NextField(&t.n):
			if t.f = toolCallField(sc.Key()); t.f < 0 {
				return false
			}
		default:
			if sc.Failed() {
				return false
			}
			return p.headToolCallDone(t.id, t.name, t.hasFunc)
		}
		f := t.f
		if t.seen&(1<<(f&63)) != 0 {
			return false
		}
		t.seen |= 1 << (f & 63)
		switch f {
		case tcID:
			var ok bool
			if t.id, ok = p.headStr(); !ok {
				return false
			}
		case tcType:
			if !p.headType() {
				return false
			}
		case tcFunction:
			if sc.Peek() != '{' || !p.headToolCallFunc(&t.name, -1, 0) {
				return false
			}
			t.hasFunc = true
		}
	}
}

// headToolCallDone reports whether a tool call read whole, of the id, the function's name
// and whether it had a function, is one the first pass vouches for, and opens the id's
// carried state as the full parse opens it, in the same order and under the same
// Allowance (past it, the full parse's error).
func (p *parser) headToolCallDone(id, name string, hasFunc bool) bool {
	if id == "" || !hasFunc || name == "" {
		return false
	}
	return strings.IndexByte(id, translate.CarrySep[0]) < 0 || p.req.OpenCarried(id, &p.inflate)
}

// headStr reads the string at the cursor, decoded; ok is false when it is not a string or
// is refused.
func (p *parser) headStr() (s string, ok bool) {
	if p.sc.Peek() != '"' {
		return "", false
	}
	return p.sc.StrIn(&p.index)
}

// headType reads a tool call's type at the cursor, reporting whether it is the string
// "function" (decoded as the full parse decodes it); any other type, or none that is a
// string, is the full parse's to read or refuse.
func (p *parser) headType() bool {
	if p.sc.MemberIs(`"function"`) { // MemberIs's value form
		return true
	}
	typ, ok := p.headStr()
	return ok && typ == "function"
}

// headToolCallFunc checks a tool call's function (readToolCallFunc) by its member
// ladder, its name in *name, from the member f (-1 before the first: the cursor at the
// object's brace) with the members seen.
func (p *parser) headToolCallFunc(name *string, f int, seen uint) bool {
	sc := &p.sc
	var ok bool
	n := 0
	if f >= 0 {
		n = 1
	}
	for {
		switch {
		case n > 0 && sc.EndIs('}'):
			return true
		case n == 0 && sc.MemberIs(`{"name":`):
			n, f = 1, fnName
		case n == 0 && sc.MemberIs(`{"arguments":`):
			n, f = 1, fnArguments
		case f == fnName && sc.MemberIs(`,"arguments":`):
			f = fnArguments
		case f == fnArguments && sc.MemberIs(`,"name":`):
			f = fnName
		case sc.NextField(&n):
			if f = toolCallFuncField(sc.Key()); f < 0 {
				return false
			}
		default:
			return !sc.Failed()
		}
		if seen&(1<<(f&63)) != 0 {
			return false
		}
		seen |= 1 << (f & 63)
		if f == fnName {
			if *name, ok = p.headStr(); !ok {
				return false
			}
		} else if k, _ := p.headText(); k == jsonx.Missing {
			return false
		}
	}
}
