package translate

import (
	"hash/fnv"
	"strconv"
	"strings"
	"unsafe"

	"github.com/tidwall/gjson"
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
	usage    Usage
	hasUsage bool
	// blocked: promptFeedback.blockReason said the prompt was refused.
	blocked bool
	ev      Event
	// text holds the last unescaped text part, reused between events.
	text []byte
	// lp and lpTop hold the decoded logprobsResult of the candidate being read, reused
	// between chunks; lpPart is the index of the part whose text carries lp (-1: none).
	lp     []TokenLogprob
	lpTop  []TopLogprob
	lpPart int
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

func (geminiProvider) NewStreamDecoder(*Options) StreamDecoder { return &geminiStream{} }

// Event decodes one SSE event: its data is a GenerateContentResponse (or an error object).
func (d *geminiStream) Event(_, data []byte, emit Emit) error {
	if d.phase == geminiClosed {
		return nil
	}
	return d.chunk(geminiBytesString(data), emit)
}

// geminiBytesString views b as a string without copying; the string is valid while b is.
func geminiBytesString(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

func (d *geminiStream) emit(emit Emit, kind EventKind, choice int) error {
	d.ev.Kind, d.ev.Choice = kind, choice
	return emit(&d.ev)
}

func (d *geminiStream) chunk(data string, emit Emit) error {
	if !validJSON(data) {
		return &UpstreamError{Status: 502, Type: "api_error", Message: "decoding gemini event: not valid JSON: " + geminiSnippet(data)}
	}
	if data = strings.TrimSpace(data); !strings.HasPrefix(data, "{") {
		return &UpstreamError{Status: 502, Type: "api_error", Message: "decoding gemini event: not a JSON object: " + geminiSnippet(data)}
	}
	// Fields are read with the raw scanner (geminiFields) rather than gjson's ForEach,
	// which rescans each level and unescapes every string it passes.
	// Values are raw slices of data; usageMetadata is read in the same pass.
	var cands, feedback, respID, model, failure string
	hasUsage := false
	var prompt, toolPrompt, candTokens, thoughts, cached int
	geminiObjectAt(data, 0, func(k string, v int) int {
		switch k {
		case "usageMetadata":
			hasUsage = data[v] == '{'
			if !hasUsage {
				return -1
			}
			prompt, toolPrompt, candTokens, thoughts, cached = 0, 0, 0, 0, 0
			return geminiObjectAt(data, v, func(k string, v int) int {
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
					return -1
				}
				end := geminiValueEnd(data, v)
				*n, _ = strconv.Atoi(data[v:end])
				return end
			})
		case "candidates", "promptFeedback", "responseId", "modelVersion", "error":
		default:
			return -1
		}
		end := geminiValueEnd(data, v)
		raw := data[v:end]
		switch k {
		case "candidates":
			cands = raw
		case "promptFeedback":
			feedback = raw
		case "responseId":
			respID = geminiRawString(raw)
		case "modelVersion":
			model = geminiRawString(raw)
		case "error":
			failure = raw
		}
		return end
	})
	if failure != "" {
		failed := geminiError(0, gjson.Parse(failure))
		d.phase = geminiClosed
		d.ev = Event{Kind: EventError, Err: failed}
		if err := emit(&d.ev); err != nil && err != error(failed) {
			return err
		}
		return failed
	}
	if d.phase == geminiWaiting {
		d.phase = geminiStreaming
		if respID == "" || strings.Contains(respID, carrySep) {
			h := fnv.New64a()
			h.Write([]byte(data))
			d.callBase = strconv.FormatUint(h.Sum64(), 36)
		} else {
			d.callBase = strings.Clone(respID)
		}
		d.ev = Event{ID: respID, Model: model}
		if err := d.emit(emit, EventStart, 0); err != nil {
			return err
		}
		d.ev.ID, d.ev.Model = "", ""
	}
	if cands != "" && cands != "null" {
		if cands[0] != '[' {
			return &UpstreamError{Status: 502, Type: "api_error", Message: "decoding gemini event: candidates is not an array"}
		}
		pos := 0
		var err error
		geminiArrayAt(cands, 0, func(v int) (int, bool) {
			i := pos
			pos++
			var parts, finish, logprobs string
			end := geminiFieldsIn(cands, v, func(k string, v int) int {
				switch k {
				case "content":
					return geminiFieldsIn(cands, v, func(k string, v int) int {
						if k != "parts" {
							return -1
						}
						end := geminiValueEnd(cands, v)
						parts = cands[v:end]
						return end
					})
				case "index", "finishReason", "logprobsResult":
				default:
					return -1
				}
				end := geminiValueEnd(cands, v)
				raw := cands[v:end]
				switch k {
				case "index":
					if n, err := strconv.Atoi(raw); err == nil {
						i = n
					}
				case "finishReason":
					finish = geminiRawString(raw)
				case "logprobsResult":
					logprobs = raw
				}
				return end
			})
			if i < 0 || i > 64 {
				err = &UpstreamError{Status: 502, Type: "api_error", Message: "decoding gemini event: candidate index " + strconv.Itoa(i) + " out of range"}
				return end, false
			}
			err = d.candidate(i, parts, finish, logprobs, emit)
			return end, err == nil
		})
		if err != nil {
			return err
		}
	}
	if hasUsage {
		d.hasUsage = true
		cands := candTokens
		d.usage = Usage{
			// promptTokenCount already counts the cached content; tool-use prompt
			// tokens (grounding results fed back) are input too.
			PromptTokens:     prompt + toolPrompt,
			CompletionTokens: cands + thoughts,
			CachedTokens:     cached,
			ReasoningTokens:  thoughts,
		}
	}
	if feedback != "" {
		if br := gjson.Get(feedback, "blockReason"); br.Str != "" && br.Str != "BLOCK_REASON_UNSPECIFIED" {
			d.blocked = true
		}
	}
	return nil
}

func (d *geminiStream) cand(i int) *geminiCandidate {
	for len(d.cands) <= i {
		d.cands = append(d.cands, geminiCandidate{})
	}
	return &d.cands[i]
}

func (d *geminiStream) candidate(i int, parts, fr, logprobs string, emit Emit) error {
	cs := d.cand(i)
	cs.seen = true
	if parts != "" && parts != "null" && parts[0] != '[' {
		return &UpstreamError{Status: 502, Type: "api_error", Message: "decoding gemini event: content.parts is not an array"}
	}
	d.lp, d.lpPart = d.lp[:0], -1
	if logprobs != "" && logprobs != "null" {
		if err := d.logprobs(logprobs); err != nil {
			return err
		}
		if len(d.lp) > 0 {
			d.lpPart = geminiLastTextPart(parts)
		}
	}
	var err error
	n := 0
	if strings.HasPrefix(parts, "[") {
		geminiArrayAt(parts, 0, func(v int) (int, bool) {
			k := n
			n++
			if parts[v] != '{' {
				return -1, true
			}
			var lp []TokenLogprob
			if k == d.lpPart {
				lp = d.lp
			}
			var text, fc, sig string
			thought := false
			end := geminiObjectAt(parts, v, func(k string, v int) int {
				switch k {
				case "text", "functionCall", "thoughtSignature", "thought":
				default:
					return -1
				}
				end := geminiValueEnd(parts, v)
				raw := parts[v:end]
				switch k {
				case "text":
					text = raw
				case "functionCall":
					fc = raw
				case "thoughtSignature":
					sig = raw
				case "thought":
					thought = raw == "true"
				}
				return end
			})
			err = d.partFields(i, cs, text, fc, sig, thought, lp, emit)
			return end, err == nil
		})
	}
	if err != nil {
		return err
	}
	if len(d.lp) > 0 && d.lpPart < 0 {
		// Logprobs with no answer text in this chunk: they go on a chunk of their own.
		d.ev.Logprobs = d.lp
		err := d.emit(emit, EventLogprobs, i)
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

// partFields decodes one part of candidate i from its raw fields; lp are the logprobs
// its text carries, if any.
func (d *geminiStream) partFields(i int, cs *geminiCandidate, text, fc, sig string, thought bool, lp []TokenLogprob, emit Emit) error {
	sigStr := ""
	if sig != "" {
		sigStr = geminiRawString(sig)
	}
	if fc != "" {
		return d.functionCall(i, cs, gjson.Parse(fc), sigStr, emit)
	}
	if sigStr != "" {
		cs.pendingSig = strings.Clone(sigStr)
	}
	if len(text) <= 2 || text[0] != '"' {
		return nil
	}
	if cs.open {
		if err := d.endOpenCall(i, cs, emit); err != nil {
			return err
		}
	}
	d.ev.Text = d.unquote(text)
	kind := EventTextDelta
	if thought {
		kind = EventReasoningDelta
	} else {
		d.ev.Logprobs = lp
	}
	err := d.emit(emit, kind, i)
	d.ev.Text, d.ev.Logprobs = "", nil
	return err
}

func (d *geminiStream) functionCall(i int, cs *geminiCandidate, fc gjson.Result, sig string, emit Emit) error {
	if !fc.IsObject() {
		return &UpstreamError{Status: 502, Type: "api_error", Message: "decoding gemini event: functionCall is not an object"}
	}
	name := fc.Get("name").Str
	willContinue := fc.Get("willContinue").Type == gjson.True
	partial := fc.Get("partialArgs")
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
	d.ev.CallID = d.callID(fc.Get("id").Str, sig, cs.pendingSig, i, n)
	cs.pendingSig = ""
	if err := d.emit(emit, EventToolCallStart, i); err != nil {
		return err
	}
	d.ev.Name, d.ev.CallID = "", ""
	if args := fc.Get("args"); args.IsObject() {
		raw := args.Raw
		if strings.ContainsAny(raw, "\n\r\t") {
			raw = args.Get("@ugly").Raw
		}
		// A copy: the core Assembler keeps Arguments with += , which aliases the first
		// fragment instead of copying it.
		d.ev.Text = strings.Clone(raw)
		err := d.emit(emit, EventToolCallArgsDelta, i)
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
	return d.emit(emit, EventToolCallEnd, i)
}

// callID mints the OpenAI id of a call: Gemini's own id when it sent one, else call_ +
// the response id + the call's position, carrying the thought signatures.
func (d *geminiStream) callID(upstream, sig, textSig string, choice, n int) string {
	carry := geminiCarry{callSig: sig, textSig: textSig}
	id := upstream
	if id != "" && !strings.Contains(id, carrySep) {
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
	var st [0]byte
	return CarryID(id, appendGeminiCarry(st[:], carry))
}

// partialArgs applies streamed argument fragments ({jsonPath, stringValue|numberValue|
// boolValue|nullValue, willContinue}) to the open call's argument object.
func (d *geminiStream) partialArgs(cs *geminiCandidate, partial gjson.Result) {
	partial.ForEach(func(_, el gjson.Result) bool {
		path := geminiSJSONPath(el.Get("jsonPath").Str)
		if path == "" {
			return true
		}
		if cs.inStr && cs.strPath != path {
			cs.finishString()
		}
		if sv := el.Get("stringValue"); sv.Exists() {
			if !cs.inStr {
				cs.inStr, cs.strPath, cs.str = true, path, cs.str[:0]
			}
			cs.str = append(cs.str, sv.Str...)
			if el.Get("willContinue").Type != gjson.True {
				cs.finishString()
			}
			return true
		}
		var raw string
		if v := el.Get("numberValue"); v.Exists() {
			raw = v.Raw
		} else if v := el.Get("boolValue"); v.Exists() {
			raw = v.Raw
		} else if el.Get("nullValue").Exists() {
			raw = "null"
		} else {
			return true
		}
		cs.args, _ = sjson.SetRawBytes(cs.args, path, []byte(raw))
		return true
	})
}

func (cs *geminiCandidate) finishString() {
	cs.args, _ = sjson.SetRawBytes(cs.args, cs.strPath, AppendString(nil, string(cs.str)))
	cs.inStr, cs.str = false, cs.str[:0]
}

// endOpenCall ends the open streamed call, emitting its arguments in one piece.
func (d *geminiStream) endOpenCall(i int, cs *geminiCandidate, emit Emit) error {
	if cs.inStr {
		cs.finishString()
	}
	cs.open = false
	d.ev.Index = cs.openIdx
	if len(cs.args) > 0 {
		d.ev.Text = string(cs.args)
		err := d.emit(emit, EventToolCallArgsDelta, i)
		d.ev.Text = ""
		if err != nil {
			return err
		}
	}
	return d.emit(emit, EventToolCallEnd, i)
}

// Close ends the response: it emits the usage and one finish per candidate, or, when the
// stream stopped before every candidate had a finishReason, returns an error.
func (d *geminiStream) Close(emit Emit) error {
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
		return &UpstreamError{Status: 502, Type: "api_error", Message: msg}
	}
	for i := range d.cands {
		if cs := &d.cands[i]; cs.open {
			if err := d.endOpenCall(i, cs, emit); err != nil {
				return err
			}
		}
	}
	d.ev = Event{Usage: d.usage}
	if err := d.emit(emit, EventUsage, 0); err != nil {
		return err
	}
	d.ev.Usage = Usage{}
	if len(d.cands) == 0 {
		// A prompt refused by promptFeedback: no candidates at all.
		d.ev.FinishReason = FinishContentFilter
		return d.emit(emit, EventFinish, 0)
	}
	for i := range d.cands {
		cs := &d.cands[i]
		d.ev.FinishReason = cs.finish
		if d.ev.FinishReason == "" {
			d.ev.FinishReason = geminiFinishReason("STOP", cs.calls > 0)
			if d.blocked {
				d.ev.FinishReason = FinishContentFilter
			}
		}
		if err := d.emit(emit, EventFinish, i); err != nil {
			return err
		}
	}
	return nil
}

// geminiFinishReason maps a Gemini finishReason to OpenAI's.
func geminiFinishReason(r string, calledTools bool) string {
	switch r {
	case "MAX_TOKENS":
		return FinishLength
	case "SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII",
		"IMAGE_SAFETY", "IMAGE_PROHIBITED_CONTENT", "IMAGE_RECITATION":
		return FinishContentFilter
	}
	// STOP, and reasons OpenAI has no name for (OTHER, LANGUAGE, MALFORMED_FUNCTION_CALL,
	// UNEXPECTED_TOOL_CALL, TOO_MANY_TOOL_CALLS...), end the choice normally.
	if calledTools {
		return FinishToolCalls
	}
	return FinishStop
}

// DecodeResponse decodes a generateContent response body. A JSON array of responses (what
// streamGenerateContent returns without alt=sse) is decoded as the chunks of one response.
func (geminiProvider) DecodeResponse(body []byte, emit Emit) error {
	d := geminiStream{whole: true}
	s := strings.TrimSpace(geminiBytesString(body))
	if strings.HasPrefix(s, "[") {
		if !gjson.Valid(s) {
			return &UpstreamError{Status: 502, Type: "api_error", Message: "decoding gemini response: not valid JSON: " + geminiSnippet(s)}
		}
		var err error
		gjson.Parse(s).ForEach(func(_, v gjson.Result) bool {
			err = d.chunk(v.Raw, emit)
			return err == nil
		})
		if err != nil {
			return err
		}
	} else if err := d.chunk(s, emit); err != nil {
		return err
	}
	return d.Close(emit)
}
