package gemini

import (
	"hash/fnv"
	"strconv"
	"strings"

	"github.com/agate-gateway/agate/internal/jsonx"
	"github.com/agate-gateway/agate/translate"

	"github.com/tidwall/sjson"
)

// geminiPhase is where a Gemini response decoder stands.
type geminiPhase uint8

const (
	// geminiWaiting: no chunk yet; EventStart not emitted.
	geminiWaiting geminiPhase = iota
	// geminiStreaming: chunks are arriving.
	geminiStreaming
	// geminiClosed: Close ran (or a mid-stream error ended the response).
	geminiClosed
)

// geminiStream decodes one Gemini response: the GenerateContentResponse chunks of a
// streamGenerateContent?alt=sse stream, one per SSE event, or the single object of a
// generateContent response. It is not safe for concurrent use.
type geminiStream struct {
	phase geminiPhase
	// whole: the decoder reads a non-streamed response, complete by definition.
	whole bool
	// callBase is the unique part of minted tool call ids (the responseId).
	callBase string
	cands    []geminiCandidate
	usage    translate.Usage
	hasUsage bool
	// blocked: promptFeedback.blockReason said the prompt was refused.
	blocked bool
	ev      translate.Event
	// sc reads the current chunk; its arena holds the chunk's decoded strings.
	sc jsonx.Scanner
	// lp and lpTop hold the decoded logprobsResult of the candidate being read, reused
	// between chunks; lpPart is the index of the part whose text carries lp (-1: none).
	lp     []translate.TokenLogprob
	lpTop  []translate.TopLogprob
	lpPart int
	// general makes every candidates array take the general reader (tests compare the
	// two readers with it).
	general bool
}

// geminiCandidate is the state of one candidate (one OpenAI choice).
type geminiCandidate struct {
	seen   bool
	calls  int    // function calls started so far; the next call's Index
	finish string // the OpenAI finish reason once the candidate finished
	// pendingSig is the thoughtSignature of a non-call part, carried by the next call.
	pendingSig string
	// A function call whose arguments stream in partialArgs (Vertex AI
	// streamFunctionCallArguments): open until a functionCall part without willContinue.
	open    bool
	openIdx int
	args    []byte // the arguments object built so far
	strPath string // path of the string value being streamed
	str     []byte // that string's text so far
	inStr   bool
}

func (geminiProvider) NewStreamDecoder(*translate.Options) translate.StreamDecoder {
	return &geminiStream{}
}

// Event decodes one SSE event: its data is a GenerateContentResponse (or an error object).
func (d *geminiStream) Event(_, data []byte, emit translate.Emit) error {
	if d.phase == geminiClosed {
		return nil
	}
	return d.chunk(jsonx.View(data), emit)
}

func (d *geminiStream) emit(emit translate.Emit, kind translate.EventKind, choice int) error {
	d.ev.Kind, d.ev.Choice = kind, choice
	return emit(&d.ev)
}

func (d *geminiStream) chunk(raw string, emit translate.Emit) error {
	// The top-level walk below checks the whole chunk's syntax as it reads it (every
	// member is read with Value or Skip), so it is the validation: nothing is emitted
	// until it has reached the end of the chunk without a syntax error.
	data := strings.Trim(raw, " \t\n\r")
	if !strings.HasPrefix(data, "{") {
		if !jsonx.Valid(raw) {
			return translate.MalformedEvent(geminiNotJSON(raw))
		}
		return &translate.UpstreamError{Status: 502, Type: "api_error", Message: "decoding gemini event: not a JSON object: " + geminiSnippet(data)}
	}
	// One scanner walks the chunk, descending into the values it reads; usageMetadata is
	// read in the same pass. Decoded strings live in its arena until the next chunk.
	sc := &d.sc
	sc.Reset(data)
	var cands, text, feedback, respID, model, failure jsonx.Value // text: see fastTextCandidates
	hasUsage := false
	var prompt, toolPrompt, candTokens, thoughts, cached int
	valid := walkObject(sc, 0, func(k string) bool {
		switch k {
		case "usageMetadata":
			hasUsage = sc.Peek() == '{'
			prompt, toolPrompt, candTokens, thoughts, cached = 0, 0, 0, 0, 0
			return walkObject(sc, sc.Pos(), func(k string) bool {
				var n *int
				switch k {
				case "promptTokenCount":
					n = &prompt
				case "toolUsePromptTokenCount":
					n = &toolPrompt
				case "candidatesTokenCount":
					n = &candTokens
				case "thoughtsTokenCount":
					n = &thoughts
				case "cachedContentTokenCount":
					n = &cached
				default:
					return sc.Skip()
				}
				var v jsonx.Value
				ok := sc.Value(&v)
				*n, _ = strconv.Atoi(v.Raw)
				return ok
			})
		case "candidates":
			text = jsonx.Value{} // of duplicate members the last is read, as cands is
			if !d.general {
				if matched, ok := fastTextCandidates(sc, &cands, &text); matched {
					return ok
				}
			}
			return sc.Value(&cands)
		case "promptFeedback":
			return sc.Value(&feedback)
		case "responseId":
			return sc.Value(&respID)
		case "modelVersion":
			return sc.Value(&model)
		case "error":
			return sc.Value(&failure)
		}
		return sc.Skip()
	}) && sc.AtEnd()
	if !valid { // nothing was emitted nor changed: the caller may skip it
		return translate.MalformedEvent(geminiNotJSON(raw))
	}
	if failure.Kind != jsonx.Missing {
		failed := geminiError(sc, 0, failure)
		d.phase = geminiClosed
		d.ev = translate.Event{Kind: translate.EventError, Err: failed}
		if err := emit(&d.ev); err != nil && err != error(failed) {
			return err
		}
		return failed
	}
	if d.phase == geminiWaiting {
		d.phase = geminiStreaming
		id := sc.Unquote(respID.Raw)
		if id == "" || strings.Contains(id, translate.CarrySep) {
			h := fnv.New64a()
			h.Write(jsonx.Bytes(data))
			d.callBase = strconv.FormatUint(h.Sum64(), 36)
		} else {
			d.callBase = strings.Clone(id)
		}
		d.ev = translate.Event{ID: id, Model: sc.Unquote(model.Raw)}
		if err := d.emit(emit, translate.EventStart, 0); err != nil {
			return err
		}
		d.ev.ID, d.ev.Model = "", ""
	}
	if text.Kind == jsonx.String {
		// One text part of candidate 0, read as the general reader below reads it.
		cs := d.cand(0)
		cs.seen = true
		d.lp, d.lpPart = d.lp[:0], -1
		if err := d.partFields(0, cs, text, jsonx.Value{}, "", false, nil, emit); err != nil {
			return err
		}
	} else if cands.Kind != jsonx.Missing && cands.Kind != jsonx.Null {
		if cands.Kind != jsonx.Array {
			return &translate.UpstreamError{Status: 502, Type: "api_error", Message: "decoding gemini event: candidates is not an array"}
		}
		var err error
		walkArray(sc, cands.At, func(pos int) bool {
			i := pos
			var parts, finish, logprobs, index jsonx.Value
			walkObject(sc, sc.Pos(), func(k string) bool {
				switch k {
				case "content":
					return walkObject(sc, sc.Pos(), func(k string) bool {
						if k != "parts" {
							return sc.Skip()
						}
						return sc.Value(&parts)
					})
				case "index":
					return sc.Value(&index)
				case "finishReason":
					return sc.Value(&finish)
				case "logprobsResult":
					return sc.Value(&logprobs)
				}
				return sc.Skip()
			})
			if n, err := strconv.Atoi(index.Raw); err == nil {
				i = n
			}
			if i < 0 || i > 64 {
				err = &translate.UpstreamError{Status: 502, Type: "api_error", Message: "decoding gemini event: candidate index " + strconv.Itoa(i) + " out of range"}
				return false
			}
			resume := sc.Pos()
			err = d.candidate(i, parts, sc.Unquote(finish.Raw), logprobs, emit)
			sc.Seek(resume)
			return err == nil
		})
		if err != nil {
			return err
		}
	}
	if hasUsage {
		d.hasUsage = true
		d.usage = translate.Usage{
			// promptTokenCount already counts the cached content; tool-use prompt
			// tokens (grounding results fed back) are input too.
			PromptTokens:     prompt + toolPrompt,
			CompletionTokens: candTokens + thoughts,
			CachedTokens:     cached,
			ReasoningTokens:  thoughts,
		}
	}
	if feedback.Kind == jsonx.Object {
		if br := sc.Get(feedback, "blockReason"); br.Str != "" && br.Str != "BLOCK_REASON_UNSPECIFIED" {
			d.blocked = true
		}
	}
	return nil
}

// The candidates of a text chunk in the layout the API sends (alt=sse): one candidate,
// index 0, whose content is one text part and the role "model", and nothing else; the API
// writes a space after each colon.
const (
	textCandidatesHead = `[{"content": {"parts": [{"text": `
	textCandidatesTail = `}],"role": "model"},"index": 0}]`
)

// fastTextCandidates reads the candidates array at the cursor when it is in exactly the
// layout of a text chunk (textCandidatesHead, the text string, textCandidatesTail): it sets
// cands to the array and text to the part's text as the general reader would read them,
// moves past the array and reports matched, with ok false when the string is not valid
// JSON. For anything else it reports matched false with the cursor at the array (past any
// whitespace before it), leaving the array to the general reader: what it accepts, the
// general reader reads the same (FuzzFastTextCandidatesMatchesGeneral). Nearly every
// chunk of a text answer is one of these; the general reader walks the array three times
// (to check it, for the candidate's members, for the part's), this reads the text once
// and the rest as bytes.
func fastTextCandidates(sc *jsonx.Scanner, cands, text *jsonx.Value) (matched, ok bool) {
	sc.Peek() // the API writes a space after the member's colon
	s, at := sc.Input(), sc.Pos()
	j := at + len(textCandidatesHead)
	if !strings.HasPrefix(s[at:], textCandidatesHead) || j >= len(s) || s[j] != '"' {
		return false, false
	}
	sc.Seek(j)
	if !sc.SkipString() {
		return true, false // not JSON, whichever reader reads it
	}
	k := sc.Pos()
	if !strings.HasPrefix(s[k:], textCandidatesTail) {
		sc.Seek(at)
		return false, false
	}
	end := k + len(textCandidatesTail)
	sc.Seek(end)
	cands.Set(jsonx.Array, s[at:end], at, "")
	text.Set(jsonx.String, s[j:k], j, "")
	return true, true
}

func geminiNotJSON(data string) *translate.UpstreamError {
	return &translate.UpstreamError{Status: 502, Type: "api_error", Message: "decoding gemini event: not valid JSON: " + geminiSnippet(data)}
}

// walkObject moves the scanner to offset at and calls fn with the name of each member of
// the object there, the cursor at the member's value, which fn must read (Value, Skip or
// a nested walk); fn returns false to stop. A value that is not an object is skipped: it
// has no members. It returns false if fn stopped it or on a syntax error.
func walkObject(sc *jsonx.Scanner, at int, fn func(key string) bool) bool {
	sc.Seek(at)
	if sc.Peek() != '{' {
		return sc.Skip()
	}
	for n := 0; sc.NextField(&n); {
		if !fn(sc.Key()) {
			return false
		}
	}
	return !sc.Failed()
}

// walkArray is walkObject for arrays: fn gets each element's position in the array.
func walkArray(sc *jsonx.Scanner, at int, fn func(i int) bool) bool {
	sc.Seek(at)
	if sc.Peek() != '[' {
		return sc.Skip()
	}
	for n := 0; sc.NextElem(&n); {
		if !fn(n - 1) {
			return false
		}
	}
	return !sc.Failed()
}

func (d *geminiStream) cand(i int) *geminiCandidate {
	for len(d.cands) <= i {
		d.cands = append(d.cands, geminiCandidate{})
	}
	return &d.cands[i]
}

func (d *geminiStream) candidate(i int, parts jsonx.Value, fr string, logprobs jsonx.Value, emit translate.Emit) error {
	cs := d.cand(i)
	cs.seen = true
	if parts.Kind != jsonx.Missing && parts.Kind != jsonx.Null && parts.Kind != jsonx.Array {
		return &translate.UpstreamError{Status: 502, Type: "api_error", Message: "decoding gemini event: content.parts is not an array"}
	}
	d.lp, d.lpPart = d.lp[:0], -1
	if logprobs.Kind != jsonx.Missing && logprobs.Kind != jsonx.Null {
		if err := d.logprobs(logprobs); err != nil {
			return err
		}
		if len(d.lp) > 0 {
			d.lpPart = d.lastTextPart(parts)
		}
	}
	var err error
	if parts.Kind == jsonx.Array {
		sc := &d.sc
		walkArray(sc, parts.At, func(k int) bool {
			if sc.Peek() != '{' {
				return sc.Skip()
			}
			var lp []translate.TokenLogprob
			if k == d.lpPart {
				lp = d.lp
			}
			var text, fc, sig, thought jsonx.Value
			walkObject(sc, sc.Pos(), func(k string) bool {
				switch k {
				case "text":
					return sc.Value(&text)
				case "functionCall":
					return sc.Value(&fc)
				case "thoughtSignature":
					return sc.Value(&sig)
				case "thought":
					return sc.Value(&thought)
				}
				return sc.Skip()
			})
			resume := sc.Pos() // a function call walks its fields with sc
			err = d.partFields(i, cs, text, fc, sc.Unquote(sig.Raw), thought.Kind == jsonx.True, lp, emit)
			sc.Seek(resume)
			return err == nil
		})
	}
	if err != nil {
		return err
	}
	if len(d.lp) > 0 && d.lpPart < 0 {
		// Logprobs with no answer text in this chunk: they go on a chunk of their own.
		d.ev.Logprobs = d.lp
		err := d.emit(emit, translate.EventLogprobs, i)
		d.ev.Logprobs = nil
		if err != nil {
			return err
		}
	}
	if fr != "" {
		if cs.open {
			if err := d.endOpenCall(i, cs, emit); err != nil {
				return err
			}
		}
		cs.finish = geminiFinishReason(fr, cs.calls > 0)
	}
	return nil
}

// partFields decodes one part of candidate i from its fields; sig is its decoded
// thoughtSignature and lp are the logprobs its text carries, if any.
func (d *geminiStream) partFields(i int, cs *geminiCandidate, text, fc jsonx.Value, sig string, thought bool, lp []translate.TokenLogprob, emit translate.Emit) error {
	if fc.Kind != jsonx.Missing {
		return d.functionCall(i, cs, fc, sig, emit)
	}
	if sig != "" {
		cs.pendingSig = strings.Clone(sig)
	}
	if len(text.Raw) <= 2 || text.Kind != jsonx.String {
		return nil
	}
	if cs.open {
		if err := d.endOpenCall(i, cs, emit); err != nil {
			return err
		}
	}
	d.ev.Text = d.sc.Unquote(text.Raw)
	kind := translate.EventTextDelta
	if thought {
		kind = translate.EventReasoningDelta
	} else {
		d.ev.Logprobs = lp
	}
	err := d.emit(emit, kind, i)
	d.ev.Text, d.ev.Logprobs = "", nil
	return err
}

func (d *geminiStream) functionCall(i int, cs *geminiCandidate, fc jsonx.Value, sig string, emit translate.Emit) error {
	sc := &d.sc
	if fc.Kind != jsonx.Object {
		return &translate.UpstreamError{Status: 502, Type: "api_error", Message: "decoding gemini event: functionCall is not an object"}
	}
	name := sc.Get(fc, "name").Str
	willContinue := sc.Get(fc, "willContinue").Kind == jsonx.True
	partial := sc.Get(fc, "partialArgs")
	if name == "" {
		if !cs.open {
			return nil // an empty continuation with no call open: nothing to do
		}
		d.partialArgs(cs, partial)
		if !willContinue {
			return d.endOpenCall(i, cs, emit)
		}
		return nil
	}
	if cs.open {
		if err := d.endOpenCall(i, cs, emit); err != nil {
			return err
		}
	}
	n := cs.calls
	cs.calls++
	d.ev.Index = n
	d.ev.Name = name
	id, state := d.callID(sc.Get(fc, "id").Str, sig, cs.pendingSig, i, n)
	cs.pendingSig = ""
	if len(state) > 0 {
		// The carried state, also as a block for client dialects that return blocks.
		d.ev.Block = &translate.ThinkingBlock{Dialect: geminiName, Type: geminiSignatureBlock, CallID: id, Data: string(state)}
		err := d.emit(emit, translate.EventReasoningBlock, i)
		d.ev.Block = nil
		if err != nil {
			return err
		}
	}
	d.ev.CallID = translate.CarryID(id, state)
	if err := d.emit(emit, translate.EventToolCallStart, i); err != nil {
		return err
	}
	d.ev.Name, d.ev.CallID = "", ""
	if args := sc.Get(fc, "args"); args.Kind == jsonx.Object {
		// A copy: the core Assembler keeps Arguments with += , which aliases the first
		// fragment instead of copying it.
		d.ev.Text = strings.Clone(args.Raw)
		if strings.ContainsAny(args.Raw, "\n\r\t") {
			d.ev.Text = string(jsonx.AppendCompact(make([]byte, 0, len(args.Raw)), args.Raw))
		}
		err := d.emit(emit, translate.EventToolCallArgsDelta, i)
		d.ev.Text = ""
		if err != nil {
			return err
		}
	}
	if willContinue {
		cs.open, cs.openIdx = true, n
		cs.args, cs.str, cs.inStr = cs.args[:0], cs.str[:0], false
		d.partialArgs(cs, partial)
		return nil
	}
	return d.emit(emit, translate.EventToolCallEnd, i)
}

// callID mints the OpenAI id of a call: Gemini's own id when it sent one, else call_ +
// the response id + the call's position; and the state its id carries (the thought
// signatures, appendGeminiCarry), nil when none.
func (d *geminiStream) callID(upstream, sig, textSig string, choice, n int) (string, []byte) {
	carry := geminiCarry{callSig: sig, textSig: textSig}
	id := upstream
	if id != "" && !strings.Contains(id, translate.CarrySep) {
		carry.upstreamID = true
	} else {
		b := make([]byte, 0, 8+len(d.callBase)+8)
		b = append(b, "call_"...)
		b = append(b, d.callBase...)
		b = append(b, '_')
		if choice > 0 {
			b = strconv.AppendInt(b, int64(choice), 10)
			b = append(b, '_')
		}
		b = strconv.AppendInt(b, int64(n), 10)
		id = string(b)
	}
	return id, appendGeminiCarry(nil, carry)
}

// partialArgs applies streamed argument fragments ({jsonPath, stringValue|numberValue|
// boolValue|nullValue, willContinue}) to the open call's argument object.
func (d *geminiStream) partialArgs(cs *geminiCandidate, partial jsonx.Value) {
	sc := &d.sc
	sc.Each(partial, func(_ string, el jsonx.Value) bool {
		path := geminiSJSONPath(sc.Get(el, "jsonPath").Str)
		if path == "" {
			return true
		}
		if cs.inStr && cs.strPath != path {
			cs.finishString()
		}
		if sv := sc.Get(el, "stringValue"); sv.Exists() {
			if !cs.inStr {
				cs.inStr, cs.strPath, cs.str = true, path, cs.str[:0]
			}
			cs.str = append(cs.str, sv.Str...)
			if sc.Get(el, "willContinue").Kind != jsonx.True {
				cs.finishString()
			}
			return true
		}
		var raw string
		if v := sc.Get(el, "numberValue"); v.Exists() {
			raw = v.Raw
		} else if v := sc.Get(el, "boolValue"); v.Exists() {
			raw = v.Raw
		} else if sc.Get(el, "nullValue").Exists() {
			raw = "null"
		} else {
			return true
		}
		cs.args, _ = sjson.SetRawBytes(cs.args, path, []byte(raw))
		return true
	})
}

func (cs *geminiCandidate) finishString() {
	cs.args, _ = sjson.SetRawBytes(cs.args, cs.strPath, jsonx.AppendString(nil, string(cs.str)))
	cs.inStr, cs.str = false, cs.str[:0]
}

// endOpenCall ends the open streamed call, emitting its arguments in one piece.
func (d *geminiStream) endOpenCall(i int, cs *geminiCandidate, emit translate.Emit) error {
	if cs.inStr {
		cs.finishString()
	}
	cs.open = false
	d.ev.Index = cs.openIdx
	if len(cs.args) > 0 {
		d.ev.Text = string(cs.args)
		err := d.emit(emit, translate.EventToolCallArgsDelta, i)
		d.ev.Text = ""
		if err != nil {
			return err
		}
	}
	return d.emit(emit, translate.EventToolCallEnd, i)
}

// Close ends the response: it emits the usage and one finish per candidate, or, when the
// stream stopped before every candidate had a finishReason, returns an error.
func (d *geminiStream) Close(emit translate.Emit) error {
	if d.phase == geminiClosed {
		return nil
	}
	started := d.phase == geminiStreaming
	d.phase = geminiClosed
	complete := started && (d.blocked || len(d.cands) > 0)
	for i := range d.cands {
		cs := &d.cands[i]
		if cs.seen && cs.finish == "" && !d.whole && !d.blocked {
			complete = false
		}
	}
	if !complete {
		msg := "gemini stream ended before its finishReason"
		switch {
		case !started:
			msg = "gemini stream ended before any event"
		case d.whole:
			msg = "gemini response has no candidates and no promptFeedback"
		}
		return &translate.UpstreamError{Status: 502, Type: "api_error", Message: msg}
	}
	for i := range d.cands {
		if cs := &d.cands[i]; cs.open {
			if err := d.endOpenCall(i, cs, emit); err != nil {
				return err
			}
		}
	}
	for i := range d.cands {
		// A signature no call took (a turn without calls): the turn's own, for client
		// dialects that return blocks; chat clients have no place for it.
		if cs := &d.cands[i]; cs.pendingSig != "" {
			d.ev = translate.Event{Block: &translate.ThinkingBlock{Dialect: geminiName, Type: geminiSignatureBlock,
				Data: string(appendGeminiCarry(nil, geminiCarry{textSig: cs.pendingSig}))}}
			if err := d.emit(emit, translate.EventReasoningBlock, i); err != nil {
				return err
			}
		}
	}
	d.ev = translate.Event{Usage: d.usage}
	if err := d.emit(emit, translate.EventUsage, 0); err != nil {
		return err
	}
	d.ev.Usage = translate.Usage{}
	if len(d.cands) == 0 {
		// A prompt refused by promptFeedback: no candidates at all.
		d.ev.FinishReason = translate.FinishContentFilter
		return d.emit(emit, translate.EventFinish, 0)
	}
	for i := range d.cands {
		cs := &d.cands[i]
		d.ev.FinishReason = cs.finish
		if d.ev.FinishReason == "" {
			d.ev.FinishReason = geminiFinishReason("STOP", cs.calls > 0)
			if d.blocked {
				d.ev.FinishReason = translate.FinishContentFilter
			}
		}
		if err := d.emit(emit, translate.EventFinish, i); err != nil {
			return err
		}
	}
	return nil
}

// geminiFinishReason maps a Gemini finishReason to OpenAI's.
func geminiFinishReason(r string, calledTools bool) string {
	switch r {
	case "MAX_TOKENS":
		return translate.FinishLength
	case "SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII",
		"IMAGE_SAFETY", "IMAGE_PROHIBITED_CONTENT", "IMAGE_RECITATION",
		"MODEL_ARMOR": // Vertex AI: the answer was blocked by a Model Armor template
		return translate.FinishContentFilter
	}
	// STOP, and reasons OpenAI has no name for (OTHER, LANGUAGE, MALFORMED_FUNCTION_CALL,
	// UNEXPECTED_TOOL_CALL, TOO_MANY_TOOL_CALLS...), end the choice normally.
	if calledTools {
		return translate.FinishToolCalls
	}
	return translate.FinishStop
}

// DecodeResponse decodes a generateContent response body. A JSON array of responses (what
// streamGenerateContent returns without alt=sse) is decoded as the chunks of one response.
func (geminiProvider) DecodeResponse(body []byte, emit translate.Emit) error {
	d := geminiStream{whole: true}
	s := strings.TrimSpace(jsonx.View(body))
	if strings.HasPrefix(s, "[") {
		if !jsonx.Valid(s) {
			return &translate.UpstreamError{Status: 502, Type: "api_error", Message: "decoding gemini response: not valid JSON: " + geminiSnippet(s)}
		}
		arr := jsonx.NewScanner(s)
		for n := 0; arr.NextElem(&n); {
			var v jsonx.Value
			arr.Value(&v)
			if err := d.chunk(v.Raw, emit); err != nil {
				return err
			}
		}
	} else if err := d.chunk(s, emit); err != nil {
		return err
	}
	return d.Close(emit)
}

// geminiSJSONPath turns a JSONPath such as $.a.b[0] or $['a.b'] into an sjson path.
func geminiSJSONPath(p string) string {
	if !strings.HasPrefix(p, "$") {
		return ""
	}
	p = p[1:]
	var b strings.Builder
	seg := func(s string, escape bool) {
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		for i := 0; i < len(s); i++ {
			c := s[i]
			if escape && (c == '.' || c == '*' || c == '?' || c == '|' || c == '#' || c == '@' || c == '\\' || c == ':' || c == '!' || c == '=') {
				b.WriteByte('\\')
			}
			b.WriteByte(c)
		}
	}
	for len(p) > 0 {
		switch p[0] {
		case '.':
			p = p[1:]
			end := strings.IndexAny(p, ".[")
			if end < 0 {
				end = len(p)
			}
			seg(p[:end], true)
			p = p[end:]
		case '[':
			end := strings.IndexByte(p, ']')
			if end < 0 {
				return ""
			}
			in := p[1:end]
			p = p[end+1:]
			if len(in) >= 2 && (in[0] == '\'' || in[0] == '"') && in[len(in)-1] == in[0] {
				seg(in[1:len(in)-1], true)
			} else {
				if _, err := strconv.Atoi(in); err != nil {
					return ""
				}
				seg(in, false)
			}
		default:
			return ""
		}
	}
	return b.String()
}

var _ translate.UsageReporter = (*geminiStream)(nil)

// UsageSoFar returns the usage of the last chunk that carried usageMetadata, current
// when there was one: Gemini's figures are cumulative, each chunk's counting the
// candidates up to and including it.
func (d *geminiStream) UsageSoFar() (translate.Usage, bool) { return d.usage, d.hasUsage }
