package openai

import (
	"bytes"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/agate-gateway/agate/internal/jsonx"
	"github.com/agate-gateway/agate/translate"
)

// The OpenAI passthrough forwards the chunks and completions of an OpenAI-compatible
// upstream nearly as they are, but only after reading them as JSON: what the client gets
// keeps the guarantees of the translated backends (the chunk contract in ARCHITECTURE.md),
// whatever an OpenAI-compatible server sends. The reading lives here, next to the decoder
// whose helpers (openAIUsage, the error decoder) it shares; the proxy only moves the bytes.

// ChunkRewriter normalizes the chunks of one passthrough stream. Every chunk leaves
// with the same id, created and model and object "chat.completion.chunk": the id and
// created of the first chunk that has them (OpenAI's own), else FallbackID and the clock's,
// so that a leading chunk without them (Azure's prompt_filter_results chunk: id "",
// created 0, object "") cannot break the stream's identity. The zero value is not usable:
// set the exported fields. Not safe for concurrent use.
type ChunkRewriter struct {
	// Backend names the upstream in error messages.
	Backend string
	// Model is the client-facing model as a JSON string (see jsonx.AppendString).
	Model []byte
	// FallbackID is the gateway's response id, used when the first chunk has none.
	FallbackID string
	// IncludeUsage keeps the usage in the chunks; the gateway always asks the upstream
	// for it, to count tokens, and drops it when the client did not ask.
	IncludeUsage bool
	// Now returns the Unix time used when the first chunk has no created.
	Now func() int64
	// head is `"id":…,"object":…,"created":…,"model":…`, fixed by the first chunk.
	head []byte
	// lead is a copy of the last chunk read whole up to the end of the member before its
	// choices, when it has members there and none is an error, a usage or a choices;
	// leadOut is what those members wrote, and leadN their number. A chunk that starts
	// with the same bytes followed by ',' is in the same state there (JSON is read left to
	// right, and the ',' ends the last value as it did), so it is read from that point.
	// OpenAI repeats the same id, object, created, model and fingerprint in every chunk.
	lead, leadOut []byte
	leadN         int
	// sc reads the current chunk.
	sc jsonx.Scanner
}

// Chunk is what the passthrough reads of an upstream chunk.
type Chunk struct {
	// Usage is the chunk's usage; HasUsage tells whether it had a usage object.
	Usage    translate.Usage
	HasUsage bool
	// Choices is the number of choices in the chunk.
	Choices int
	// Finished is set when some choice has a finish_reason.
	Finished bool
	// OutputBytes is the length of the output the choices' deltas carry: their content,
	// refusal, reasoning_content and reasoning strings and their tool calls' names and
	// arguments, as the chunk writes them (escapes counted as written). The gateway
	// estimates the tokens of a stream that ends without its usage from it.
	OutputBytes int
	// Text is the literal of the first choice's delta content, escapes as written and
	// quotes left out ("" when it has none; jsonx.AppendDecoded gives its value): a view
	// of the data read, valid until AppendChunk returns. Finish is the first non-empty
	// finish_reason, a view as Text is. The gateway follows from them what text a client
	// received, to continue a stream that broke.
	Text, Finish string
	// Opaque is set when a delta carries what cannot be followed as text: a tool call, a
	// refusal or a function_call. Reasoning is set when one carries reasoning_content or
	// reasoning.
	Opaque, Reasoning bool
}

// AppendChunk appends the upstream chunk data, normalized, as an SSE event for the client
// to dst, and reports what it read of it. A payload that is not a JSON object is an
// upstream error naming the backend that matches translate.ErrMalformedEvent (the
// rewriter's state is as it was: the caller may skip the event and read the next); an
// error object in place of a chunk is the upstream's error (status 502). The caller decides whether to send the event (it drops a usage-only
// chunk the client did not ask for). Of a repeated member name, the first is the one read
// (gjson's rule); every member that is not dropped is sent. Nothing of data is retained
// but a copy of its start (lead).
//
// After the stream's first chunk (which fixes the head, see setHead) a chunk is read in
// one pass that checks it, writes it out and reads what it reports of the choices and
// the usage: the strings it copies keep their escapes as written.
func (p *ChunkRewriter) AppendChunk(dst, data []byte) ([]byte, Chunk, error) {
	var ch Chunk
	dst, err := p.AppendChunkTo(dst, data, &ch)
	return dst, ch, err
}

// AppendChunkTo is AppendChunk reporting into *ch, which it zeroes first: the stream's
// path, where the Chunk is not copied out.
func (p *ChunkRewriter) AppendChunkTo(dst, data []byte, ch *Chunk) ([]byte, error) {
	*ch = Chunk{}
	// data lives until AppendChunkTo returns, and every string read from it is copied into
	// dst or converted before then.
	sc := &p.sc
	sc.Reset(jsonx.View(data))
	if sc.Peek() != '{' {
		if !jsonx.Valid(jsonx.View(data)) {
			return dst, malformedChunk(p.Backend, "sent a stream event that is not JSON", data)
		}
		return dst, malformedChunk(p.Backend, "sent a stream event that is not a JSON object", data)
	}
	if p.head == nil {
		root, ok := sc.Root()
		if !ok {
			return dst, malformedChunk(p.Backend, "sent a stream event that is not JSON", data)
		}
		if sc.Get(root, "error").Exists() {
			return dst, New().DecodeError(http.StatusBadGateway, data)
		}
		p.setHead(sc, root)
		sc.Seek(root.At)
	}
	out := append(dst, "data: {"...)
	out = append(out, p.head...)
	var v, errv, usage jsonx.Value
	seenChoices := false
	n, mark, end := 0, len(out), 0 // end: where the last member's value ended
	// plain holds while every member so far is neither an error, a usage nor choices.
	plain, reused := true, false
	if l := len(p.lead); l > 0 && len(data) > l && data[l] == ',' && bytes.Equal(data[:l], p.lead) {
		out = append(out, p.leadOut...)
		n, end, reused = p.leadN, l, true
		// In OpenAI's layout the lead is followed by the choices of a text or argument
		// chunk: they are read without the member loop (fastTail), which reads only what
		// follows them, if anything (OpenAI's "usage":null and "obfuscation").
		switch p.fastTail(data, l, &v, ch) {
		case tailRead:
			out = append(out, choicesMember...)
			out = append(out, v.Raw...)
			n, end, seenChoices, plain = n+1, sc.Pos(), true, false
			if end == len(data)-1 && data[end] == '}' { // the chunk's end
				return append(out, "}\n\n"...), nil
			}
		case tailBad:
			return dst, malformedChunk(p.Backend, "sent a stream event that is not JSON", data)
		default:
			sc.Seek(l)
		}
	}
	for ; sc.NextField(&n); end = sc.Pos() {
		k := sc.Key()
		if k == "choices" && !seenChoices && sc.Peek() == '[' {
			if plain && n > 1 && !reused {
				p.lead = append(p.lead[:0], data[:end]...)
				p.leadOut = append(p.leadOut[:0], out[mark:]...)
				p.leadN = n - 1
			}
			// The first choices are read as they are checked: their number, and whether
			// one has a finish_reason.
			seenChoices = true
			if !p.readChoices(&v, ch) {
				break
			}
		} else if k == "usage" && usage.Kind == jsonx.Missing {
			// The first usage is read as it is checked.
			var ok bool
			if ch.Usage, ok = usageAt(sc, &v); !ok {
				break
			}
		} else if !sc.ValueRaw(&v) {
			break
		}
		switch k {
		case "error":
			plain = false
			if errv.Kind == jsonx.Missing {
				errv = v
			}
			continue // an error chunk is refused below
		case "choices":
			plain = false
			seenChoices = true
		case "usage":
			plain = false
			if usage.Kind == jsonx.Missing {
				usage = v
			}
			if !p.IncludeUsage {
				continue
			}
		default:
			if shadows(k, "id", "object", "created", "model", "choices", "usage") {
				// The head is the gateway's; and a member a client's JSON decoder could take
				// for one of these (encoding/json matches names ignoring case) is dropped.
				continue
			}
		}
		out = appendMember(out, sc.Input()[end:], k, v.Raw)
	}
	if sc.Failed() || !sc.AtEnd() {
		return dst, malformedChunk(p.Backend, "sent a stream event that is not JSON", data)
	}
	if errv.Exists() {
		return dst, New().DecodeError(http.StatusBadGateway, data)
	}
	ch.HasUsage = usage.Kind == jsonx.Object
	return append(out, "}\n\n"...), nil
}

// choicesMember is the choices member's name as OpenAI writes it after the member before.
const choicesMember = `,"choices":`

// fastTail reads data from l, the end of the kept lead, when what follows is
// choicesMember and a choices array fastChoices takes: it sets v to the array, adds what
// it read to ch and leaves the cursor after the array (tailRead); when the array's string
// is not valid JSON it reports tailBad, ch untouched (the chunk is malformed, as the
// member loop finds it). Anything else is tailOther, ch untouched and the cursor
// anywhere: the caller reads the chunk from l with the member loop, which gives the same
// event and Chunk for what fastTail takes (FuzzChunkLeadMatchesWholeRead).
func (p *ChunkRewriter) fastTail(data []byte, l int, v *jsonx.Value, ch *Chunk) tail {
	if !bytes.HasPrefix(data[l:], []byte(choicesMember)) {
		return tailOther
	}
	p.sc.Seek(l + len(choicesMember))
	switch matched, ok := fastChoices(&p.sc, v, ch); {
	case !matched:
		return tailOther
	case !ok:
		return tailBad
	}
	return tailRead
}

// tail is what fastTail made of a chunk after its lead.
type tail uint8

const (
	tailOther tail = iota
	tailRead
	tailBad
)

// readChoices reads the choices array at the cursor into v (its text, as ValueRaw would),
// counting its elements into ch.Choices and setting ch.Finished when an element is an
// object whose finish_reason (the first of that name) is a non-empty string. It reports
// false on a syntax error.
func (p *ChunkRewriter) readChoices(v *jsonx.Value, ch *Chunk) bool {
	if matched, ok := fastChoices(&p.sc, v, ch); matched {
		return ok
	}
	return readChoicesGeneral(&p.sc, v, ch)
}

// readChoicesGeneral is readChoices for any layout.
func readChoicesGeneral(sc *jsonx.Scanner, v *jsonx.Value, ch *Chunk) bool {
	var f [2]jsonx.Value
	arr, ok := sc.ArrayMembers([]string{"finish_reason", "delta"}, f[:], func(jsonx.Value) bool {
		ch.Choices++
		if f[0].Kind == jsonx.String && f[0].Str != "" {
			if !ch.Finished {
				ch.Finish = f[0].Str
			}
			ch.Finished = true
		}
		readDelta(sc, f[1], ch, ch.Choices == 1)
		return true
	})
	*v = arr
	return ok
}

// deltaBytes returns the length of the output a choice's delta carries (Chunk.OutputBytes):
// the literals of its content, refusal, reasoning_content and reasoning strings and of its
// tool calls' function names and arguments, without their quotes.
func deltaBytes(sc *jsonx.Scanner, delta jsonx.Value) int {
	var ch Chunk
	readDelta(sc, delta, &ch, false)
	return ch.OutputBytes
}

// deltaNames are the members of a chunk's delta readDelta reads. A package-level array, not
// a slice literal in the call: the literal's array sat in readDelta's frame, which is on the
// stack of every chat passthrough stream (PERFORMANCE.md, "The stream event and peak RSS,
// fifteenth session").
var deltaNames = [...]string{"content", "refusal", "reasoning_content", "reasoning", "tool_calls", "function_call"}

// readDelta adds what a choice's delta carries to ch: its output's length (deltaBytes),
// and whether it has a tool call, a refusal or a function_call (Opaque) or reasoning;
// first: it is the first choice's, whose content literal is ch.Text.
func readDelta(sc *jsonx.Scanner, delta jsonx.Value, ch *Chunk, first bool) {
	if delta.Kind != jsonx.Object {
		return
	}
	var m [len(deltaNames)]jsonx.Value
	sc.Members(delta, deltaNames[:], m[:])
	for _, s := range m[:4] {
		ch.OutputBytes += literalBytes(s)
	}
	if first && m[0].Kind == jsonx.String {
		ch.Text = m[0].Raw[1 : len(m[0].Raw)-1]
	}
	ch.Reasoning = ch.Reasoning || literalBytes(m[2]) > 0 || literalBytes(m[3]) > 0
	ch.Opaque = ch.Opaque || literalBytes(m[1]) > 0 || m[5].Kind == jsonx.Object
	var fn [1]jsonx.Value
	sc.EachMembers(m[4], []string{"function"}, fn[:], func(jsonx.Value) bool {
		ch.Opaque = true
		var f [2]jsonx.Value
		sc.Members(fn[0], []string{"name", "arguments"}, f[:])
		ch.OutputBytes += literalBytes(f[0]) + literalBytes(f[1])
		return true
	})
}

// CompletionOutputBytes returns the length of the output a chat completion body carries
// (its choices' messages, read as deltaBytes reads a delta): what the gateway estimates
// the tokens of when an upstream's completion reports no usage. A body that is not a
// completion carries none.
func CompletionOutputBytes(body []byte) int {
	sc := jsonx.NewScanner(jsonx.View(body))
	var m [1]jsonx.Value
	root, ok := sc.RootMembers([]string{"choices"}, m[:])
	if !ok || root.Kind != jsonx.Object {
		return 0
	}
	n := 0
	var msg [1]jsonx.Value
	sc.EachMembers(m[0], []string{"message"}, msg[:], func(jsonx.Value) bool {
		n += deltaBytes(&sc, msg[0])
		return true
	})
	return n
}

// literalBytes is the length of a string value's literal without its quotes; 0 for any
// other value.
func literalBytes(v jsonx.Value) int {
	if v.Kind != jsonx.String || len(v.Raw) < 2 {
		return 0
	}
	return len(v.Raw) - 2
}

// The choices of a text or argument chunk in the layout OpenAI sends: one choice, whose
// members are its index, a delta with only content (or only one tool call's index and
// argument fragment), and null logprobs and finish_reason, in this order, without
// whitespace.
const (
	choicesPrefix    = `[{"index":`
	choicesContent   = `,"delta":{"content":`
	choicesToolCall  = `,"delta":{"tool_calls":[{"index":`
	choicesArguments = `,"function":{"arguments":`
	choicesTail      = `,"logprobs":null,"finish_reason":null}]`
)

// fastChoices reads the choices array at the cursor, which is at its '[', when it is in
// exactly OpenAI's layout of a text or argument chunk (choicesPrefix): it sets v to the
// array, as readChoices would, adds what it read to ch (one choice; its output's length,
// the string's literal without its quotes; its Text, or Opaque for an argument chunk), and
// reports matched, with ok false (ch untouched) when the string is not valid JSON. For
// anything else it reports matched false with the cursor where it was, leaving the array
// to readChoices' general reader: what it accepts is valid JSON that the general reader
// reads the same (FuzzFastChoicesMatchesGeneral). Nearly every chunk of an answer is one
// of these; the scanner still checks the string.
func fastChoices(sc *jsonx.Scanner, v *jsonx.Value, ch *Chunk) (matched, ok bool) {
	s, at := sc.Input(), sc.Pos()
	if !strings.HasPrefix(s[at:], choicesPrefix) {
		return false, false
	}
	j, ok := jsonx.IndexEnd(s, at+len(choicesPrefix))
	if !ok {
		return false, false
	}
	closing := "}" // the delta's
	switch {
	case strings.HasPrefix(s[j:], choicesContent):
		j += len(choicesContent)
	case strings.HasPrefix(s[j:], choicesToolCall):
		if j, ok = jsonx.IndexEnd(s, j+len(choicesToolCall)); !ok || !strings.HasPrefix(s[j:], choicesArguments) {
			return false, false
		}
		j += len(choicesArguments)
		closing = "}}]}" // the function's, the call's, the array's, the delta's
	default:
		return false, false
	}
	if j >= len(s) || s[j] != '"' {
		return false, false
	}
	sc.Seek(j)
	if !sc.SkipString() {
		return true, false // the array is not JSON, whichever reader reads it
	}
	k := sc.Pos()
	if !strings.HasPrefix(s[k:], closing) || !strings.HasPrefix(s[k+len(closing):], choicesTail) {
		sc.Seek(at)
		return false, false
	}
	end := k + len(closing) + len(choicesTail)
	sc.Seek(end)
	v.Set(jsonx.Array, s[at:end], at, "")
	ch.Choices++ // one choice, its finish_reason null
	ch.OutputBytes += k - j - 2
	if len(closing) == 1 {
		ch.Text = s[j+1 : k-1]
	} else {
		ch.Opaque = true
	}
	return true, true
}

// setHead fixes the stream's id, created and model from its first chunk.
func (p *ChunkRewriter) setHead(sc *jsonx.Scanner, root jsonx.Value) {
	idStr := p.FallbackID
	if id := sc.Get(root, "id"); id.Kind == jsonx.String && id.Str != "" {
		idStr = id.Str
	}
	created := sc.Get(root, "created")
	n := created.Int()
	if created.Kind != jsonx.Number || n <= 0 {
		n = p.Now()
	}
	p.head = append(p.head, `"id":`...)
	p.head = jsonx.AppendString(p.head, idStr)
	p.head = append(p.head, `,"object":"chat.completion.chunk","created":`...)
	p.head = strconv.AppendInt(p.head, n, 10)
	p.head = append(p.head, `,"model":`...)
	p.head = append(p.head, p.Model...)
}

// KeepHead makes p's chunks leave with the id, created and model of prev's (a stream that
// goes on from another upstream answer: a continuation), once prev read a chunk.
func (p *ChunkRewriter) KeepHead(prev *ChunkRewriter) {
	if prev.head != nil {
		p.head = prev.head // fixed once made: shared, never appended to
	}
}

// AppendText appends to dst an SSE event for the client: a chunk with the stream's head
// whose one choice's delta is the content text (a value, escaped here), with finish_reason
// finish ("" is null). The head is the one the stream's first chunk fixed.
func (p *ChunkRewriter) AppendText(dst []byte, text, finish string) []byte {
	dst = append(dst, "data: {"...)
	dst = append(dst, p.head...)
	dst = append(dst, `,"choices":[{"index":0,"delta":{"content":`...)
	dst = jsonx.AppendString(dst, text)
	dst = append(dst, `},"logprobs":null,"finish_reason":`...)
	if finish == "" {
		dst = append(dst, "null"...)
	} else {
		dst = jsonx.AppendString(dst, finish)
	}
	return append(dst, "}]}\n\n"...)
}

// AppendUsage appends to dst an SSE event for the client: a chunk with the stream's head,
// no choices and the usage object usage (JSON, as written), the shape of OpenAI's last
// chunk when the client asked for the usage.
func (p *ChunkRewriter) AppendUsage(dst, usage []byte) []byte {
	dst = append(dst, "data: {"...)
	dst = append(dst, p.head...)
	dst = append(dst, `,"choices":[],"usage":`...)
	dst = append(dst, usage...)
	return append(dst, "}\n\n"...)
}

// RewriteCompletion checks that body, a 200 answer of an OpenAI-compatible upstream
// of the named backend, is a JSON chat completion, and appends it to dst with the
// client-facing model in place of the upstream's; it returns the extended dst and the
// usage the body reports. The result never aliases body. A body that is not a JSON object
// with a choices array is an upstream error naming the backend; an error object is the
// upstream's error (status 502).
func RewriteCompletion(dst []byte, backend string, body []byte, model string) ([]byte, translate.Usage, error) {
	// One pass over the body checks it, finds error, choices and usage (the first of
	// each name, as Get would) and writes the rewritten completion: the members written
	// compactly (a delimiter, the name, its colon and the value, as appendMember copies
	// them) in runs of the body's bytes, each run copied once, the others one by one.
	sc := jsonx.NewScanner(jsonx.View(body))
	if sc.Peek() != '{' {
		if !jsonx.Valid(jsonx.View(body)) {
			return nil, translate.Usage{}, passthroughNotJSON(backend, "answered with a body that is not JSON", body)
		}
		return nil, translate.Usage{}, passthroughNotJSON(backend, "answered with a body that is not a JSON object", body)
	}
	var errv, choices, usage, v jsonx.Value
	var u translate.Usage
	out := slices.Grow(dst, len(body)+len(model)+24)
	out = append(out, `{"model":`...)
	out = jsonx.AppendString(out, model)
	in := sc.Input()
	run := -1      // where the members not yet copied start in the body; -1: none
	n, end := 0, 0 // end: where the last member's value ended
	for ; sc.NextField(&n); end = sc.Pos() {
		k := sc.Key()
		var ok bool
		if k == "usage" && usage.Kind == jsonx.Missing {
			u, ok = usageAt(&sc, &v) // read as it is checked
			usage = v
		} else {
			ok = sc.ValueRaw(&v) // a string's escapes stay as written: only its Raw is copied
		}
		if !ok {
			break
		}
		switch {
		case k == "error" && errv.Kind == jsonx.Missing:
			errv = v
		case k == "choices" && choices.Kind == jsonx.Missing:
			choices = v
		}
		drop := len(k) >= len("model") && k[0]|('a'-'A') == 'm' && shadows(k, "model")
		if !drop && compactMember(in, end, k, v.At) {
			if run < 0 {
				run = end
			}
			continue
		}
		out = appendRun(out, in, run, end)
		run = -1
		if !drop {
			out = appendMember(out, in[end:], k, v.Raw)
		}
	}
	if sc.Failed() || !sc.AtEnd() {
		return nil, translate.Usage{}, passthroughNotJSON(backend, "answered with a body that is not JSON", body)
	}
	if errv.Exists() {
		return nil, translate.Usage{}, New().DecodeError(http.StatusBadGateway, body)
	}
	if choices.Kind != jsonx.Array {
		return nil, translate.Usage{}, passthroughNotJSON(backend, "answered with a JSON object that is not a chat completion (no choices)", nil)
	}
	out = appendRun(out, in, run, end)
	return append(out, '}'), u, nil
}

// compactMember reports whether the member that follows in[end] (the '{' or ',' before
// it), named k, with its value at at, is written compactly: the delimiter, k quoted, a
// colon and the value, without whitespace, which is what appendMember copies as it is.
func compactMember(in string, end int, k string, at int) bool {
	q := end + 2 + len(k) // the name's closing quote
	return at == q+2 && in[end+1] == '"' && in[q] == '"' && in[q+1] == ':' && in[end+2:q] == k
}

// appendRun appends in[run:end], members written compactly, each after its delimiter (a
// ',' or, for the object's first, its '{'), with the first delimiter written as ','; run
// < 0 appends nothing.
func appendRun(out []byte, in string, run, end int) []byte {
	if run < 0 {
		return out
	}
	out = append(out, in[run:end]...)
	out[len(out)-(end-run)] = ','
	return out
}

// appendMember appends the member named k (the name a Scanner's NextField read) with the
// value raw, after a comma. from is the input from the end of the member before (or the
// object's start) on. When it starts with a delimiter, then k quoted and a colon, as an
// upstream writes most names, those bytes are copied; else the name is written from k.
// The copy is exact: the bytes between the quotes equal k, so they hold no backslash
// (an escape reads as other bytes) and no quote (it would have ended the name).
func appendMember(out []byte, from, k, raw string) []byte {
	if lit := len(k) + 2; len(from) > lit+1 && from[1] == '"' && from[lit] == '"' && from[lit+1] == ':' &&
		from[2:lit] == k {
		out = append(out, from[:lit+2]...)
		out[len(out)-lit-2] = ','
		return append(out, raw...)
	}
	out = append(out, ',')
	out = jsonx.AppendString(out, k)
	out = append(out, ':')
	return append(out, raw...)
}

// firstMayFold reports whether a key whose first byte is b can fold to a name whose first
// character is c, a lower-case ASCII byte: b is c, or c's upper case when c is a letter, or
// b starts a character beyond ASCII and c is s or k (U+017F, U+212A: the only characters
// beyond ASCII that fold to ASCII ones).
func firstMayFold(b, c byte) bool {
	switch {
	case b == c:
		return true
	case b >= utf8.RuneSelf:
		return c == 's' || c == 'k'
	}
	return 'a' <= c && c <= 'z' && b == c-('a'-'A')
}

// passthroughNotJSON is the 502 for an upstream answer the passthrough cannot read; what
// names the fault after "the upstream of backend X". The message quotes at most 64 bytes
// of data.
func passthroughNotJSON(backend, what string, data []byte) *translate.UpstreamError {
	msg := "the upstream of backend " + backend + " " + what
	if len(data) > 0 {
		b := data
		if len(b) > 64 {
			b = b[:64]
		}
		msg += ": " + strconv.Quote(string(b))
	}
	return &translate.UpstreamError{Status: http.StatusBadGateway, Type: "api_error", Message: msg}
}

// malformedChunk is passthroughNotJSON for one stream event, marked as an unreadable event
// (translate.ErrMalformedEvent) that a stream may skip.
func malformedChunk(backend, what string, data []byte) error {
	return translate.MalformedEvent(passthroughNotJSON(backend, what, data))
}

// shadows reports whether the member name k is one of names, lower-case ASCII, as a
// case-insensitive decoder (encoding/json, with its Unicode folding) reads it. Each
// character of k folds to one of a name, and a name's characters are one byte each: so k
// is at least as long as a name it folds to, and longer only if it has a byte beyond
// ASCII (U+017F folds to s, U+212A to k). Its first byte settles most keys: an ASCII byte
// folds only to itself and its other case, and a byte beyond ASCII starts a character that
// can fold only to s or k (firstMayFold), so most member names cost one comparison a name.
func shadows(k string, names ...string) bool {
	ascii := -1 // unknown until a shorter name asks
	for _, n := range names {
		switch {
		case len(k) < len(n), len(k) > 0 && !firstMayFold(k[0], n[0]):
		case len(k) == len(n):
			if strings.EqualFold(k, n) {
				return true
			}
		default:
			if ascii < 0 {
				ascii = 1
				for i := 0; i < len(k); i++ {
					if k[i] >= utf8.RuneSelf {
						ascii = 0
						break
					}
				}
			}
			if ascii == 0 && strings.EqualFold(k, n) {
				return true
			}
		}
	}
	return false
}
