package openaichat

import (
	"strings"

	"github.com/agate-gateway/agate/internal/jsonx"
	"github.com/agate-gateway/agate/translate"
)

// The message half of ParseRequest: messages, their content parts, tool calls and thinking
// blocks. See parse.go for the request as a whole.

// messageValues is what a message's members hold, read by messageMember.
//
// The message itself is built in place in the parser's message stash, in the entry
// p.msgs.slot returns until it is kept (stash.push) once it has passed its checks. It is
// not pointed to from here: escape analysis does not tell a struct's fields apart, so a
// pointer into the parser beside the values stored through it would move the parser to
// the heap.
type messageValues struct {
	i int // the message's index
	// content is read after the other fields, once the role is known.
	role, content jsonx.Value
}

// messageRole reads a message's role into o.role as sc.Value reads it (readMessage's
// role), the common roles by a compare of the literal at the cursor (MemberIs's value
// form: a match is the whole string, which has no escape).
func (p *parser) messageRole(o *messageValues) bool {
	sc := &p.sc
	if at := sc.Pos(); sc.MemberIs(`"assistant"`) || sc.MemberIsShort(`"tool"`) || sc.MemberIsShort(`"user"`) {
		s := sc.Input()
		o.role.Set(jsonx.String, s[at:sc.Pos()], at, s[at+1:sc.Pos()-1])
		return true
	}
	return sc.Value(&o.role)
}

func (p *parser) message(i int) bool {
	if p.sc.Peek() != '{' {
		return p.fail(translate.ParamIndex("messages", i), "each message must be an object")
	}
	pm := p.msgs.slot()
	*pm = pendingMessage{}
	o := messageValues{i: i}
	msg, role, content := &pm.msg, &o.role, &o.content
	// The orders the SDKs write a message's members in are tried first (see members.table);
	// any other member, whitespace or order takes NextField.
	if !p.readMessage(&o, func() string { return translate.ParamIndex("messages", i) }) {
		return false
	}
	if role.Kind != jsonx.String {
		return p.fail(translate.ParamIndex("messages", i)+".role", "role is required and must be a string")
	}
	switch role.Str {
	case translate.RoleSystem, translate.RoleDeveloper, translate.RoleUser, translate.RoleAssistant, translate.RoleTool:
		msg.Role = role.Str
	default:
		return p.fail(translate.ParamIndex("messages", i)+".role", "unknown role %q: use system, developer, user, assistant or tool", role.Str)
	}
	if len(msg.ToolCalls) > 0 && msg.Role != translate.RoleAssistant {
		return p.fail(translate.ParamIndex("messages", i)+".tool_calls", "only assistant messages may carry tool_calls")
	}
	start := p.parts.n
	if content.Kind != jsonx.Missing && content.Kind != jsonx.Null && !p.content(i, msg, content) {
		return false
	}
	switch msg.Role {
	case translate.RoleTool:
		if msg.ToolCallID == "" {
			return p.fail(translate.ParamIndex("messages", i)+".tool_call_id", "tool messages need tool_call_id")
		}
	case translate.RoleAssistant:
		if content.Kind == jsonx.Missing && len(msg.ToolCalls) == 0 && msg.Refusal == "" {
			return p.fail(translate.ParamIndex("messages", i)+".content", "assistant messages need content or tool_calls")
		}
	default:
		if content.Kind == jsonx.Missing || content.Kind == jsonx.Null {
			return p.fail(translate.ParamIndex("messages", i)+".content", "%s messages need content", msg.Role)
		}
	}
	pm.start, pm.end = start, p.parts.n
	p.msgs.push()
	return true
}

// messageMember reads the member at position f of the message o (readMessage), but role,
// content and tool_calls, which readMessage reads itself.
func (p *parser) messageMember(f int, o *messageValues) bool {
	sc, msg := &p.sc, &p.msgs.slot().msg
	var v jsonx.Value
	switch {
	case sc.Peek() == 'n':
		return sc.Literal("null")
	case f == mName, f == mToolCallID:
		dst := &msg.Name
		if f == mToolCallID {
			dst = &msg.ToolCallID
		}
		if !sc.Value(&v) {
			return false
		}
		if v.Kind != jsonx.String {
			return p.fail(translate.ParamIndex("messages", o.i)+"."+messageNames.Name(f), "must be a string")
		}
		*dst = v.Str
	case f == mReasoningContent, f == mRefusal:
		dst := &msg.Reasoning
		if f == mRefusal {
			dst = &msg.Refusal
		}
		if !p.payload(&v) {
			return false
		}
		if v.Kind == jsonx.String {
			*dst = v.Str
		}
	case f == mThinkingBlocks:
		return p.thinkingBlocks(func() string { return translate.ParamIndex("messages", o.i) + ".thinking_blocks" }, msg)
	default:
		return sc.Skip()
	}
	return true
}

// thinkingBlocks reads a message's thinking_blocks the way gjson's ForEach walked them:
// each element of an array, each member of an object, or a single scalar; whatever is not
// an object yields an empty block.
func (p *parser) thinkingBlocks(base func() string, msg *translate.Message) bool {
	sc := &p.sc
	switch sc.Peek() {
	case '[':
		for n := 0; sc.NextElem(&n); {
			if !p.thinkingBlock(func() string { return translate.ParamIndex(base(), n-1) }, msg) {
				return false
			}
		}
	case '{':
		var seen keySet
		for n := 0; sc.NextField(&n); {
			key := sc.Key()
			if !p.member(&seen, base, noNames) || !p.thinkingBlock(func() string { return base() + "." + key }, msg) {
				return false
			}
		}
	default:
		return p.thinkingBlock(base, msg)
	}
	return !sc.Failed()
}

func (p *parser) thinkingBlock(base func() string, msg *translate.Message) bool {
	sc := &p.sc
	var typ, thinking, signature, data jsonx.Value
	if sc.Peek() != '{' {
		if !sc.Skip() {
			return false
		}
	} else if !p.fields(base, want{"type", &typ}, want{"thinking", &thinking}, want{"signature", &signature}, want{"data", &data}) {
		return false
	}
	msg.ThinkingBlocks = append(msg.ThinkingBlocks, translate.ThinkingBlock{
		Type: typ.Str, Thinking: thinking.Str, Signature: signature.Str, Data: data.Str,
	})
	return true
}

// content reads a message's content, v, after the message's other fields.
func (p *parser) content(i int, msg *translate.Message, v *jsonx.Value) bool {
	if v.Kind == jsonx.String {
		p.parts.add(&translate.Part{Type: translate.PartText, Text: v.Str})
		return true
	}
	if v.Kind != jsonx.Array {
		return p.fail(translate.ParamIndex("messages", i)+".content", "must be a string or an array of content parts")
	}
	// Read the array again from its start; the scanner has checked it already.
	sc := &p.sc
	resume := sc.Pos()
	sc.Seek(v.At)
	for n := 0; sc.NextElem(&n); {
		if !p.part(i, n-1, msg) {
			return false
		}
	}
	sc.Seek(resume)
	return true
}

// part reads content part j of message i.
func (p *parser) part(i, j int, msg *translate.Message) bool {
	o := partValues{i: i, j: j}
	param := o.param
	if p.sc.Peek() != '{' {
		return p.fail(param(), "each content part must be an object")
	}
	if !p.readPart(&o, param) {
		return false
	}
	var part translate.Part
	switch o.typ.Str {
	case "text":
		if o.text.Kind != jsonx.String {
			return p.fail(param()+".text", "text parts need a string text")
		}
		part = translate.Part{Type: translate.PartText, Text: o.text.Str}
	case "image_url":
		if o.image.Kind == jsonx.String { // a lenient shape some clients send
			o.url = o.image
		}
		if o.url.Kind != jsonx.String || o.url.Str == "" {
			return p.fail(param()+".image_url.url", "image_url parts need image_url.url")
		}
		part = translate.Part{Type: translate.PartImage, Media: &translate.Media{URL: o.url.Str, Detail: o.detail.Str}}
	case "file":
		part = translate.Part{Type: translate.PartFile, Media: &translate.Media{FileData: o.fileData.Str, FileID: o.fileID.Str, Filename: o.filename.Str}}
		if part.Media.FileData == "" && part.Media.FileID == "" {
			return p.fail(param()+".file", "file parts need file.file_data or file.file_id")
		}
	case "input_audio":
		part = translate.Part{Type: translate.PartAudio, Media: &translate.Media{AudioData: o.audio.Str, AudioFormat: o.format.Str}}
		if part.Media.AudioData == "" {
			return p.fail(param()+".input_audio.data", "input_audio parts need input_audio.data")
		}
	case "refusal":
		if msg.Role != translate.RoleAssistant {
			return p.fail(param()+".type", "refusal parts are only allowed in assistant messages")
		}
		part = translate.Part{Type: translate.PartRefusal, Text: o.refusal.Str}
	default:
		return p.fail(param()+".type", "unknown content part type %q", o.typ.Str)
	}
	if part.Type != translate.PartText && part.Type != translate.PartRefusal && msg.Role != translate.RoleUser {
		return p.fail(param()+".type", "%s parts are only allowed in user messages", o.typ.Str)
	}
	p.parts.add(&part)
	return true
}

// partValues is what a content part's members hold, read by partMember. The first of
// duplicate keys wins, as with gjson's Get.
type partValues struct {
	typ, text, image, url, detail, fileData, fileID, filename, audio, format, refusal jsonx.Value
	sawImage, sawFile, sawAudio                                                       bool
	i, j                                                                              int // part j of message i
}

// param is the part's param path. (A closure kept in partValues would be allocated: the
// values' strings go into the request, and escape analysis follows the struct as a whole.)
func (o *partValues) param() string {
	return translate.ParamIndex(translate.ParamIndex("messages", o.i)+".content", o.j)
}

// partMember reads the member at position f of the content part o (readPart), but type,
// text and refusal, which readPart reads itself.
func (p *parser) partMember(f int, o *partValues) bool {
	sc := &p.sc
	switch f {
	case ptImageURL:
		saw := o.sawImage
		o.sawImage = true
		switch {
		case saw:
			return sc.Skip()
		case sc.Peek() != '{':
			return sc.Value(&o.image)
		}
		return p.fields(func() string { return o.param() + ".image_url" }, want{"url", &o.url}, want{"detail", &o.detail})
	case ptFile:
		return p.firstFields(&o.sawFile, func() string { return o.param() + ".file" }, want{"file_data", &o.fileData},
			want{"file_id", &o.fileID}, want{"filename", &o.filename})
	case ptInputAudio:
		return p.firstFields(&o.sawAudio, func() string { return o.param() + ".input_audio" }, want{"data", &o.audio}, want{"format", &o.format})
	}
	return sc.Skip()
}

// want names an object member to read and where to put its value.
type want struct {
	key string
	dst *jsonx.Value
}

// fields reads the object at the cursor, whose param path base returns, putting the value
// of each wanted member in its place and skipping the rest. A repeated member name, or one
// that equals a wanted name only ignoring case, is an error.
func (p *parser) fields(base func() string, wants ...want) bool {
	sc := &p.sc
	var seen keySet
	for n := 0; sc.NextField(&n); {
		if !p.memberOf(&seen, base, wants) {
			return false
		}
		i := 0
		for i < len(wants) && wants[i].key != sc.Key() {
			i++
		}
		if i < len(wants) && !sc.First(wants[i].dst) || i == len(wants) && !sc.Skip() {
			return false
		}
	}
	return !sc.Failed()
}

// firstFields reads the object at the cursor with fields the first time its member is met
// (*saw false), as gjson's Get took the first; a later one, or a value that is not an
// object, is skipped.
func (p *parser) firstFields(saw *bool, base func() string, wants ...want) bool {
	first := !*saw
	*saw = true
	if !first || p.sc.Peek() != '{' {
		return p.sc.Skip()
	}
	return p.fields(base, wants...)
}

// schema reads the JSON Schema object at the cursor into v, as Value reads it, and sets
// *typed when the object has a member named type (translate.Tool.ParametersTyped): the
// same walk over its members as Value's, which notes their names on the way.
func (p *parser) schema(v *jsonx.Value, typed *bool) bool {
	sc := &p.sc
	at := sc.Pos()
	for n := 0; sc.NextField(&n); {
		if sc.Key() == "type" {
			*typed = true
		}
		if !sc.Skip() {
			return false
		}
	}
	if sc.Failed() {
		return false
	}
	v.Set(jsonx.Object, sc.Input()[at:sc.Pos()], at, "")
	return true
}

// toolCalls reads the tool_calls of the message o; null is none, as for the message's
// other optional members (messageMember).
func (p *parser) toolCalls(o *messageValues) bool {
	sc, i, msg := &p.sc, o.i, &p.msgs.slot().msg
	base := func() string { return translate.ParamIndex("messages", i) + ".tool_calls" }
	if sc.Peek() == 'n' {
		return sc.Literal("null")
	}
	if sc.Peek() != '[' {
		return p.fail(base(), "must be an array")
	}
	for n := 0; sc.NextElem(&n); {
		if !p.toolCall(i, n-1) {
			return false
		}
	}
	if sc.Failed() {
		return false
	}
	if calls := p.calls.Run(); msg.ToolCalls == nil {
		msg.ToolCalls = calls
	} else {
		msg.ToolCalls = append(msg.ToolCalls, calls...)
	}
	return true
}

// toolCallValues is what a tool call's members and its function's hold, read by
// toolCallMember and toolCallFuncMember. The last of duplicate keys wins, as with
// gjson's ForEach.
type toolCallValues struct {
	id, typ, name, arguments jsonx.Value
	i, j                     int // tool call j of message i
}

// param is the tool call's param path (see partValues.param).
func (o *toolCallValues) param() string {
	return translate.ParamIndex(translate.ParamIndex("messages", o.i)+".tool_calls", o.j)
}

// toolCallType reads a tool call's type into o.typ as sc.Value reads it (readToolCall's
// type), "function" by a compare (messageRole's).
func (p *parser) toolCallType(o *toolCallValues) bool {
	sc := &p.sc
	if at := sc.Pos(); sc.MemberIs(`"function"`) {
		s := sc.Input()
		o.typ.Set(jsonx.String, s[at:sc.Pos()], at, s[at+1:sc.Pos()-1])
		return true
	}
	return sc.Value(&o.typ)
}

// toolCall reads tool call j of message i.
func (p *parser) toolCall(i, j int) bool {
	sc := &p.sc
	o := toolCallValues{i: i, j: j}
	param := o.param
	if sc.Peek() != '{' {
		if !sc.Skip() {
			return false
		}
	} else if !p.readToolCall(&o, param) {
		return false
	}
	if o.id.Kind != jsonx.String || o.id.Str == "" {
		return p.fail(param()+".id", "tool calls need a string id")
	}
	if o.typ.Kind != jsonx.Missing && o.typ.Str != "function" {
		return p.fail(param()+".type", "only function tool calls are supported")
	}
	if o.name.Kind != jsonx.String || o.name.Str == "" {
		return p.fail(param()+".function.name", "tool calls need function.name")
	}
	if o.arguments.Kind != jsonx.Missing && o.arguments.Kind != jsonx.String && o.arguments.Kind != jsonx.Null {
		return p.fail(param()+".function.arguments", "must be a string of JSON")
	}
	if strings.IndexByte(o.id.Str, translate.CarrySep[0]) >= 0 && !p.req.OpenCarried(o.id.Str, &p.inflate) {
		p.err = translate.StateTooLarge(param()+".id", p.maxInflated)
		return false
	}
	p.calls.Push(translate.ToolCall{ID: o.id.Str, Name: o.name.Str, Arguments: o.arguments.Str})
	return true
}

// toolCallMember reads a member of a tool call other than id, type and function
// (readToolCall reads those into o): it skips it.
func (p *parser) toolCallMember(int, *toolCallValues) bool { return p.sc.Skip() }

// toolCallFuncMember reads a member of a tool call's function other than name and
// arguments (readToolCallFunc reads those into o): it skips it.
func (p *parser) toolCallFuncMember(int, *toolCallValues) bool { return p.sc.Skip() }
