package openaichat

import (
	"strings"

	"github.com/agate-gateway/agate/internal/jsonx"
	"github.com/agate-gateway/agate/translate"
	"github.com/agate-gateway/agate/translate/internal/members"
)

// The message half of ParseRequest: messages, their content parts, tool calls and thinking
// blocks. See parse.go for the request as a whole.

func (p *parser) message(i int) bool {
	sc := &p.sc
	if sc.Peek() != '{' {
		return p.fail(translate.ParamIndex("messages", i), "each message must be an object")
	}
	// The message is built where the stash copies it from.
	var pm pendingMessage
	msg := &pm.msg
	// content is read after the other fields, once the role is known.
	var role, content jsonx.Value
	base := func() string { return translate.ParamIndex("messages", i) }
	// The orders the SDKs write a message's members in are tried first (nextMessage, see
	// members.table); any other member, whitespace or order takes NextField.
	for w, f := members.NewWalk(), 0; ; {
		if f = nextMessage(sc, &w); f < -1 {
			if f == memberRefused {
				return p.refused(&w, base)
			}
			break
		}
		var v jsonx.Value
		var ok bool
		switch {
		case f == mRole:
			ok = sc.Value(&role)
		case f == mContent:
			ok = p.payload(&content)
		case sc.Peek() == 'n':
			ok = sc.Literal("null")
		case f == mName:
			if ok = sc.Value(&v); ok && v.Kind != jsonx.String {
				return p.fail(translate.ParamIndex("messages", i)+".name", "must be a string")
			}
			msg.Name = v.Str
		case f == mToolCallID:
			if ok = sc.Value(&v); ok && v.Kind != jsonx.String {
				return p.fail(translate.ParamIndex("messages", i)+".tool_call_id", "must be a string")
			}
			msg.ToolCallID = v.Str
		case f == mToolCalls:
			ok = p.toolCalls(i, msg)
		case f == mReasoningContent:
			if ok = p.payload(&v); v.Kind == jsonx.String {
				msg.Reasoning = v.Str
			}
		case f == mThinkingBlocks:
			ok = p.thinkingBlocks(func() string { return base() + ".thinking_blocks" }, msg)
		case f == mRefusal:
			if ok = p.payload(&v); v.Kind == jsonx.String {
				msg.Refusal = v.Str
			}
		default:
			ok = sc.Skip()
		}
		if !ok {
			return false
		}
	}
	if sc.Failed() {
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
	if content.Kind != jsonx.Missing && content.Kind != jsonx.Null && !p.content(i, msg, &content) {
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
	p.msgs.add(&pm)
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
	sc := &p.sc
	param := func() string { return translate.ParamIndex(translate.ParamIndex("messages", i)+".content", j) }
	if sc.Peek() != '{' {
		return p.fail(param(), "each content part must be an object")
	}
	// The first of duplicate keys wins, as with gjson's Get.
	var typ, text, image, url, detail, fileData, fileID, filename, audio, format, refusal jsonx.Value
	var sawImage, sawFile, sawAudio bool
	for w, f := members.NewWalk(), 0; ; {
		if f = nextPart(sc, &w); f < -1 {
			if f == memberRefused {
				return p.refused(&w, param)
			}
			break
		}
		var ok bool
		switch f {
		case ptType:
			ok = sc.First(&typ)
		case ptText:
			ok = p.firstPayload(&text)
		case ptRefusal:
			ok = p.firstPayload(&refusal)
		case ptImageURL:
			switch {
			case sawImage:
				ok = sc.Skip()
			case sc.Peek() != '{':
				ok = sc.Value(&image)
			default:
				ok = p.fields(func() string { return param() + ".image_url" }, want{"url", &url}, want{"detail", &detail})
			}
			sawImage = true
		case ptFile:
			if sawFile || sc.Peek() != '{' {
				ok = sc.Skip()
			} else {
				ok = p.fields(func() string { return param() + ".file" }, want{"file_data", &fileData},
					want{"file_id", &fileID}, want{"filename", &filename})
			}
			sawFile = true
		case ptInputAudio:
			if sawAudio || sc.Peek() != '{' {
				ok = sc.Skip()
			} else {
				ok = p.fields(func() string { return param() + ".input_audio" }, want{"data", &audio}, want{"format", &format})
			}
			sawAudio = true
		default:
			ok = sc.Skip()
		}
		if !ok {
			return false
		}
	}
	if sc.Failed() {
		return false
	}
	var part translate.Part
	switch typ.Str {
	case "text":
		if text.Kind != jsonx.String {
			return p.fail(param()+".text", "text parts need a string text")
		}
		part = translate.Part{Type: translate.PartText, Text: text.Str}
	case "image_url":
		if image.Kind == jsonx.String { // a lenient shape some clients send
			url = image
		}
		if url.Kind != jsonx.String || url.Str == "" {
			return p.fail(param()+".image_url.url", "image_url parts need image_url.url")
		}
		part = translate.Part{Type: translate.PartImage, Media: &translate.Media{URL: url.Str, Detail: detail.Str}}
	case "file":
		part = translate.Part{Type: translate.PartFile, Media: &translate.Media{FileData: fileData.Str, FileID: fileID.Str, Filename: filename.Str}}
		if part.Media.FileData == "" && part.Media.FileID == "" {
			return p.fail(param()+".file", "file parts need file.file_data or file.file_id")
		}
	case "input_audio":
		part = translate.Part{Type: translate.PartAudio, Media: &translate.Media{AudioData: audio.Str, AudioFormat: format.Str}}
		if part.Media.AudioData == "" {
			return p.fail(param()+".input_audio.data", "input_audio parts need input_audio.data")
		}
	case "refusal":
		if msg.Role != translate.RoleAssistant {
			return p.fail(param()+".type", "refusal parts are only allowed in assistant messages")
		}
		part = translate.Part{Type: translate.PartRefusal, Text: refusal.Str}
	default:
		return p.fail(param()+".type", "unknown content part type %q", typ.Str)
	}
	if part.Type != translate.PartText && part.Type != translate.PartRefusal && msg.Role != translate.RoleUser {
		return p.fail(param()+".type", "%s parts are only allowed in user messages", typ.Str)
	}
	p.parts.add(&part)
	return true
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
		ok := false
		for _, w := range wants {
			if w.key == sc.Key() {
				ok = sc.First(w.dst)
				goto next
			}
		}
		ok = sc.Skip()
	next:
		if !ok {
			return false
		}
	}
	return !sc.Failed()
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

func (p *parser) toolCalls(i int, msg *translate.Message) bool {
	sc := &p.sc
	base := func() string { return translate.ParamIndex("messages", i) + ".tool_calls" }
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

// toolCall reads tool call j of message i.
func (p *parser) toolCall(i, j int) bool {
	sc := &p.sc
	param := func() string { return translate.ParamIndex(translate.ParamIndex("messages", i)+".tool_calls", j) }
	// The last of duplicate keys wins, as with gjson's ForEach.
	var id, typ, name, args jsonx.Value
	if sc.Peek() != '{' {
		if !sc.Skip() {
			return false
		}
	} else {
		for w, f := members.NewWalk(), 0; ; {
			if f = nextToolCall(sc, &w); f < -1 {
				if f == memberRefused {
					return p.refused(&w, param)
				}
				break
			}
			var ok bool
			switch f {
			case tcID:
				ok = sc.Value(&id)
			case tcType:
				ok = sc.Value(&typ)
			case tcFunction:
				if sc.Peek() != '{' {
					ok = sc.Skip()
				} else {
					ok = p.toolCallFunction(param, &name, &args)
				}
			default:
				ok = sc.Skip()
			}
			if !ok {
				return false
			}
		}
		if sc.Failed() {
			return false
		}
	}
	if id.Kind != jsonx.String || id.Str == "" {
		return p.fail(param()+".id", "tool calls need a string id")
	}
	if typ.Kind != jsonx.Missing && typ.Str != "function" {
		return p.fail(param()+".type", "only function tool calls are supported")
	}
	if name.Kind != jsonx.String || name.Str == "" {
		return p.fail(param()+".function.name", "tool calls need function.name")
	}
	if args.Kind != jsonx.Missing && args.Kind != jsonx.String && args.Kind != jsonx.Null {
		return p.fail(param()+".function.arguments", "must be a string of JSON")
	}
	if strings.IndexByte(id.Str, translate.CarrySep[0]) >= 0 && !p.req.OpenCarried(id.Str, &p.inflate) {
		p.err = translate.StateTooLarge(param()+".id", p.maxInflated)
		return false
	}
	p.calls.Push(translate.ToolCall{ID: id.Str, Name: name.Str, Arguments: args.Str})
	return true
}

// toolCallFunction reads a tool call's function object: its name and arguments.
func (p *parser) toolCallFunction(param func() string, name, args *jsonx.Value) bool {
	sc := &p.sc
	for w, f := members.NewWalk(), 0; ; {
		if f = nextToolCallFunc(sc, &w); f == memberRefused {
			return p.refused(&w, func() string { return param() + ".function" })
		} else if f == memberEnd {
			return !sc.Failed()
		}
		var ok bool
		switch f {
		case fnName:
			ok = sc.Value(name)
		case fnArguments:
			ok = p.payload(args)
		default:
			ok = sc.Skip()
		}
		if !ok {
			return false
		}
	}
}
