package messagesin

import (
	"strings"

	"github.com/agate-gateway/agate/internal/jsonx"
	"github.com/agate-gateway/agate/translate"
	"github.com/agate-gateway/agate/translate/internal/members"
)

// ParseHead is the passthrough's validate-only first pass over a Messages body the caller
// owns (ParseOwned's terms): one forward walk that checks the body and reads every
// top-level member but messages into the request as ParsePass does (model, stream,
// max_tokens, system, tools, ...), and checks the messages without building them.
//
// When it can vouch that ParsePass accepts the body, it returns that request incomplete
// (complete false): its Messages are nil and its Body (the chat equivalent) is empty,
// and Build fills them in, in place, for a reader that needs them (a translation, the
// tool loop, the response cache, a token estimate, the ledger's captured text). The
// PassBody is ParsePass's. Otherwise, for any body it refuses and for the messages it
// does not read itself (media, documents, search results, carried tool ids, escaped
// roles or types), it returns ParsePass's result, complete: every error is ParsePass's by
// construction, and FuzzParseHead holds the two passes to agreeing on what they accept.
//
// passes, when not nil, is asked about the model as soon as the walk reads it (before the
// messages when it is written after them: members.ModelAsk). False (the request will be
// translated, and the translation reads the messages) makes the same walk build the
// messages as it checks them, from the values it reads, and ParseHead returns the
// request complete: ParsePass's request, which FuzzParseHead holds it to. The walk reads
// each string once, where ParsePass indexes the body and walks it again member by
// member; what the walk leaves to ParsePass it leaves to it as before. A model read
// after the messages were checked unbuilt that will be translated (the guess before them
// was wrong) ends the first pass there, for the full parse.
//
// It works on its goroutine's stack (some 4 KB of frame): a server parses with a Stage
// (Stage.ParseHead).
//
//go:noinline
func ParseHead(body []byte, maxInflated int, passes func(model string) bool) (req *translate.Request, pass PassBody, complete bool, err error) {
	var st Stage
	return st.ParseHead(body, maxInflated, passes)
}

// ParseHead is the package's ParseHead working in st instead of on the stack.
func (st *Stage) ParseHead(body []byte, maxInflated int, passes func(model string) bool) (req *translate.Request, pass PassBody, complete bool, err error) {
	s := jsonx.View(body)
	if req, pass, built, ok := st.parseHead(s, maxInflated, passes); ok {
		return req, pass, built, nil
	}
	req, pass, err = st.parse(s, true, true, maxInflated)
	return req, pass, true, err
}

// Build completes req, a request ParseHead returned incomplete for body (the same
// bytes, unchanged), in place: afterwards it is the request ParsePass reads from body.
// The error is ParsePass's, which ParseHead's check makes unreachable. It works on its
// goroutine's stack, as ParseHead: a server builds with a Stage (Stage.Build).
//
//go:noinline
func Build(req *translate.Request, body []byte, maxInflated int) error {
	var st Stage
	return st.Build(req, body, maxInflated)
}

// Build is the package's Build working in st instead of on the stack.
func (st *Stage) Build(req *translate.Request, body []byte, maxInflated int) error {
	full, _, err := st.parse(jsonx.View(body), true, true, maxInflated)
	if err != nil {
		return err
	}
	*req = *full
	return nil
}

// parseHead is ParseHead's first pass, in st; ok is false when it cannot vouch for s,
// built true when it built the messages (the request is complete). The walk (walk) and
// what follows it (complete) are functions of their own, so that the frame under the
// walk's deepest calls is the walk's alone.
func (st *Stage) parseHead(s string, maxInflated int, passes func(string) bool) (req *translate.Request, pass PassBody, built, ok bool) {
	if !jsonx.ValidUTF8(s) {
		return nil, PassBody{}, false, false
	}
	// The request is made once the walk has vouched for the body.
	st.start(s, maxInflated, true)
	messages, ok := st.walk(s, passes)
	if !ok {
		return nil, PassBody{}, false, false
	}
	return st.complete(s, messages)
}

// walk is parseHead's walk over s: it checks the body, collecting its top-level members
// in st.fields[:st.n] (tools and system indexed in st.tools and st.system, their roots in
// st.roots) and checking the messages (building them when the model will be translated).
// messages counts the messages that certainly become core messages; ok is false when
// the walk cannot vouch for s.
//
//go:noinline
func (st *Stage) walk(s string, passes func(string) bool) (messages int, ok bool) {
	p := &st.p
	sc := &p.sc
	if sc.Peek() != '{' {
		return 0, false
	}
	st.n, st.seen, st.ask = 0, members.Set{}, members.ModelAsk{Passes: passes}
	// tools and system are read member by member (Get): each over an index of its own,
	// made as the walk reads it (jsonx.IndexValue), as parse reads them over the body's.
	walked := false // the messages were checked
	for n := 0; sc.NextField(&n); {
		k := sc.Key()
		if _, code, _ := st.seen.Member(k, topLevelNames); code != "" || st.n == len(st.fields) {
			return 0, false
		}
		f := &st.fields[st.n]
		st.n++
		f.Name, f.V = k, jsonx.Value{}
		v := &f.V
		var ok bool
		sc.Peek()
		at := sc.Pos()
		switch k {
		case "tools":
			ok = st.index(&st.tools, &st.roots[0], v, at)
		case "system":
			ok = st.index(&st.system, &st.roots[1], v, at)
		case "messages":
			// A model written after the messages is asked about before they are checked:
			// one that will be translated has them built.
			p.build = p.build || !st.ask.Ahead(s)
			ok = true
		default:
			ok = sc.Value(v)
		}
		if !ok {
			return 0, false
		}
		if k == "model" && v.Kind == jsonx.String && !st.ask.Model(v.Str) {
			if walked && !p.build {
				return 0, false
			}
			p.build = true
		}
		if k != "messages" {
			continue
		}
		var vouched bool
		if messages, vouched = p.checkMessages(); !vouched {
			return 0, false
		}
		walked = true
		v.Set(jsonx.Array, s[at:sc.Pos()], at, "")
	}
	if sc.Failed() || !sc.AtEnd() {
		return 0, false
	}
	return messages, true
}

// index indexes the value at the cursor, which starts at at, into sub (jsonx.IndexValue),
// its root into root, and sets v to where PassBody finds it.
//
//go:noinline
func (st *Stage) index(sub *jsonx.Scanner, root, v *jsonx.Value, at int) (ok bool) {
	*sub, *root, ok = st.p.sc.IndexValue()
	v.Set(root.Kind, root.Raw, at, root.Str)
	return ok
}

// complete is parseHead's end, once the walk vouched for s: the other members are read
// as parse reads them, by the same code, into the request.
//
//go:noinline
func (st *Stage) complete(s string, messages int) (req *translate.Request, pass PassBody, built, ok bool) {
	p := &st.p
	fields := st.fields[:st.n]
	req = &translate.Request{IncludeUsage: true}
	p.req = req
	for i := range fields { // by pointer: a Member is 64 bytes
		f := &fields[i]
		if f.Name == "messages" {
			p.hasMessages = true
			continue
		}
		switch f.Name {
		case "tools":
			p.fieldOver(&st.tools, f.Name, st.roots[0])
		case "system":
			p.fieldOver(&st.system, f.Name, st.roots[1])
		default:
			p.field(f.Name, f.V)
		}
		if p.err != nil {
			return nil, PassBody{}, false, false
		}
	}
	if p.effort != "" && p.thinkingType != "disabled" {
		req.ReasoningEffort = p.effort
	}
	if req.Model == "" || !p.hasMessages || !p.hasMaxTokens || messages == 0 {
		return nil, PassBody{}, false, false
	}
	if p.build { // as parse completes its request
		req.Messages = p.built
		if len(p.system) > 0 {
			req.Messages = append(req.Messages, translate.Message{})
			copy(req.Messages[1:], req.Messages)
			req.Messages[0] = translate.Message{Role: translate.RoleSystem, Content: p.system}
		}
		req.Body, req.Edited = jsonx.View(appendChatBody(make([]byte, 0, 256), req)), true
	}
	req.Literals = s
	return req, passBody(s, fields), p.build, true
}

// fieldOver is field for the top-level member k, whose value v was read by sub (its
// own scanner, jsonx.IndexValue). Never inlined: its scanners' copies would be in
// parseHead's frame, under the whole walk.
//
//go:noinline
func (p *parser) fieldOver(sub *jsonx.Scanner, k string, v jsonx.Value) {
	body := p.sc
	p.sc = *sub
	p.field(k, v)
	*sub, p.sc = p.sc, body
}

// checkMessages reads the messages array at the cursor, checking what parse checks of
// it, and building the core messages into p.built when p.build is set. n counts the
// messages that certainly become core messages; ok is false when the array may be
// refused, or holds what this pass does not read.
func (p *parser) checkMessages() (n int, ok bool) {
	sc := &p.sc
	if sc.Peek() != '[' {
		return 0, false
	}
	if p.build {
		// About one core message per 250 bytes of an agentic history (scenario d's: 41
		// in 11 KB, 421 in 104 KB); append grows it.
		p.built = make([]translate.Message, 0, 8+(len(sc.Input())-sc.Pos())/224)
		p.heads = make([]builtBlock, 0, 8) // a message's blocks: 2-5 in an agentic history
	}
	for i := 0; sc.NextElem(&i); {
		one, ok := p.checkMessage()
		if !ok {
			return 0, false
		}
		n += one
	}
	return n, !sc.Failed()
}

// checkMessage reads the message at the cursor (message's checks): one when it certainly
// becomes a core message.
func (p *parser) checkMessage() (one int, ok bool) {
	sc := &p.sc
	if sc.Peek() != '{' {
		return 0, false
	}
	var role jsonx.Value
	var early [roleN]verdict // checkContentAll's, when the content came before the role
	pending := false
	checked := false
	if p.build {
		p.heads, p.content = p.heads[:0], jsonx.Value{}
	}
	for k := 0; sc.NextField(&k); {
		switch sc.Key() {
		case "role":
			if role.Kind != jsonx.Missing {
				ok = sc.Skip() // the first of a name wins (Members)
			} else {
				ok = sc.ValueRaw(&role)
			}
		case "content":
			at := sc.Pos()
			switch {
			case checked || pending:
				ok = sc.Skip()
			case role.Kind != jsonx.Missing:
				one, ok = p.checkContent(role)
				checked = true
			default:
				// Read once for every role, not skipped and read again once the role
				// is known: SDKs writing their members sorted put content first.
				early, ok = p.checkContentAll()
				pending = true
			}
			if ok && p.build && p.content.Kind == jsonx.Missing {
				p.content = contentAt(sc.Input(), at, sc.Pos())
			}
		default:
			ok = sc.Skip()
		}
		if !ok {
			return 0, false
		}
	}
	if sc.Failed() {
		return 0, false
	}
	if pending { // the content came first: checkContent's verdict for the role read since
		r := roleOf(role)
		if r < 0 || !early[r].ok {
			return 0, false
		}
		one, checked = early[r].one, true
	}
	if checked && p.build {
		p.commit(roleOf(role))
	}
	return one, checked
}

// contentAt returns the message content s[at:end] (a value checkContent or
// checkContentAll read, so a string, null or an array) as a Value, a string's Str as
// written (ValueRaw's).
func contentAt(s string, at, end int) jsonx.Value {
	for at < end && (s[at] == ' ' || s[at] == '\t' || s[at] == '\n' || s[at] == '\r') {
		at++
	}
	var v jsonx.Value
	switch s[at] {
	case '"':
		v.Set(jsonx.String, s[at:end], at, s[at+1:end-1])
	case '[':
		v.Set(jsonx.Array, s[at:end], at, "")
	default:
		v.Set(jsonx.Null, s[at:end], at, "")
	}
	return v
}

// The roles whose content the first pass reads, as positions in checkContentAll's
// verdicts.
const (
	roleSystem = iota
	roleUser
	roleAssistant
	roleN
)

// roleOf returns role's position among the roles checkContent reads, or -1 (not a
// string, escaped, or another role: left to parse).
func roleOf(role jsonx.Value) int {
	if role.Kind != jsonx.String {
		return -1
	}
	switch role.Str {
	case "system":
		return roleSystem
	case "user":
		return roleUser
	case "assistant":
		return roleAssistant
	}
	return -1
}

// verdict is what checkContent returns of a content for one role.
type verdict struct {
	one int
	ok  bool
}

// checkContentAll reads a message's content at the cursor once, for a role not read yet,
// and returns what checkContent(role) would return at the cursor for each role roleOf
// knows. When any verdict is ok, the cursor is after the content.
func (p *parser) checkContentAll() (v [roleN]verdict, ok bool) {
	sc := &p.sc
	switch sc.Peek() {
	case '"': // checkText's and checkBlocks' string
		at := sc.Pos()
		if !sc.SkipString() {
			return v, false
		}
		if sc.Pos()-at > 2 { // not "": a system message's part
			v[roleSystem].one = 1
		}
		v[roleSystem].ok = true
		v[roleUser], v[roleAssistant] = verdict{1, true}, verdict{1, true}
		return v, true
	case 'n': // only checkText takes null
		var n jsonx.Value
		if !sc.Value(&n) || n.Kind != jsonx.Null {
			return v, false
		}
		v[roleSystem].ok = true
		return v, true
	case '[':
		alive := [roleN]bool{true, true, true}
		for i := 0; sc.NextElem(&i); {
			var b blockHead
			if !p.readBlock(&b) {
				return [roleN]verdict{}, false
			}
			if p.build {
				p.heads = append(p.heads, builtBlock{b, p.more})
			}
			if alive[roleSystem] { // checkText's block
				alive[roleSystem] = b.typeIs("text") && b.is(bhText) && b.cacheOK()
				v[roleSystem].one = 1
			}
			if alive[roleUser] {
				var counts bool
				counts, alive[roleUser] = p.checkUserBlock(&b)
				if counts {
					v[roleUser].one = 1
				}
			}
			if alive[roleAssistant] {
				var counts bool
				counts, alive[roleAssistant] = p.checkAssistantBlock(&b)
				if counts {
					v[roleAssistant].one = 1
				}
			}
			if alive == [roleN]bool{} {
				return [roleN]verdict{}, false
			}
		}
		if sc.Failed() {
			return [roleN]verdict{}, false
		}
		for r := range v {
			v[r].ok = alive[r]
		}
		return v, true
	}
	return v, false
}

// checkContent reads a message's content at the cursor, for role.
func (p *parser) checkContent(role jsonx.Value) (one int, ok bool) {
	if role.Kind != jsonx.String {
		return 0, false
	}
	switch role.Str { // escaped roles are left to parse
	case "system":
		return p.checkText()
	case "user":
		return p.checkBlocks(true)
	case "assistant":
		return p.checkBlocks(false)
	}
	return 0, false
}

// checkText reads a system message's content at the cursor (text's checks): a string, null,
// or an array of text blocks.
func (p *parser) checkText() (one int, ok bool) {
	sc := &p.sc
	switch sc.Peek() {
	case '"':
		at := sc.Pos()
		if !sc.SkipString() {
			return 0, false
		}
		if sc.Pos()-at > 2 { // not "": a part
			one = 1
		}
		return one, true
	case 'n':
		var v jsonx.Value
		return 0, sc.Value(&v) && v.Kind == jsonx.Null
	case '[':
		for i := 0; sc.NextElem(&i); {
			var b blockHead
			if !p.readBlock(&b) || !b.typeIs("text") || !b.is(bhText) || !b.cacheOK() {
				return 0, false
			}
			if p.build {
				p.heads = append(p.heads, builtBlock{b, p.more})
			}
			one = 1
		}
		return one, !sc.Failed()
	}
	return 0, false
}

// checkBlocks reads a user or assistant message's content at the cursor: a string (a
// core message), or an array of content blocks, each checked by checkUserBlock (user) or
// checkAssistantBlock, which report whether the block makes the message a core message.
func (p *parser) checkBlocks(user bool) (one int, ok bool) {
	sc := &p.sc
	switch sc.Peek() {
	case '"':
		return 1, sc.SkipString()
	case '[':
		for i := 0; sc.NextElem(&i); {
			var b blockHead
			if !p.readBlock(&b) {
				return 0, false
			}
			if p.build {
				p.heads = append(p.heads, builtBlock{b, p.more})
			}
			var counts bool
			if user {
				counts, ok = p.checkUserBlock(&b)
			} else {
				counts, ok = p.checkAssistantBlock(&b)
			}
			if !ok {
				return 0, false
			}
			if counts {
				one = 1
			}
		}
		return one, !sc.Failed()
	}
	return 0, false
}

// checkUserBlock checks a user message's block (user's, part's and toolResult's checks)
// of the types this pass reads: text and tool_result.
func (p *parser) checkUserBlock(b *blockHead) (counts, ok bool) {
	switch {
	case b.typeIs("text"):
		return true, b.is(bhText) && b.cacheOK()
	case b.typeIs("tool_result"):
		if !b.is(bhToolUseID) || !b.cacheOK() {
			return false, false
		}
		sc := &p.sc
		if b.content < 0 || sc.Input()[b.content] == '"' {
			return true, true // a string content: readBlock's Skip checked it as SkipString does
		}
		end := sc.Pos()
		sc.Seek(b.content)
		ok = p.checkResultContent()
		sc.Seek(end)
		return true, ok
	}
	return false, false // image, document, search_result... are left to parse
}

// checkResultContent reads a tool_result's content at the cursor: a string, null, or an
// array of text blocks.
func (p *parser) checkResultContent() bool {
	sc := &p.sc
	switch sc.Peek() {
	case '"':
		return sc.SkipString()
	case 'n':
		var v jsonx.Value
		return sc.Value(&v) && v.Kind == jsonx.Null
	case '[':
		for i := 0; sc.NextElem(&i); {
			var b blockHead
			if !p.readBlock(&b) || !b.typeIs("text") || !b.is(bhText) || !b.cacheOK() {
				return false
			}
		}
		return !sc.Failed()
	}
	return false
}

// checkAssistantBlock checks an assistant message's block (assistant's checks).
func (p *parser) checkAssistantBlock(b *blockHead) (counts, ok bool) {
	typ := b.v[bhType]
	if typ.Kind != jsonx.String || typ.Str == "" || strings.IndexByte(typ.Str, '\\') >= 0 {
		return false, false // "is required", or escaped: left to parse
	}
	switch typ.Str {
	case "text":
		return true, b.is(bhText) && b.cacheOK()
	case "tool_use":
		// An id that may carry state (translate.CarryID, as a client sees it: ClientToolID)
		// is opened by parse, within the request's allowance.
		id := b.v[bhID].Str
		if !b.is(bhID) || strings.IndexByte(id, '\\') >= 0 || strings.IndexByte(id, translate.CarrySep[0]) >= 0 ||
			strings.Contains(id, toolIDTilde) {
			return false, false
		}
		return true, b.is(bhName)
	case "thinking", "redacted_thinking":
		return true, true
	}
	return false, true // server_tool_use and its results are the upstream's own business
}

// Members of a content block the first pass reads: their names, and their positions in
// blockHead.v.
const (
	bhType = iota
	bhText
	bhName
	bhID
	bhToolUseID
	bhCache
	bhN
)

var blockHeadNames = [bhN]string{"type", "text", "name", "id", "tool_use_id", "cache_control"}

// The members of a content block the first pass reads besides when it builds the
// messages, and their positions in builtBlock.more (and parser.more).
const (
	bxInput = iota
	bxThinking
	bxSignature
	bxData
	bxIsError
	bxN
)

var builtBlockNames = [bxN]string{"input", "thinking", "signature", "data", "is_error"}

// builtBlock is a content block as the walk that builds the messages keeps it until the
// message's role is known: its head, and the members only a build reads. (The check
// alone reads into a blockHead, which stays small: every block's is zeroed.)
type builtBlock struct {
	blockHead
	more [bxN]jsonx.Value
}

// blockHead is what the first pass reads of a content block: the first member of each
// name (Members' rule), strings as written, and where its content starts (-1: none).
type blockHead struct {
	v       [bhN]jsonx.Value
	content int
}

// typeIs reports whether the block's type is t, as written (an escaped type is not).
func (b *blockHead) typeIs(t string) bool {
	return b.v[bhType].Kind == jsonx.String && b.v[bhType].Str == t
}

// is reports whether the block's member at position i is a string.
func (b *blockHead) is(i int) bool { return b.v[i].Kind == jsonx.String }

// cacheOK reports whether the block's cache_control passes (cacheControl).
func (b *blockHead) cacheOK() bool {
	k := b.v[bhCache].Kind
	return k == jsonx.Object || k == jsonx.Missing || k == jsonx.Null
}

// blockMember returns the position of the member name k in blockHeadNames, or -1: by its
// length first, so that most names cost one compare.
func blockMember(k string) int {
	first, last := 0, 0 // the names of k's length
	switch len(k) {
	case 2:
		first, last = bhID, bhID
	case 4:
		first, last = bhType, bhName
	case 11:
		first, last = bhToolUseID, bhToolUseID
	case 13:
		first, last = bhCache, bhCache
	default:
		return -1
	}
	for i := first; i <= last; i++ {
		if k == blockHeadNames[i] {
			return i
		}
	}
	return -1
}

// buildMember is blockMember for builtBlockNames, which the walk reads when it builds
// the messages.
func buildMember(k string) int {
	for i, name := range builtBlockNames {
		if k == name {
			return i
		}
	}
	return -1
}

// readBlock reads the content block at the cursor into b, and when the walk builds the
// messages, the members of builtBlockNames into p.more; false when it is not an object
// (which parse refuses) or not JSON.
func (p *parser) readBlock(b *blockHead) bool {
	sc := &p.sc
	b.content = -1
	if p.build {
		p.more = [bxN]jsonx.Value{}
	}
	if sc.Peek() != '{' {
		return false
	}
	for k := 0; ; k++ {
		key, more := p.nextBlockMember(k)
		if !more {
			return !sc.Failed()
		}
		if key == "content" && b.content < 0 {
			sc.Peek()
			b.content = sc.Pos()
		}
		var v *jsonx.Value
		if i := blockMember(key); i >= 0 {
			v = &b.v[i]
		} else if p.build {
			if i = buildMember(key); i >= 0 {
				v = &p.more[i]
			}
		}
		var ok bool
		if v == nil || v.Kind != jsonx.Missing {
			ok = sc.Skip()
		} else {
			ok = sc.ValueRaw(v)
		}
		if !ok {
			return false
		}
	}
}

// nextBlockMember moves to a content block's next member, the member before it its k-th (k
// 0: the block's first), and returns its name; more is false after the closing brace or
// on a syntax error (NextField's terms). The names the SDKs write compactly in a block,
// in their order or sorted, and the block's end, are matched as words (MemberIs, EndIs)
// before NextField reads a name.
func (p *parser) nextBlockMember(k int) (key string, more bool) {
	sc := &p.sc
	if k == 0 {
		switch {
		case sc.MemberIs(`{"content":`):
			return "content", true
		case sc.MemberIsShort(`{"id":`):
			return "id", true
		case sc.MemberIs(`{"type":`):
			return "type", true
		}
	} else {
		switch {
		case sc.EndIs('}'):
			return "", false
		case sc.MemberIs(`,"type":`):
			return "type", true
		case sc.MemberIs(`,"name":`):
			return "name", true
		case sc.MemberIs(`,"input":`):
			return "input", true
		case sc.MemberIs(`,"tool_use_id":`):
			return "tool_use_id", true
		}
	}
	if !sc.NextField(&k) {
		return "", false
	}
	return sc.Key(), true
}

// cacheRaw is cacheControl for a block the walk checked (cacheOK).
func cacheRaw(v jsonx.Value) string {
	if v.Kind == jsonx.Object {
		return v.Raw
	}
	return ""
}

// decoded returns the string value v, read as written, decoded (parse's dec).
func (p *parser) decoded(v jsonx.Value) string {
	if v.Kind == jsonx.String && strings.IndexByte(v.Str, '\\') >= 0 {
		return p.sc.DecodeRaw(v.Str, 256)
	}
	return v.Str
}

// commit builds the core messages of the message the walk has just checked, whose role
// is r (roleOf's), from its content (p.content) and its blocks (p.heads), as message
// builds them from the same values; only the blocks the check vouched for for r are
// there (checkText, checkUserBlock, checkAssistantBlock).
func (p *parser) commit(r int) {
	// One function a role, never inlined: their temporaries (parts, messages, blocks)
	// would all be in one frame, under the walk's deepest calls.
	switch r {
	case roleSystem:
		p.commitSystem(p.content)
	case roleUser:
		p.commitUser(p.content)
	case roleAssistant:
		p.commitAssistant(p.content)
	}
}

// commitSystem is commit for a system message, whose content is c (text's).
//
//go:noinline
func (p *parser) commitSystem(c jsonx.Value) {
	switch c.Kind {
	case jsonx.String:
		if c.Str != "" {
			p.parts.Push(translate.Part{Type: translate.PartText, Text: c.Str})
		}
	case jsonx.Array:
		for i := range p.heads {
			b := &p.heads[i]
			p.parts.Push(translate.Part{Type: translate.PartText, Text: b.v[bhText].Str, CacheControl: cacheRaw(b.v[bhCache])})
		}
	}
	if parts := p.parts.Run(); len(parts) > 0 {
		p.built = append(p.built, translate.Message{Role: translate.RoleSystem, Content: parts})
	}
}

// commitUser is commit for a user message, whose content is c (user's).
//
//go:noinline
func (p *parser) commitUser(c jsonx.Value) {
	if c.Kind == jsonx.String {
		p.parts.Push(translate.Part{Type: translate.PartText, Text: c.Str})
		p.built = append(p.built, translate.Message{Role: translate.RoleUser, Content: p.parts.Run()})
		return
	}
	for i := range p.heads {
		b := &p.heads[i]
		if b.typeIs("tool_result") {
			p.result(b)
			continue
		}
		// text: part's
		p.parts.Push(translate.Part{Type: translate.PartText, Text: b.v[bhText].Str, CacheControl: cacheRaw(b.v[bhCache])})
	}
	if parts := p.parts.Run(); len(parts) > 0 {
		p.built = append(p.built, translate.Message{Role: translate.RoleUser, Content: parts})
	}
}

// commitAssistant is commit for an assistant message, whose content is c (assistant's).
//
//go:noinline
func (p *parser) commitAssistant(c jsonx.Value) {
	m := translate.Message{Role: translate.RoleAssistant}
	if c.Kind == jsonx.String {
		p.parts.Push(translate.Part{Type: translate.PartText, Text: c.Str})
		m.Content = p.parts.Run()
		p.built = append(p.built, m)
		return
	}
	var reasoning []string
	for i := range p.heads {
		b := &p.heads[i]
		switch b.v[bhType].Str {
		case "text":
			p.parts.Push(translate.Part{Type: translate.PartText, Text: b.v[bhText].Str, CacheControl: cacheRaw(b.v[bhCache])})
		case "tool_use":
			args := "{}"
			if in := b.more[bxInput]; in.Kind == jsonx.Object {
				args = p.rawArgs(in.Raw)
			}
			// The check took no id that may carry state: nothing to open.
			p.calls.Push(translate.ToolCall{ID: CoreToolID(b.v[bhID].Str), Name: p.decoded(b.v[bhName]), Arguments: args})
		case "thinking":
			t := p.decoded(b.more[bxThinking])
			reasoning = append(reasoning, t)
			m.ThinkingBlocks = append(m.ThinkingBlocks, translate.ThinkingBlock{Type: "thinking", Thinking: t, Signature: p.decoded(b.more[bxSignature])})
		case "redacted_thinking":
			m.ThinkingBlocks = append(m.ThinkingBlocks, translate.ThinkingBlock{Type: "redacted_thinking", Data: p.decoded(b.more[bxData])})
		}
	}
	m.Content, m.ToolCalls = p.parts.Run(), p.calls.Run()
	m.Reasoning = strings.Join(reasoning, "")
	if len(m.Content) > 0 || len(m.ToolCalls) > 0 || len(m.ThinkingBlocks) > 0 {
		p.built = append(p.built, m)
	}
}

// result builds the core tool message of the tool_result block b (toolResult's); its
// content, which the check read (checkResultContent), is read again from where it starts.
func (p *parser) result(b *builtBlock) {
	m := translate.Message{Role: translate.RoleTool, ToolCallID: CoreToolID(p.decoded(b.v[bhToolUseID])),
		ToolError: b.more[bxIsError].Kind == jsonx.True}
	if b.content >= 0 {
		sc := &p.sc
		end := sc.Pos()
		sc.Seek(b.content)
		switch sc.Peek() {
		case '"':
			var v jsonx.Value
			sc.ValueRaw(&v)
			p.inner.Push(translate.Part{Type: translate.PartText, Text: v.Str})
		case '[':
			for i := 0; sc.NextElem(&i); {
				var ib blockHead
				p.readBlock(&ib)
				p.inner.Push(translate.Part{Type: translate.PartText, Text: ib.v[bhText].Str, CacheControl: cacheRaw(ib.v[bhCache])})
			}
		}
		sc.Seek(end)
	}
	if p.inner.Len() == 0 {
		p.inner.Push(translate.Part{Type: translate.PartText, Text: ""})
	}
	if cc := cacheRaw(b.v[bhCache]); cc != "" {
		p.inner.Last().CacheControl = cc
	}
	m.Content = p.inner.Run()
	p.built = append(p.built, m)
}
