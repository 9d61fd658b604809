package responsesin

import (
	"strings"

	"github.com/agate-gateway/agate/internal/jsonx"
	"github.com/agate-gateway/agate/translate"
	"github.com/agate-gateway/agate/translate/internal/members"
)

// ParseHead is the passthrough's validate-only first pass over a Responses body
// (ParseWithin's terms): one forward walk that checks the body and reads every
// top-level member but input into the Request as ParseWithin does (the model, stream,
// store, tools, include...), and checks the input items without building
// them.
//
// When it can vouch that ParseWithin accepts the body, it returns that Request
// incomplete (complete false): Core.Messages and Core.Body (the chat equivalent) are
// empty, and Build fills them in, in place, for a reader that needs them (a translation,
// the tool loop, a previous response's items, the response cache, a token estimate, the
// ledger's captured text); the echo of its settings is made when an Encoder asks for it
// (a passthrough never does). Its Body, Input, Store, Sealed (false: it vouches for no
// reasoning item) and the passthrough's model span are ParseWithin's. Otherwise, for any
// body it refuses and for the items it does not read itself (reasoning items, built-in
// tool calls, images, files, refusals, namespaced or carried calls, escaped types or
// roles, an output of content parts), it returns ParseWithin's result, complete: every
// error is ParseWithin's by construction, and FuzzParseHead holds the two passes to
// agreeing on what they accept.
//
// passes, when not nil, is asked about the model as soon as the walk reads it (before the
// input items when it is written after them: members.ModelAsk). False (the request will
// be translated, and the translation reads the messages) makes the same walk build the
// items' messages as it checks them, from the values it reads, over its copy of the
// body, and ParseHead returns the Request complete: ParseWithin's, which FuzzParseHead
// holds it to. The walk reads each string once, where ParseWithin indexes the body and
// walks it again member by member; what the walk leaves to ParseWithin it leaves to it
// as before. A model read after the items were checked unbuilt that will be translated
// (the guess before them was wrong) ends the first pass there, for the full parse.
func ParseHead(body []byte, maxInflated int, passes func(model string) bool) (req *Request, complete bool, err error) {
	return parseHeadOr(body, maxInflated, passes, false)
}

// ParseHeadLazy is ParseHead whose Requests are ParseLazy's, not ParseWithin's: the
// complete one, and what Build makes of an incomplete one, have their messages' text
// left escaped (Decode decodes it for a reader that is not a translate.LiteralReader).
func ParseHeadLazy(body []byte, maxInflated int, passes func(model string) bool) (req *Request, complete bool, err error) {
	return parseHeadOr(body, maxInflated, passes, true)
}

// ParseHeadLazy is the package's ParseHeadLazy working in st instead of on the stack.
func (st *Stage) ParseHeadLazy(body []byte, maxInflated int, passes func(model string) bool) (req *Request, complete bool, err error) {
	return st.parseHeadOr(body, maxInflated, passes, true)
}

// parseHeadOr is ParseHead, the full parse lazy when lazy is set (ParseHeadLazy). It works
// on its goroutine's stack (some 3.5 KB of frame): a server parses with a Stage
// (Stage.ParseHeadLazy).
//
//go:noinline
func parseHeadOr(body []byte, maxInflated int, passes func(model string) bool, lazy bool) (req *Request, complete bool, err error) {
	var st Stage
	return st.parseHeadOr(body, maxInflated, passes, lazy)
}

// parseHeadOr is the package's parseHeadOr working in st.
func (st *Stage) parseHeadOr(body []byte, maxInflated int, passes func(model string) bool, lazy bool) (req *Request, complete bool, err error) {
	if len(body) == 0 || !jsonx.ValidUTF8(jsonx.View(body)) {
		req, err = parseBody(body, maxInflated, lazy) // its error
		return req, true, err
	}
	if r, built, ok := st.parseHead(body, maxInflated, passes, lazy); ok {
		if !built {
			r.lazy = lazy // for Build
		}
		return r, built, nil
	}
	req, err = st.parseString(string(body), maxInflated, lazy) // parseBody's, in st
	return req, true, err
}

// Build completes r, a Request ParseHead returned incomplete, in place (r.Core too:
// readers hold both pointers): afterwards it is the Request ParseWithin reads from
// r.Body (ParseLazy's when ParseHeadLazy returned r). The error is ParseWithin's, which
// ParseHead's check makes unreachable. It works on its goroutine's stack: a server
// builds with a Stage (Stage.Build).
//
//go:noinline
func Build(r *Request) error {
	var st Stage
	return st.Build(r)
}

// Build is the package's Build working in st instead of on the stack.
func (st *Stage) Build(r *Request) error {
	full, err := st.parseString(r.Body, r.maxInflated, r.lazy)
	if err != nil {
		return err
	}
	core := r.Core
	*core = *full.Core
	*r = *full
	r.Core = core
	return nil
}

// parseHead is ParseHead's first pass over body, valid UTF-8, in st; ok is false when it
// cannot vouch for it, built true when it built the input items' messages (the Request is
// complete; lazy: ParseLazy's). The walk reads a view of body (the caller's buffer, which
// a server reuses), and only a body it vouches for is copied, as the Request's Body, with
// the top-level values moved onto the copy; a walk that builds the messages copies it
// before the items, and reads them from the copy, which the messages' strings alias. The
// walk (walk) and what follows it (complete) are functions of their own, so that the
// frame under the walk's deepest calls is the walk's alone.
func (st *Stage) parseHead(body []byte, maxInflated int, passes func(string) bool, lazy bool) (r *Request, built, ok bool) {
	st.start(jsonx.View(body), lazy)
	s, build, ok := st.walk(body, passes)
	if !ok {
		return nil, false, false
	}
	return st.complete(body, s, build, maxInflated, lazy)
}

// walk is parseHead's walk over body: it checks it, collecting its top-level members in
// st.fields[:st.n] (tools indexed in st.tools) and checking the input items (building
// their messages when the model will be translated, over s, the copy of body it then
// makes). ok is false when the walk cannot vouch for body.
//
//go:noinline
func (st *Stage) walk(body []byte, passes func(string) bool) (s string, build, ok bool) {
	p := &st.p
	view := p.sc.Input()
	sc := &p.sc
	if sc.Peek() != '{' {
		return "", false, false
	}
	st.n, st.seen, st.ask = 0, members.Set{}, members.ModelAsk{Passes: passes}
	walked := false // the items were checked
	// tools is read member by member (toolsOver) over an index of its own, made as the
	// walk reads it (jsonx.IndexValue), as ParseWithin reads it over the body's.
	for n := 0; sc.NextField(&n); {
		k := sc.Key()
		j, code, _ := st.seen.Member(k, topLevelNames)
		if code != "" || st.n == len(st.fields) {
			return "", false, false
		}
		// The name as the Request keeps it (MaxTokensParam, Extra): the list's own string,
		// or a copy (the walk reads a view of the caller's buffer).
		if j >= 0 {
			k = topLevelNames.Name(j)
		} else {
			k = strings.Clone(k)
		}
		f := &st.fields[st.n]
		st.n++
		f.Name, f.V = k, jsonx.Value{}
		v := &f.V
		if k != "input" || sc.Peek() != '[' {
			var ok bool
			if k == "tools" {
				ok = st.index(v)
			} else {
				ok = sc.Value(v)
			}
			if !ok {
				return "", false, false
			}
			if k == "model" && v.Kind == jsonx.String && !st.ask.Model(v.Str) {
				if walked && !build {
					return "", false, false
				}
				build = true
			}
			continue
		}
		// A model written after the items is asked about before they are checked: one
		// that will be translated has them built.
		build = build || !st.ask.Ahead(view)
		at := sc.Pos()
		if build && !walked {
			s = string(body)
			p.sc = jsonx.NewScanner(s)
			sc.Seek(at)
			// About one message per 250 bytes of an agentic history; append grows it.
			p.turns = &turns{msgs: make([]translate.Message, 1, 8+(len(s)-at)/224), open: -1, last: -1}
		}
		if !p.checkItems() {
			return "", false, false
		}
		if t := p.turns; t != nil {
			t.closeCalls(&p.calls)
			t.endTurn()
		}
		walked = true
		v.Set(jsonx.Array, sc.Input()[at:sc.Pos()], at, "")
	}
	if sc.Failed() || !sc.AtEnd() {
		return "", false, false
	}
	return s, build, true
}

// index indexes tools, the value at the cursor, into st.tools (jsonx.IndexValue) and sets
// v to its root, where it starts in the body.
//
//go:noinline
func (st *Stage) index(v *jsonx.Value) bool {
	sc := &st.p.sc
	at := sc.Pos()
	var root jsonx.Value
	var ok bool
	if st.tools, root, ok = sc.IndexValue(); ok {
		v.Set(root.Kind, root.Raw, at, root.Str)
	}
	return ok
}

// complete is parseHead's end, once the walk vouched for body: the other members are
// read as ParseWithin reads them, by the same code, into the Request, over s, the copy
// of body ("": made here).
//
//go:noinline
func (st *Stage) complete(body []byte, s string, build bool, maxInflated int, lazy bool) (r *Request, built, ok bool) {
	p := &st.p
	view := jsonx.View(body)
	fields := st.fields[:st.n]
	if s == "" {
		s = string(body)
	}
	for i := range fields {
		f := &fields[i]
		onto(&f.V, view, s)
	}
	r = newRequest(s, maxInflated)
	p.r, p.sc = r, jsonx.NewScanner(s)
	// The other members are read as ParseWithin reads them, by the same code, tools first.
	for i := range fields {
		if f := &fields[i]; f.Name == "tools" && p.toolsOver(f.V, &st.tools) != nil {
			return nil, false, false
		}
	}
	for i := range fields {
		f := &fields[i]
		switch {
		case f.Name == "tools":
			continue
		case f.Name == "input" && f.V.Kind == jsonx.Array:
			p.hasInput, r.Input = true, f.V.Raw // the items checkItems vouched for
			if t := p.turns; t != nil {
				r.lead, r.current = t.msgs, t.msgs[1:] // input's
			}
			continue
		}
		if p.field(f.Name, f.V) != nil {
			return nil, false, false
		}
	}
	if r.Core.Model == "" || !p.hasInput || p.checkToolChoice() != nil {
		return nil, false, false
	}
	r.Core.IncludeUsage = r.Core.Stream
	if !build {
		r.echoLater = true // Build, or an Encoder (echoOf), makes it
		return r, false, true
	}
	r.echo = p.appendEcho(make([]byte, 0, p.echoSize()))
	r.build() // as parseString completes its Request (an input string: field's message)
	if lazy {
		r.Core.Literals = s
	}
	return r, true, true
}

// toolsOver is field for tools, whose value is v, read over sub, the scanner of its own
// that indexed it as the walk read it (jsonx.IndexValue), moved onto v's text in the
// Request's copy of the body (Rebase), as ParseWithin reads it over the body's index: the
// tools are walked member by member (Get, Each, once to count them, once to read them,
// once more for the echo), and without an index each of those walks would read every
// tool's schema again. The scanner is kept for the echo (appendTools).
func (p *parser) toolsOver(v jsonx.Value, sub *jsonx.Scanner) error {
	if !sub.Rebase(v.Raw) { // the walk read v from a view of the same bytes: unreachable
		return translate.Errorf("tools", "must be an array")
	}
	var root jsonx.Value
	root.Set(v.Kind, v.Raw, 0, v.Str)
	body := p.sc
	p.sc = *sub
	err := p.field("tools", root)
	p.toolsSc, p.sc = p.sc, body
	return err
}

// onto moves v, a value read from view, onto s, a copy of view: the same offsets, and
// the strings of s instead of view's (a string decoded into the scanner's memory stays).
func onto(v *jsonx.Value, view, s string) {
	str := v.Str
	if v.Kind == jsonx.String && jsonx.Within(str, view) {
		str = s[v.At+1 : v.At+1+len(str)] // a string without escapes is its literal's contents
	}
	v.Set(v.Kind, s[v.At:v.At+len(v.Raw)], v.At, str)
}

// checkItems reads the input array at the cursor, checking what items checks of it and
// building nothing; false when the array may be refused, or holds what this pass does
// not read.
func (p *parser) checkItems() bool {
	sc := &p.sc
	for i := 0; sc.NextElem(&i); {
		if !p.checkItem() {
			return false
		}
	}
	return !sc.Failed()
}

// checkItem reads the input item at the cursor (item's checks) of the types this pass
// reads: messages of text, function calls and their outputs as strings.
func (p *parser) checkItem() bool {
	var f [itemN]jsonx.Value
	content := -1 // where the content starts
	if !p.readMembers(itemNames, f[:], itemContent, &content) {
		return false
	}
	typ, role := f[itemType], f[itemRole]
	if typ.Kind != jsonx.String && !(typ.Kind == jsonx.Missing && role.Exists()) {
		return false // "is required" (an explicit null too: Str is "")
	}
	switch {
	case typ.Kind == jsonx.Missing || plain(typ.Str) == "message":
		if role.Kind != jsonx.String {
			return false
		}
		switch r := plain(role.Str); r {
		case "user", "system", "developer", "assistant":
			if !p.checkContent(f[itemContent], content, r == translate.RoleAssistant) {
				return false
			}
			if p.turns != nil {
				p.buildMessage(r, f[itemContent])
			}
			return true
		}
		return false
	case plain(typ.Str) == "function_call":
		id, name, args := f[itemCallID], f[itemName], f[itemArguments]
		// A call id that may carry state (translate.CarryID) is opened by items, within
		// the request's allowance; a namespace's function takes the tools' flat name.
		if id.Kind != jsonx.String || id.Str == "" || strings.IndexByte(id.Str, '\\') >= 0 || strings.IndexByte(id.Str, translate.CarrySep[0]) >= 0 {
			return false
		}
		ns := f[itemNamespace].Kind
		if !(name.Kind == jsonx.String && name.Str != "" && args.Kind == jsonx.String && (ns == jsonx.Missing || ns == jsonx.Null)) {
			return false
		}
		if t := p.turns; t != nil { // functionCall's; a plain id carries no state to open
			t.assistant()
			p.calls.Push(translate.ToolCall{ID: id.Str, Name: p.decoded(name.Str), Arguments: p.literal(args.Str)})
		}
		return true
	case plain(typ.Str) == "function_call_output":
		id := f[itemCallID]
		if !(id.Kind == jsonx.String && id.Str != "" && f[itemOutput].Kind == jsonx.String) {
			return false
		}
		if t := p.turns; t != nil { // functionCallOutput's
			t.endTurn()
			m := translate.Message{Role: translate.RoleTool, ToolCallID: p.decoded(id.Str)}
			p.partSlab.Push(translate.Part{Type: translate.PartText, Text: p.literal(f[itemOutput].Str)})
			m.Content = p.partSlab.Run()
			t.closeCalls(&p.calls)
			t.msgs = append(t.msgs, m)
		}
		return true
	}
	return false // reasoning, built-in tool calls, the types only a responses backend serves
}

// buildMessage builds the message item the walk has just checked, of role, whose content
// is content (message's and item's): a string's part is pushed here, an array's parts
// checkContent pushed.
func (p *parser) buildMessage(role string, content jsonx.Value) {
	t := p.turns
	m := translate.Message{Role: role}
	if content.Kind == jsonx.String {
		p.partSlab.Push(translate.Part{Type: translate.PartText, Text: p.literal(content.Str)})
	}
	m.Content = p.partSlab.Run()
	t.closeCalls(&p.calls)
	if role == translate.RoleAssistant {
		a := t.assistant()
		a.Content, a.Refusal = m.Content, m.Refusal
	} else {
		t.endTurn()
		t.msgs = append(t.msgs, m)
	}
}

// decoded returns s, a string's contents as the walk read them, decoded (a member
// ParseWithin and ParseLazy both decode).
func (p *parser) decoded(s string) string {
	if strings.IndexByte(s, '\\') >= 0 {
		return p.sc.DecodeRaw(s, len(p.sc.Input())-p.sc.Pos()) // one arena for the rest
	}
	return s
}

// literal is decoded for a member ParseLazy leaves as written (itemLiterals,
// partLiterals): s as it is when the parse is lazy.
func (p *parser) literal(s string) string {
	if p.lazy {
		return s
	}
	return p.decoded(s)
}

// plain returns s, a string as written, when it has no escape, else "" (which no type or
// role this pass reads is).
func plain(s string) string {
	if strings.IndexByte(s, '\\') >= 0 {
		return ""
	}
	return s
}

// checkContent checks a message's content, v, whose array starts at offset at: a
// string, or an array of text parts of the role's type.
func (p *parser) checkContent(v jsonx.Value, at int, assistant bool) bool {
	switch v.Kind {
	case jsonx.String:
		return true
	case jsonx.Array:
	default:
		return false
	}
	want := "input_text"
	if assistant {
		want = "output_text"
	}
	sc := &p.sc
	end := sc.Pos()
	sc.Seek(at)
	for i := 0; sc.NextElem(&i); {
		var f [partN]jsonx.Value
		if !p.readMembers(partNames, f[:], -1, nil) || f[partType].Kind != jsonx.String || plain(f[partType].Str) != want ||
			f[partText].Kind != jsonx.String {
			return false
		}
		if p.turns != nil { // parts'
			p.partSlab.Push(translate.Part{Type: translate.PartText, Text: p.literal(f[partText].Str)})
		}
	}
	ok := !sc.Failed()
	sc.Seek(end)
	return ok
}

// readMembers reads the object at the cursor as members.Read does (names), its values
// as written; false when it is not an object, is not JSON or breaks the member-name rule.
// When at is a position in names, *start is where that member's value starts.
func (p *parser) readMembers(names members.Names, vals []jsonx.Value, at int, start *int) bool {
	sc := &p.sc
	if sc.Peek() != '{' {
		return false
	}
	var seen members.Set
	for n := 0; sc.NextField(&n); {
		j, code, _ := seen.Member(sc.Key(), names)
		if code != "" {
			return false
		}
		var ok bool
		switch {
		case j < 0:
			ok = sc.Skip()
		case j == at:
			sc.Peek()
			*start = sc.Pos()
			ok = sc.ValueRaw(&vals[j])
		default:
			ok = sc.ValueRaw(&vals[j])
		}
		if !ok {
			return false
		}
	}
	return !sc.Failed()
}
