package openai

import (
	"github.com/agate-gateway/agate/internal/jsonx"
	"github.com/agate-gateway/agate/translate"
)

// answerChoices is how many choices DecodeResponse reads in its one pass over a chat
// completion; an answer with more (n > 2) is decoded by walking its choices again
// (decodeOpenAIChunk over the checked body).
const answerChoices = 2

// answer is what DecodeResponse's one pass reads of a chat completion: the top-level
// members chunkMembers names (the first of each name), the usage the first usage member
// reports, and the members of the first answerChoices choices of the first choices
// member.
type answer struct {
	top     chunkMembers
	usage   translate.Usage
	choices [answerChoices]answerChoice
	n       int  // choices read into choices
	more    bool // the choices array has more elements than choices holds
}

// answerChoice is what the one pass reads of one element of choices: its members at the
// choice* positions, and the members at the delta* positions of the first delta or the
// first message object, whichever came first, read from the object at dmAt (0: none
// read). The decode uses the delta when there is one, else the message, and reads that
// object's members again only when the pass read the other's (a message before a
// delta).
type answerChoice struct {
	cm   [choiceN]jsonx.Value
	dm   [deltaN]jsonx.Value
	dmAt int
}

// read reads the completion at the cursor, the whole input, in one pass that checks its
// syntax as Root does. It reports false when the input is not one JSON object (which
// DecodeResponse reports as malformed whether or not it is JSON).
func (a *answer) read(sc *jsonx.Scanner) bool {
	if sc.Peek() != '{' {
		return false
	}
	top := &a.top
	usage := false
	for n := 0; sc.NextField(&n); {
		var ok bool
		switch sc.Key() {
		case "id":
			ok = sc.First(&top[chunkID])
		case "model":
			ok = sc.First(&top[chunkModel])
		case "choices":
			if top[chunkChoices].Kind == jsonx.Missing && sc.Peek() == '[' {
				ok = a.readChoices(sc)
			} else {
				ok = sc.First(&top[chunkChoices])
			}
		case "usage":
			if usage {
				ok = sc.Skip()
			} else {
				usage = true
				a.usage, ok = usageAt(sc, &top[chunkUsage])
			}
		case "error":
			ok = sc.First(&top[chunkError])
		default:
			ok = sc.Skip()
		}
		if !ok {
			return false
		}
	}
	return !sc.Failed() && sc.AtEnd()
}

// readChoices reads the choices array at the cursor into a.choices (the first
// answerChoices elements; a.more when there are others) and top[chunkChoices].
func (a *answer) readChoices(sc *jsonx.Scanner) bool {
	at := sc.Pos()
	for n := 0; sc.NextElem(&n); {
		var ok bool
		if a.n < len(a.choices) {
			ok = readChoice(sc, &a.choices[a.n])
			a.n++
		} else {
			a.more = true
			ok = sc.Skip()
		}
		if !ok {
			return false
		}
	}
	if sc.Failed() {
		return false
	}
	a.top[chunkChoices].Set(jsonx.Array, sc.Input()[at:sc.Pos()], at, "")
	return true
}

// readChoice reads the element of choices at the cursor into ch (no members when it is
// not an object).
func readChoice(sc *jsonx.Scanner, ch *answerChoice) bool {
	if sc.Peek() != '{' {
		var v jsonx.Value
		return sc.Value(&v)
	}
	cm := &ch.cm
	for n := 0; sc.NextField(&n); {
		var ok bool
		switch sc.Key() {
		case "index":
			ok = sc.First(&cm[choiceIndex])
		case "delta":
			ok = readDeltaAt(sc, ch, choiceDelta)
		case "message":
			ok = readDeltaAt(sc, ch, choiceMessage)
		case "logprobs":
			ok = sc.First(&cm[choiceLogprobs])
		case "finish_reason":
			ok = sc.First(&cm[choiceFinish])
		default:
			ok = sc.Skip()
		}
		if !ok {
			return false
		}
	}
	return !sc.Failed()
}

// readDeltaAt reads the choice's member at position j (choiceDelta or choiceMessage) at
// the cursor, as First would, and the members of its object into ch.dm when none were
// read yet and it may be the one the decode uses (a message after a delta is not).
func readDeltaAt(sc *jsonx.Scanner, ch *answerChoice, j int) bool {
	v := &ch.cm[j]
	if v.Kind != jsonx.Missing {
		return sc.Skip()
	}
	if ch.dmAt != 0 || j == choiceMessage && ch.cm[choiceDelta].Exists() || sc.Peek() != '{' {
		return sc.Value(v)
	}
	at := sc.Pos()
	dm := &ch.dm
	for n := 0; sc.NextField(&n); {
		var ok bool
		switch sc.Key() {
		case "reasoning_content":
			ok = sc.First(&dm[deltaReasoningContent])
		case "reasoning":
			ok = sc.First(&dm[deltaReasoning])
		case "content":
			ok = sc.First(&dm[deltaContent])
		case "refusal":
			ok = sc.First(&dm[deltaRefusal])
		case "tool_calls":
			ok = sc.First(&dm[deltaToolCalls])
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
	v.Set(jsonx.Object, sc.Input()[at:sc.Pos()], at, "")
	ch.dmAt = at
	return true
}

// emit emits the events of the answer a read (which has a choices array and no error
// object): the events decodeOpenAIChunk emits for a whole completion, in its order, through
// *ev reused for each (an Event's fields are valid only while emit runs).
func (a *answer) emit(sc *jsonx.Scanner, ev *translate.Event, emit translate.Emit) error {
	*ev = translate.Event{Kind: translate.EventStart, ID: a.top[chunkID].Str, Model: a.top[chunkModel].Str}
	if err := emit(ev); err != nil {
		return err
	}
	for i := range a.n {
		if err := a.choices[i].emit(sc, ev, emit); err != nil {
			return err
		}
	}
	if a.top[chunkUsage].Kind == jsonx.Object {
		*ev = translate.Event{Kind: translate.EventUsage, Usage: a.usage}
		return emit(ev)
	}
	return nil
}

// emit emits one choice's events through *ev, as decodeOpenAIChunk's loop over the
// choices does.
func (ch *answerChoice) emit(sc *jsonx.Scanner, ev *translate.Event, emit translate.Emit) error {
	cm, dm := &ch.cm, &ch.dm
	choice := int(cm[choiceIndex].Int())
	d := cm[choiceDelta]
	if !d.Exists() {
		d = cm[choiceMessage]
	}
	switch {
	case d.Kind != jsonx.Object:
		clear(dm[:]) // a message read before a delta that is not an object
	case d.At != ch.dmAt:
		clear(dm[:]) // the pass read the message's, and a delta followed
		sc.Members(d, []string{"reasoning_content", "reasoning", "content", "refusal", "tool_calls"}, dm[:])
	}
	if r := dm[deltaReasoningContent]; r.Str != "" {
		*ev = translate.Event{Kind: translate.EventReasoningDelta, Choice: choice, Text: r.Str}
		if err := emit(ev); err != nil {
			return err
		}
	} else if r := dm[deltaReasoning]; r.Kind == jsonx.String && r.Str != "" {
		*ev = translate.Event{Kind: translate.EventReasoningDelta, Choice: choice, Text: r.Str}
		if err := emit(ev); err != nil {
			return err
		}
	}
	var lp []translate.TokenLogprob
	if l := cm[choiceLogprobs]; l.Kind == jsonx.Object {
		lp = openAILogprobs(sc, sc.Get(l, "content"))
	}
	if t := dm[deltaContent]; t.Str != "" {
		*ev = translate.Event{Kind: translate.EventTextDelta, Choice: choice, Text: t.Str, Logprobs: lp}
		if err := emit(ev); err != nil {
			return err
		}
	} else if lp != nil {
		*ev = translate.Event{Kind: translate.EventLogprobs, Choice: choice, Logprobs: lp}
		if err := emit(ev); err != nil {
			return err
		}
	}
	if t := dm[deltaRefusal]; t.Str != "" {
		*ev = translate.Event{Kind: translate.EventRefusalDelta, Choice: choice, Text: t.Str}
		if err := emit(ev); err != nil {
			return err
		}
	}
	if err := emitToolCalls(sc, dm[deltaToolCalls], choice, ev, emit); err != nil {
		return err
	}
	if f := cm[choiceFinish]; f.Str != "" {
		*ev = translate.Event{Kind: translate.EventFinish, Choice: choice, FinishReason: f.Str}
		return emit(ev)
	}
	return nil
}

// emitToolCalls emits the events of a message's tool_calls, as decodeOpenAIChunk does: an
// array's elements, or an object's member values (sc.Each reads both), each a call. An
// array's calls are read in one walk (readCall), each call's function with it.
func emitToolCalls(sc *jsonx.Scanner, calls jsonx.Value, choice int, ev *translate.Event, emit translate.Emit) error {
	var err error
	pos := 0
	var tm [3]jsonx.Value // index, id, function
	var fm [2]jsonx.Value // the function's name, arguments
	call := func() bool {
		key := pos
		if ix := tm[0]; ix.Exists() {
			key = int(ix.Int())
		}
		pos++
		if id := tm[1]; id.Str != "" {
			*ev = translate.Event{Kind: translate.EventToolCallStart, Choice: choice, Index: key, CallID: id.Str, Name: fm[0].Str}
			if err = emit(ev); err != nil {
				return false
			}
		}
		if a := fm[1]; a.Str != "" {
			*ev = translate.Event{Kind: translate.EventToolCallArgsDelta, Choice: choice, Index: key, Text: a.Str}
			if err = emit(ev); err != nil {
				return false
			}
		}
		return true
	}
	switch calls.Kind {
	case jsonx.Array:
		sc.Seek(calls.At)
		for n := 0; sc.NextElem(&n); {
			clear(tm[:])
			clear(fm[:])
			if !readCall(sc, &tm, &fm) || !call() {
				break
			}
		}
	case jsonx.Object:
		keys := []string{"index", "id", "function"}
		sc.Each(calls, func(_ string, tc jsonx.Value) bool {
			clear(tm[:])
			clear(fm[:])
			sc.Members(tc, keys, tm[:])
			sc.Members(tm[2], []string{"name", "arguments"}, fm[:])
			return call()
		})
	}
	return err
}

// readCall reads the tool call at the cursor, as Members reads a call's index, id and
// function into tm and the function's name and arguments into fm, in one walk: the first
// function member's object is read where it is, not skipped and read again.
func readCall(sc *jsonx.Scanner, tm *[3]jsonx.Value, fm *[2]jsonx.Value) bool {
	if sc.Peek() != '{' {
		var v jsonx.Value
		return sc.Value(&v)
	}
	for n := 0; sc.NextField(&n); {
		var ok bool
		switch sc.Key() {
		case "index":
			ok = sc.First(&tm[0])
		case "id":
			ok = sc.First(&tm[1])
		case "function":
			if tm[2].Kind != jsonx.Missing || sc.Peek() != '{' {
				ok = sc.First(&tm[2])
				break
			}
			at := sc.Pos()
			for m := 0; sc.NextField(&m); {
				switch sc.Key() {
				case "name":
					ok = sc.First(&fm[0])
				case "arguments":
					ok = sc.First(&fm[1])
				default:
					ok = sc.Skip()
				}
				if !ok {
					return false
				}
			}
			ok = !sc.Failed()
			tm[2].Set(jsonx.Object, sc.Input()[at:sc.Pos()], at, "")
		default:
			ok = sc.Skip()
		}
		if !ok {
			return false
		}
	}
	return !sc.Failed()
}
