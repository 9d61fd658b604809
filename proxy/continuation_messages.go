package proxy

import (
	"strconv"
	"strings"

	"github.com/tidwall/sjson"

	"github.com/agate-gateway/agate/internal/jsonx"
	"github.com/agate-gateway/agate/translate"
)

// This file continues a Messages passthrough stream (a /v1/messages client on anthropic
// backends: the Claude Code path) that failed after part of its answer reached the
// client, over continueTurn's loop: the same route while its retries last, then its
// fallbacks, within the request's deadline. Its mode is the route's:
//
//   - prefill (anthropic's default): the client's body again, with the text the client
//     has (its text blocks, its trailing whitespace trimmed) appended as a final
//     assistant message. A 400 to it is followed by a restart; the client never sees it.
//   - restart: the client's body again; the new answer's text is relayed from where the
//     client's ends when it repeats the client's text, else the stream ends with the
//     in-band 502 continuation_diverged.
//
// The client sees one message: the continuation's message_start is swallowed, the
// blocks it repeats are swallowed, its first new content goes on in the block the client
// has open when they are of one kind (text into text; a thinking or tool_use block that
// showed nothing yet into the same kind), else the client's open block is closed and the
// new blocks are numbered after the client's. Its message_delta carries the usage of
// every attempt summed (input_tokens, the cache figures and output_tokens), and it is
// the only one: a stream is not continued after its message_delta reached the client.
//
// What cannot be continued ends with the failure, as before continuation existed: a
// stream whose tool_use input (any byte of an input_json_delta), a finished tool_use
// block, or a built-in tool block reached the client; a stream cut while its only
// content is thinking the client has part of (thinking is neither prefilled nor
// reproducible). A tool_use or thinking block the client has open with nothing of it
// shown is continued only into a block of its kind (a tool_use of its name); a new
// answer with anything else there ends with the in-band continuation_diverged rather
// than closing it empty (hollow). Text after a thinking block is continued by restart (the API refuses a
// prefill when thinking is on), the new answer's thinking swallowed.

// blockKind is the kind of a Messages content block.
type blockKind uint8

const (
	blockNone blockKind = iota
	blockText
	blockThinking // thinking and redacted_thinking
	blockTool
	blockOther // server tool blocks and block types added later
)

// msgFollow is what a forwarded Messages stream showed the client, and where the
// running attempt's blocks go.
type msgFollow struct {
	// blocks is how many content blocks the client had started; open is the index of its
	// open block (-1: none), of kind, shown when any delta of it reached the client,
	// named name when a tool_use.
	blocks, open int
	kind         blockKind
	shown        bool
	name         string
	// thinking is set once thinking reached the client: not prefilled from then on.
	thinking bool
	// prefill is the running continuation's prefill ("": none).
	prefill string
	// The running attempt: its blocks started so far, its open block's kind and the
	// client's index for it (to; -1: swallowed, a repeat).
	starts int
	at     blockKind
	to     int
	// What the decoder read of the event being followed (note): its text, its tool_use
	// name, and whether it was a text delta, thinking or tool input.
	text, evName              []byte
	gotText, gotThink, gotArg bool
	sc                        jsonx.Scanner
}

// begin starts an attempt's stream.
func (fl *msgFollow) begin(active bool) {
	if !active {
		*fl = msgFollow{open: -1, text: fl.text[:0], evName: fl.evName[:0], sc: fl.sc}
	}
	fl.starts, fl.at, fl.to = 0, blockNone, -1
	fl.reset()
}

func (fl *msgFollow) reset() {
	fl.text, fl.evName = fl.text[:0], fl.evName[:0]
	fl.gotText, fl.gotThink, fl.gotArg = false, false, false
}

// note records what the decoder read of the event being followed: the text of the first
// attempt, which reaches the client as it came, straight into k.said; a continuation's
// into text, for follow to compare.
func (fl *msgFollow) note(ev *translate.Event, k *resume) {
	switch ev.Kind {
	case translate.EventTextDelta:
		fl.gotText = true
		if !k.active {
			if cap(k.said) == 0 {
				k.said = make([]byte, 0, max(len(ev.Text), 1<<10)) // most answers: one allocation
			}
			k.said = append(k.said, ev.Text...)
			break
		}
		fl.text = append(fl.text, ev.Text...)
	case translate.EventReasoningDelta, translate.EventReasoningBlock:
		fl.gotThink = true
	case translate.EventToolCallStart:
		fl.evName = append(fl.evName, ev.Name...)
	case translate.EventToolCallArgsDelta:
		fl.gotArg = true
	}
}

// contentBlock names the member of a content_block_start that blockKindOf reads.
var contentBlock = [...]string{"content_block"}

// blockKindOf returns the kind of the block a content_block_start starts.
func (fl *msgFollow) blockKindOf(data []byte) blockKind {
	sc := &fl.sc
	sc.Reset(jsonx.View(data))
	var m [1]jsonx.Value
	if _, ok := sc.RootMembers(contentBlock[:], m[:]); !ok {
		return blockOther
	}
	switch sc.Get(m[0], "type").Str {
	case "text":
		return blockText
	case "thinking", "redacted_thinking":
		return blockThinking
	case "tool_use":
		return blockTool
	}
	return blockOther
}

// follow decides about an upstream event (typ, data) of a Messages passthrough that may be
// continued (resume.on), read by the decoder: it returns dst with any event the client is
// to get before it (a stop of the client's open block, a start of a new one), the event's
// data as the client is to get it, skip when the client is to get nothing of it, or the
// error that ends the attempt (errDiverged).
func (f *messagesForward) follow(dst, typ, data []byte) (_ []byte, out []byte, skip bool, err error) {
	fl := &f.fol
	k := &f.c.call.resume
	defer fl.reset()
	switch fl.typeOf(typ, data) {
	case "message_start":
		return dst, data, k.active, nil // a continuation's: the client's message started before
	case "ping":
		return dst, data, k.active && k.pending != "", nil // nothing of an attempt is shown while it repeats the client's text
	case "content_block_start":
		fl.starts++
		fl.at, fl.to = fl.blockKindOf(data), -1
		if k.active && k.pending != "" {
			if fl.at == blockText || fl.at == blockThinking {
				return dst, nil, true, nil // repeated, or the new answer's thinking: the client has its own
			}
			if !k.lenient {
				return dst, nil, true, errDiverged // a tool call where the client's text was
			}
			k.pending = ""
		}
		if k.active && fl.open >= 0 && fl.joins(fl.at, string(fl.evName)) {
			fl.to = fl.open
			return dst, nil, true, nil // goes on in the block the client has open
		}
		if k.active && fl.hollow() {
			return dst, nil, true, errDiverged
		}
		dst = fl.closeOpen(dst)
		fl.to = fl.blocks
		fl.open, fl.kind, fl.shown, fl.name = fl.blocks, fl.at, false, string(fl.evName)
		fl.blocks++
		switch fl.at {
		case blockOther:
			k.blocked = "builtin_item"
		case blockThinking:
			if fl.gotThink { // redacted_thinking: whole at its start
				fl.shown, fl.thinking = true, true
				k.reasoning = k.reasoning || len(k.said) == 0
			}
		case blockText:
			if k.active {
				k.said = append(k.said, fl.text...)
			}
			fl.shown = fl.gotText
		}
		return dst, reindex(data, k.active, fl.to), false, nil
	case "content_block_delta":
		if fl.to < 0 {
			if fl.at != blockText || !fl.gotText {
				return dst, nil, true, nil // a swallowed block's
			}
			rest, ok := k.match(string(fl.text))
			if !ok {
				return dst, nil, true, errDiverged
			}
			if rest == "" {
				return dst, nil, true, nil // repeated: the client has it
			}
			// The rest of it is new to the client: in its open text block, or a new one.
			if fl.open >= 0 && fl.kind == blockText {
				fl.to = fl.open
			} else {
				if fl.hollow() {
					return dst, nil, true, errDiverged
				}
				dst = fl.closeOpen(dst)
				fl.to, fl.open, fl.kind, fl.shown = fl.blocks, fl.blocks, blockText, false
				fl.blocks++
				dst = appendSSE(dst, []byte("content_block_start"), appendBlockStart(nil, fl.to))
			}
			fl.shown = true
			k.said = append(k.said, rest...)
			return dst, appendTextDelta(nil, fl.to, rest), false, nil
		}
		fl.shown = true
		switch {
		case fl.gotText:
			if k.active {
				k.said = append(k.said, fl.text...)
			}
		case fl.gotThink:
			fl.thinking = true
			k.reasoning = k.reasoning || len(k.said) == 0
		case fl.gotArg:
			k.blocked = "tool_call"
		}
		return dst, reindex(data, k.active, fl.to), false, nil
	case "content_block_stop":
		to := fl.to
		fl.to = -1
		if to < 0 {
			return dst, nil, true, nil // a swallowed block's
		}
		switch fl.kind {
		case blockTool:
			k.blocked = "tool_call"
		case blockThinking:
			fl.thinking = true
		}
		fl.open = -1
		return dst, reindex(data, k.active, to), false, nil
	case "message_delta":
		if k.active {
			if k.pending != "" && !k.lenient {
				return dst, nil, true, errDiverged // the new answer ended before repeating the client's text
			}
			k.pending = ""
			if fl.hollow() {
				return dst, nil, true, errDiverged
			}
			dst = fl.closeOpen(dst)
			data = f.summedUsage(data)
		}
		k.blocked = "finished"
	}
	return dst, data, false, nil
}

// memberType names the member typeOf reads.
var memberType = [...]string{"type"}

// typeOf returns the type of an event, as its data says (the decoder's reading): typ, the
// SSE event name, when the data opens with it as the API writes it, else as read.
func (fl *msgFollow) typeOf(typ, data []byte) string {
	const open = `{"type":"`
	if n := len(open) + len(typ); len(data) > n && string(data[:len(open)]) == open && string(data[len(open):n]) == string(typ) && data[n] == '"' {
		return jsonx.View(typ)
	}
	sc := &fl.sc
	sc.Reset(jsonx.View(data))
	var m [1]jsonx.Value
	if _, ok := sc.RootMembers(memberType[:], m[:]); !ok {
		return ""
	}
	return m[0].Str
}

// joins reports whether a new block of kind at (a tool_use named name) goes on in the
// client's open block: text into text, anything else into an open block of its kind of
// which nothing was shown (a tool_use of the same name).
func (fl *msgFollow) joins(at blockKind, name string) bool {
	switch {
	case at != fl.kind:
		return false
	case at == blockText:
		return true
	}
	return !fl.shown && (at != blockTool || name == fl.name)
}

// hollow reports whether the client's open block is a tool_use or thinking block of
// which nothing reached it but its start, which a continuation cannot close honestly
// when the new answer has something else there: closed, it would be a call with empty
// input the client runs, or a thinking block without the signature the API asks back.
// Not closed, the continuation ends with the in-band continuation_diverged instead.
func (fl *msgFollow) hollow() bool {
	return fl.open >= 0 && !fl.shown && (fl.kind == blockTool || fl.kind == blockThinking)
}

// closeOpen appends a content_block_stop of the client's open block, if any, to dst.
func (fl *msgFollow) closeOpen(dst []byte) []byte {
	if fl.open < 0 {
		return dst
	}
	d := strconv.AppendInt([]byte(`{"type":"content_block_stop","index":`), int64(fl.open), 10)
	fl.open = -1
	return appendSSE(dst, []byte("content_block_stop"), append(d, '}'))
}

// reindex returns data, an event of the running attempt's open block, with the client's
// index for it, to, when the attempt is a continuation (whose blocks the client may
// number otherwise; a first attempt's events go as they came).
func reindex(data []byte, active bool, to int) []byte {
	if !active || to < 0 {
		return data
	}
	if d, err := sjson.SetBytes(data, "index", to); err == nil {
		return d
	}
	return data
}

// appendBlockStart appends the data of a content_block_start of an empty text block.
func appendBlockStart(dst []byte, index int) []byte {
	dst = strconv.AppendInt(append(dst, `{"type":"content_block_start","index":`...), int64(index), 10)
	return append(dst, `,"content_block":{"type":"text","text":""}}`...)
}

// appendTextDelta appends the data of a content_block_delta of text.
func appendTextDelta(dst []byte, index int, text string) []byte {
	dst = strconv.AppendInt(append(dst, `{"type":"content_block_delta","index":`...), int64(index), 10)
	dst = jsonx.AppendString(append(dst, `,"delta":{"type":"text_delta","text":`...), text)
	return append(dst, "}}"...)
}

// summedUsage returns a continuation's message_delta with its usage the sum of every
// attempt's: the earlier ones' (resume.prior) and this one's as its decoder read it.
func (f *messagesForward) summedUsage(data []byte) []byte {
	u := f.c.call.resume.prior
	if ur, ok := f.dec.(translate.UsageReporter); ok {
		own, _ := ur.UsageSoFar()
		u.Add(own)
	}
	for _, m := range [...]struct {
		path string
		n    int
	}{
		{"usage.input_tokens", u.PromptTokens - u.CachedTokens - u.CacheCreationTokens},
		{"usage.cache_creation_input_tokens", u.CacheCreationTokens},
		{"usage.cache_read_input_tokens", u.CachedTokens},
		{"usage.output_tokens", u.CompletionTokens},
	} {
		if d, err := sjson.SetBytes(data, m.path, m.n); err == nil {
			data = d
		}
	}
	return data
}

// resumeMode prepares a continuation attempt in mode (forwardResumer): a prefill of the
// client's text when mode is prefill, the client has text and no thinking reached it,
// else a restart that is to repeat the client's text. It returns the mode used.
func (f *messagesForward) resumeMode(mode contMode) contMode {
	k := &f.c.call.resume
	fl := &f.fol
	k.lenient, k.prefilled, k.pending = false, false, string(k.said)
	fl.prefill = ""
	if mode != contPrefill || len(k.said) == 0 || fl.thinking {
		return contRestart
	}
	p := strings.TrimRight(k.pending, " \t\r\n")
	k.pending, k.lenient = k.pending[len(p):], true // the whitespace trimmed: repeated loosely
	if p == "" {
		return contRestart
	}
	k.prefilled, fl.prefill = true, p
	return contPrefill
}

// appendPrefilled appends the upstream body of a prefilled continuation to dst: the
// client's body for route r with the prefill appended to its messages as an assistant
// turn (the API continues a final assistant turn).
func (f *messagesForward) appendPrefilled(dst []byte, r *route) ([]byte, error) {
	var body []byte
	if c, ok := cloudClaude(r); ok { // Claude on Vertex or Bedrock: the cloud's body
		body = f.cloudBody(nil, r, c)
	} else {
		body = (*messagesRun)(f).passBody(nil, r)
	}
	turn := jsonx.AppendString([]byte(`{"role":"assistant","content":`), f.fol.prefill)
	out, err := sjson.SetRawBytes(body, "messages.-1", append(turn, '}'))
	if err != nil {
		return dst, err
	}
	return append(dst, out...), nil
}

// continuesError reports whether an upstream error event, err, ends an attempt the
// continuation may take up (rather than being forwarded as it came): one the client saw
// part of an answer before, of a kind that may be continued.
func (f *messagesForward) continuesError(err error) bool {
	c := f.c.call
	return c.resume.on && (c.sent || c.resume.active) && upstreamContinuable(err)
}

// appendHeld appends a held upstream error event as event forwards one (eventHolder).
func (f *messagesForward) appendHeld(dst []byte, h *heldEvent) []byte {
	return appendSSE(dst, h.typ, h.data)
}
