package translate

// The message half of ParseRequest: messages, their content parts, tool calls and thinking
// blocks. See parse.go for the request as a whole.

func (p *parser) message(i int) bool {
	sc := &p.sc
	if sc.peek() != '{' {
		return p.fail(idx("messages", i), "each message must be an object")
	}
	var msg Message
	// content is read after the other fields, once the role is known.
	var role, content jsonValue
	var seen keySet
	base := func() string { return idx("messages", i) }
	for n := 0; sc.nextField(&n); {
		if !p.member(&seen, base, messageFields) {
			return false
		}
		key := sc.key
		var v jsonValue
		var ok bool
		switch {
		case key == "role":
			ok = sc.value(&role)
		case key == "content":
			ok = sc.value(&content)
		case sc.peek() == 'n':
			ok = sc.literal("null")
		case key == "name":
			if ok = sc.value(&v); ok && v.kind != jsonString {
				return p.fail(idx("messages", i)+".name", "must be a string")
			}
			msg.Name = v.str
		case key == "tool_call_id":
			if ok = sc.value(&v); ok && v.kind != jsonString {
				return p.fail(idx("messages", i)+".tool_call_id", "must be a string")
			}
			msg.ToolCallID = v.str
		case key == "tool_calls":
			ok = p.toolCalls(i, &msg)
		case key == "reasoning_content":
			if ok = sc.value(&v); v.kind == jsonString {
				msg.Reasoning = v.str
			}
		case key == "thinking_blocks":
			ok = p.thinkingBlocks(func() string { return base() + ".thinking_blocks" }, &msg)
		case key == "refusal":
			if ok = sc.value(&v); v.kind == jsonString {
				msg.Refusal = v.str
			}
		default:
			ok = sc.skip()
		}
		if !ok {
			return false
		}
	}
	if sc.err {
		return false
	}
	if role.kind != jsonString {
		return p.fail(idx("messages", i)+".role", "role is required and must be a string")
	}
	switch role.str {
	case RoleSystem, RoleDeveloper, RoleUser, RoleAssistant, RoleTool:
		msg.Role = role.str
	default:
		return p.fail(idx("messages", i)+".role", "unknown role %q: use system, developer, user, assistant or tool", role.str)
	}
	if len(msg.ToolCalls) > 0 && msg.Role != RoleAssistant {
		return p.fail(idx("messages", i)+".tool_calls", "only assistant messages may carry tool_calls")
	}
	start := p.parts.n
	if content.kind != jsonMissing && content.kind != jsonNull && !p.content(i, &msg, &content) {
		return false
	}
	switch msg.Role {
	case RoleTool:
		if msg.ToolCallID == "" {
			return p.fail(idx("messages", i)+".tool_call_id", "tool messages need tool_call_id")
		}
	case RoleAssistant:
		if content.kind == jsonMissing && len(msg.ToolCalls) == 0 && msg.Refusal == "" {
			return p.fail(idx("messages", i)+".content", "assistant messages need content or tool_calls")
		}
	default:
		if content.kind == jsonMissing || content.kind == jsonNull {
			return p.fail(idx("messages", i)+".content", "%s messages need content", msg.Role)
		}
	}
	p.msgs.add(pendingMessage{msg: msg, start: start, end: p.parts.n})
	return true
}

// thinkingBlocks reads a message's thinking_blocks the way gjson's ForEach walked them:
// each element of an array, each member of an object, or a single scalar; whatever is not
// an object yields an empty block.
func (p *parser) thinkingBlocks(base func() string, msg *Message) bool {
	sc := &p.sc
	switch sc.peek() {
	case '[':
		for n := 0; sc.nextElem(&n); {
			if !p.thinkingBlock(func() string { return idx(base(), n-1) }, msg) {
				return false
			}
		}
	case '{':
		var seen keySet
		for n := 0; sc.nextField(&n); {
			key := sc.key
			if !p.member(&seen, base, "") || !p.thinkingBlock(func() string { return base() + "." + key }, msg) {
				return false
			}
		}
	default:
		return p.thinkingBlock(base, msg)
	}
	return !sc.err
}

func (p *parser) thinkingBlock(base func() string, msg *Message) bool {
	sc := &p.sc
	var typ, thinking, signature, data jsonValue
	if sc.peek() != '{' {
		if !sc.skip() {
			return false
		}
	} else if !p.fields(base, want{"type", &typ}, want{"thinking", &thinking}, want{"signature", &signature}, want{"data", &data}) {
		return false
	}
	msg.ThinkingBlocks = append(msg.ThinkingBlocks, ThinkingBlock{
		Type: typ.str, Thinking: thinking.str, Signature: signature.str, Data: data.str,
	})
	return true
}

// content reads a message's content, v, after the message's other fields.
func (p *parser) content(i int, msg *Message, v *jsonValue) bool {
	if v.kind == jsonString {
		p.parts.add(Part{Type: PartText, Text: v.str})
		return true
	}
	if v.kind != jsonArray {
		return p.fail(idx("messages", i)+".content", "must be a string or an array of content parts")
	}
	// Read the array again from its start; the scanner has checked it already.
	sc := &p.sc
	resume := sc.i
	sc.i = v.at
	for n := 0; sc.nextElem(&n); {
		if !p.part(i, n-1, msg) {
			return false
		}
	}
	sc.i = resume
	return true
}

// part reads content part j of message i.
func (p *parser) part(i, j int, msg *Message) bool {
	sc := &p.sc
	param := func() string { return idx(idx("messages", i)+".content", j) }
	if sc.peek() != '{' {
		return p.fail(param(), "each content part must be an object")
	}
	// The first of duplicate keys wins, as with gjson's Get.
	var typ, text, image, url, detail, fileData, fileID, filename, audio, format, refusal jsonValue
	var sawImage, sawFile, sawAudio bool
	var seen keySet
	for n := 0; sc.nextField(&n); {
		if !p.member(&seen, param, partFields) {
			return false
		}
		var ok bool
		switch sc.key {
		case "type":
			ok = sc.first(&typ)
		case "text":
			ok = sc.first(&text)
		case "refusal":
			ok = sc.first(&refusal)
		case "image_url":
			switch {
			case sawImage:
				ok = sc.skip()
			case sc.peek() != '{':
				ok = sc.value(&image)
			default:
				ok = p.fields(func() string { return param() + ".image_url" }, want{"url", &url}, want{"detail", &detail})
			}
			sawImage = true
		case "file":
			if sawFile || sc.peek() != '{' {
				ok = sc.skip()
			} else {
				ok = p.fields(func() string { return param() + ".file" }, want{"file_data", &fileData},
					want{"file_id", &fileID}, want{"filename", &filename})
			}
			sawFile = true
		case "input_audio":
			if sawAudio || sc.peek() != '{' {
				ok = sc.skip()
			} else {
				ok = p.fields(func() string { return param() + ".input_audio" }, want{"data", &audio}, want{"format", &format})
			}
			sawAudio = true
		default:
			ok = sc.skip()
		}
		if !ok {
			return false
		}
	}
	if sc.err {
		return false
	}
	var part Part
	switch typ.str {
	case "text":
		if text.kind != jsonString {
			return p.fail(param()+".text", "text parts need a string text")
		}
		part = Part{Type: PartText, Text: text.str}
	case "image_url":
		if image.kind == jsonString { // a lenient shape some clients send
			url = image
		}
		if url.kind != jsonString || url.str == "" {
			return p.fail(param()+".image_url.url", "image_url parts need image_url.url")
		}
		part = Part{Type: PartImage, URL: url.str, Detail: detail.str}
	case "file":
		part = Part{Type: PartFile, FileData: fileData.str, FileID: fileID.str, Filename: filename.str}
		if part.FileData == "" && part.FileID == "" {
			return p.fail(param()+".file", "file parts need file.file_data or file.file_id")
		}
	case "input_audio":
		part = Part{Type: PartAudio, AudioData: audio.str, AudioFormat: format.str}
		if part.AudioData == "" {
			return p.fail(param()+".input_audio.data", "input_audio parts need input_audio.data")
		}
	case "refusal":
		if msg.Role != RoleAssistant {
			return p.fail(param()+".type", "refusal parts are only allowed in assistant messages")
		}
		part = Part{Type: PartRefusal, Text: refusal.str}
	default:
		return p.fail(param()+".type", "unknown content part type %q", typ.str)
	}
	if part.Type != PartText && part.Type != PartRefusal && msg.Role != RoleUser {
		return p.fail(param()+".type", "%s parts are only allowed in user messages", typ.str)
	}
	p.parts.add(part)
	return true
}

// want names an object member to read and where to put its value.
type want struct {
	key string
	dst *jsonValue
}

// fields reads the object at the cursor, whose param path base returns, putting the value
// of each wanted member in its place and skipping the rest. A repeated member name, or one
// that equals a wanted name only ignoring case, is an error.
func (p *parser) fields(base func() string, wants ...want) bool {
	sc := &p.sc
	var seen keySet
	for n := 0; sc.nextField(&n); {
		if !p.memberOf(&seen, base, wants) {
			return false
		}
		ok := false
		for _, w := range wants {
			if w.key == sc.key {
				ok = sc.first(w.dst)
				goto next
			}
		}
		ok = sc.skip()
	next:
		if !ok {
			return false
		}
	}
	return !sc.err
}

func (p *parser) toolCalls(i int, msg *Message) bool {
	sc := &p.sc
	base := func() string { return idx("messages", i) + ".tool_calls" }
	if sc.peek() != '[' {
		return p.fail(base(), "must be an array")
	}
	for n := 0; sc.nextElem(&n); {
		if !p.toolCall(i, n-1) {
			return false
		}
	}
	if sc.err {
		return false
	}
	if calls := p.calls.run(); msg.ToolCalls == nil {
		msg.ToolCalls = calls
	} else {
		msg.ToolCalls = append(msg.ToolCalls, calls...)
	}
	return true
}

// toolCall reads tool call j of message i.
func (p *parser) toolCall(i, j int) bool {
	sc := &p.sc
	param := func() string { return idx(idx("messages", i)+".tool_calls", j) }
	// The last of duplicate keys wins, as with gjson's ForEach.
	var id, typ, name, args jsonValue
	if sc.peek() != '{' {
		if !sc.skip() {
			return false
		}
	} else {
		var seen keySet
		for n := 0; sc.nextField(&n); {
			if !p.member(&seen, param, toolCallFields) {
				return false
			}
			var ok bool
			switch sc.key {
			case "id":
				ok = sc.value(&id)
			case "type":
				ok = sc.value(&typ)
			case "function":
				if sc.peek() != '{' {
					ok = sc.skip()
					break
				}
				ok = true
				var fseen keySet
				fbase := func() string { return param() + ".function" }
				for k := 0; ok && sc.nextField(&k); {
					if !p.member(&fseen, fbase, toolCallFuncFields) {
						return false
					}
					switch sc.key {
					case "name":
						ok = sc.value(&name)
					case "arguments":
						ok = sc.value(&args)
					default:
						ok = sc.skip()
					}
				}
				ok = ok && !sc.err
			default:
				ok = sc.skip()
			}
			if !ok {
				return false
			}
		}
		if sc.err {
			return false
		}
	}
	if id.kind != jsonString || id.str == "" {
		return p.fail(param()+".id", "tool calls need a string id")
	}
	if typ.kind != jsonMissing && typ.str != "function" {
		return p.fail(param()+".type", "only function tool calls are supported")
	}
	if name.kind != jsonString || name.str == "" {
		return p.fail(param()+".function.name", "tool calls need function.name")
	}
	if args.kind != jsonMissing && args.kind != jsonString && args.kind != jsonNull {
		return p.fail(param()+".function.arguments", "must be a string of JSON")
	}
	p.calls.push(ToolCall{ID: id.str, Name: name.str, Arguments: args.str})
	return true
}
