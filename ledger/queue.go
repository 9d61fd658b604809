package ledger

import (
	"math"
	"time"
)

// blockLen is how many records a queue block holds (about 70 KB of records, and their
// texts).
const blockLen = 256

// The queue keeps no pointers the garbage collector must scan (docs/ledger.md, "GC and
// memory, ninth session"): a queued record is a qrec, a fixed-size struct of numbers,
// whose texts are spans of its block's byte arena and whose attempts and tools are
// spans of the block's arrays of qattempt and qtool, themselves numbers and spans. A
// block's arrays are byte and number arrays, which the collector does not look into:
// it scans a small struct a block, not its 70 KB. The writer turns a block's records back into
// Records (decoder) when it writes them.

// span is a text's place in its block's arena: text[off:off+n]; or, for attempts and
// tools, the first of n elements of the block's array.
type span struct{ off, n uint32 }

// The texts of a record, an attempt and a tool, in the order of qrec.text, qattempt.text
// and qtool.text. The names (configured keys, teams, models, backends, deployments,
// error types) come first: the writer interns them (decoder.name); the others, from
// tRequestID on, are the request's own.
const (
	tKey = iota
	tTeam
	tAPI
	tModel
	tServed
	tBackend
	tErrorType
	tDeployment
	tContinuedFrom
	tRequestID // the first text the decoder does not intern
	tTraceID
	tPrompt
	tCompletion
	tAttemptsJSON
	tToolsJSON
	nRecordTexts
)

// The slots of an attempt's texts and a tool's, after a record's (queue.last).
const (
	taBackend = nRecordTexts + iota
	taDeployment
	taModel
	taErrorType
	ttName
	ttSource
	nTextSlots
)

// Bits of qrec.flags.
const (
	fStream = 1 << iota
	fEstimated
	fCacheHit
	fUTC // Time was in UTC
)

// qrec is a queued Record without pointers (see Record for the fields).
type qrec struct {
	id, sec                                             int64
	nsec                                                int32
	flags                                               uint8
	status, toolCalls, fallbacks, attOmitted, toolsOmit int64
	tokens                                              [5]int64 // prompt, cached read, cache write, completion, reasoning
	cost                                                float64
	total, firstToken, upstream                         time.Duration
	text                                                [nRecordTexts]span
	attempts, tools                                     span
}

// qattempt is a queued Attempt.
type qattempt struct {
	text                           [4]span // backend, deployment, model, error type
	status                         int64
	duration                       time.Duration
	continued                      bool
	promptTokens, completionTokens int64
}

// qtool is a queued ToolUse.
type qtool struct {
	text          [2]span // name, source
	calls, errors int64
	duration      time.Duration
}

// maxArena bounds a block's text arena so that a span's offset fits its uint32.
const maxArena = math.MaxUint32

// block is a run of queued records: recs[:n] are filled. Its record array is an
// allocation of its own, which holds no pointers: the collector neither scans it nor
// counts it as memory to scan (as it would count a whole block that held the arrays'
// headers beside it).
type block struct {
	text  []byte
	att   []qattempt
	tools []qtool
	recs  *[blockLen]qrec
	n     int
}

// queue holds the records waiting for the writer in fixed blocks, so that adding one
// copies one record and never a growing slice, and its memory follows what waits: the
// writer takes the blocks, and gives them back once written, cleared, for reuse up to
// about two batches' worth; the rest are left to the garbage collector. It is not safe
// for concurrent use (the Ledger's mutex guards it).
type queue struct {
	blocks []*block
	// n counts the records in blocks.
	n int
	// free are written blocks, cleared, for reuse; spare is the slice blocks had before
	// the last take, for the next.
	free, spare []*block
	// last and lastAt are, for each text slot, the last text pushed into the last block
	// and its span there: a text equal to it (a record's key, model, backend, as a
	// rule those of the record before) takes its span again instead of a copy.
	last   [nTextSlots]string
	lastAt [nTextSlots]span
}

// push copies *r, its texts, attempts and tools, to the end of the queue. A record
// whose texts would pass maxArena in one block is cut: its texts past it are left
// empty (Record's texts are bounded far below by whoever fills them).
func (q *queue) push(r *Record) {
	var b *block
	if k := len(q.blocks); k > 0 && q.blocks[k-1].n < blockLen && len(q.blocks[k-1].text) < maxArena/2 {
		b = q.blocks[k-1]
	} else {
		if k := len(q.free); k > 0 {
			b, q.free = q.free[k-1], q.free[:k-1]
		} else {
			b = &block{recs: new([blockLen]qrec)}
		}
		q.blocks = append(q.blocks, b)
		q.last = [nTextSlots]string{}
	}
	rec := &b.recs[b.n]
	*rec = qrec{id: r.ID, sec: r.Time.Unix(), nsec: int32(r.Time.Nanosecond()),
		status: int64(r.Status), toolCalls: int64(r.ToolCalls), fallbacks: int64(r.Fallbacks),
		attOmitted: int64(r.AttemptsOmitted), toolsOmit: int64(r.ToolsOmitted),
		tokens: [5]int64{r.PromptTokens, r.CachedReadTokens, r.CacheWriteTokens, r.CompletionTokens, r.ReasoningTokens},
		cost:   r.CostUSD, total: r.Total, firstToken: r.FirstToken, upstream: r.Upstream}
	if r.Stream {
		rec.flags |= fStream
	}
	if r.Estimated {
		rec.flags |= fEstimated
	}
	if r.CacheHit {
		rec.flags |= fCacheHit
	}
	if r.Time.Location() == time.UTC {
		rec.flags |= fUTC
	}
	t := &rec.text
	t[tKey], t[tTeam], t[tAPI] = q.name(b, tKey, r.Key), q.name(b, tTeam, r.Team), q.name(b, tAPI, r.API)
	t[tModel], t[tServed], t[tBackend] = q.name(b, tModel, r.Model), q.name(b, tServed, r.Served), q.name(b, tBackend, r.Backend)
	t[tErrorType], t[tDeployment] = q.name(b, tErrorType, r.ErrorType), q.name(b, tDeployment, r.Deployment)
	t[tContinuedFrom] = q.name(b, tContinuedFrom, r.ContinuedFrom)
	t[tRequestID], t[tTraceID] = b.own(r.RequestID), b.own(r.TraceID)
	t[tPrompt], t[tCompletion] = b.own(r.Prompt), b.own(r.Completion)
	t[tAttemptsJSON], t[tToolsJSON] = b.own(r.AttemptsJSON), b.own(r.ToolsJSON)
	if k := len(r.Attempts); k > 0 {
		if b.att == nil {
			b.att = make([]qattempt, 0, blockLen) // one attempt a record, most often
		}
		rec.attempts = span{uint32(len(b.att)), uint32(k)}
		for i := range r.Attempts {
			a := &r.Attempts[i]
			b.att = append(b.att, qattempt{text: [4]span{q.name(b, taBackend, a.Backend), q.name(b, taDeployment, a.Deployment),
				q.name(b, taModel, a.Model), q.name(b, taErrorType, a.ErrorType)},
				status: int64(a.Status), duration: a.Duration, continued: a.Continued,
				promptTokens: a.PromptTokens, completionTokens: a.CompletionTokens})
		}
	}
	if k := len(r.Tools); k > 0 {
		rec.tools = span{uint32(len(b.tools)), uint32(k)}
		for i := range r.Tools {
			t := &r.Tools[i]
			b.tools = append(b.tools, qtool{text: [2]span{q.name(b, ttName, t.Name), q.name(b, ttSource, t.Source)},
				calls: int64(t.Calls), errors: int64(t.Errors), duration: t.Duration})
		}
	}
	b.n++
	q.n++
}

// name returns the span in b's arena of s, a name (a key, a model...): the last span of
// slot when s is the slot's last text in b (a name as a rule repeats the record
// before's), else a copy of s appended (empty when the arena has no room left for it).
func (q *queue) name(b *block, slot int, s string) span {
	if len(s) == 0 {
		return span{}
	}
	if s == q.last[slot] {
		return q.lastAt[slot]
	}
	at := b.own(s)
	q.last[slot], q.lastAt[slot] = s, at
	return at
}

// own returns the span of a copy of s appended to b's arena (empty when s is, or when
// the arena has no room left for it).
func (b *block) own(s string) span {
	if len(s) == 0 || len(s) > maxArena-len(b.text) {
		return span{}
	}
	at := span{uint32(len(b.text)), uint32(len(s))}
	b.text = append(b.text, s...)
	return at
}

// take empties the queue and returns its blocks, oldest first, to be given back by
// recycle once written.
func (q *queue) take() []*block {
	blocks := q.blocks
	q.blocks, q.spare, q.n = q.spare[:0], nil, 0
	q.last = [nTextSlots]string{} // kept no longer than the blocks they name
	return blocks
}

// recycle gives back the blocks take returned: emptied, and kept for reuse while the
// free ones hold fewer than 2×batch records.
func (q *queue) recycle(blocks []*block, batch int) {
	keep := (2*batch + blockLen - 1) / blockLen
	for i, b := range blocks {
		if len(q.free) < keep {
			b.n, b.text, b.att, b.tools = 0, b.text[:0], b.att[:0], b.tools[:0]
			q.free = append(q.free, b)
		}
		blocks[i] = nil
	}
	if cap(blocks) <= 2*keep {
		q.spare = blocks[:0]
	}
}

// maxInterned bounds the decoder's interned names; past it, names are copied per block.
const maxInterned = 4096

// decoder turns the queue's blocks back into Records for the writer, which owns it:
// names (keys, teams, models, backends, deployments, error types, tools) are interned,
// so that the records of a gateway's few names allocate none of them; a block's other
// texts (request and trace ids, content) are substrings of one string of its arena.
type decoder struct {
	names map[string]string
	// att and tools are the Attempts and ToolUses of the records of a batch, reused
	// (reset by clear).
	att   []Attempt
	tools []ToolUse
	// arena is the current block's arena as a string (made at its first text that is not
	// a name); lastAt and lastStr are each slot's last span in the current block and its
	// text (the decoder's side of queue.last).
	arena    string
	hasArena bool
	lastAt   [nTextSlots]span
	lastStr  [nTextSlots]string
}

// startBlock forgets the block before: its arena and texts (called before each block,
// and after the last, so that the decoder keeps none of them).
func (d *decoder) startBlock() {
	d.arena, d.hasArena = "", false
	d.lastStr = [nTextSlots]string{}
	d.lastAt = [nTextSlots]span{}
}

// str returns the text of slot at sp in b.
func (d *decoder) str(b *block, slot int, sp span) string {
	if sp.n == 0 {
		return ""
	}
	if sp == d.lastAt[slot] && d.lastStr[slot] != "" {
		return d.lastStr[slot]
	}
	raw := b.text[sp.off : sp.off+sp.n]
	var s string
	if slot < tRequestID || slot >= taBackend {
		if d.names == nil {
			d.names = make(map[string]string)
		}
		if v, ok := d.names[string(raw)]; ok {
			s = v
		} else {
			s = string(raw)
			if len(d.names) < maxInterned {
				d.names[s] = s
			}
		}
	} else {
		if !d.hasArena {
			d.arena, d.hasArena = string(b.text), true
		}
		s = d.arena[sp.off : sp.off+sp.n]
	}
	d.lastAt[slot], d.lastStr[slot] = sp, s
	return s
}

// record fills *r with b's i-th record.
func (d *decoder) record(b *block, i int, r *Record) {
	q := &b.recs[i]
	t := time.Unix(q.sec, int64(q.nsec))
	if q.flags&fUTC != 0 {
		t = t.UTC()
	}
	*r = Record{ID: q.id, Time: t,
		Stream: q.flags&fStream != 0, Status: int(q.status),
		PromptTokens: q.tokens[0], CachedReadTokens: q.tokens[1], CacheWriteTokens: q.tokens[2],
		CompletionTokens: q.tokens[3], ReasoningTokens: q.tokens[4], CostUSD: q.cost,
		Estimated: q.flags&fEstimated != 0, Total: q.total, FirstToken: q.firstToken, Upstream: q.upstream,
		ToolCalls: int(q.toolCalls), Fallbacks: int(q.fallbacks), CacheHit: q.flags&fCacheHit != 0,
		AttemptsOmitted: int(q.attOmitted), ToolsOmitted: int(q.toolsOmit)}
	for slot, p := range [nRecordTexts]*string{tKey: &r.Key, tTeam: &r.Team, tAPI: &r.API, tModel: &r.Model,
		tServed: &r.Served, tBackend: &r.Backend, tErrorType: &r.ErrorType, tDeployment: &r.Deployment,
		tContinuedFrom: &r.ContinuedFrom, tRequestID: &r.RequestID, tTraceID: &r.TraceID, tPrompt: &r.Prompt,
		tCompletion: &r.Completion, tAttemptsJSON: &r.AttemptsJSON, tToolsJSON: &r.ToolsJSON} {
		*p = d.str(b, slot, q.text[slot])
	}
	if sp := q.attempts; sp.n > 0 {
		k := len(d.att)
		for _, a := range b.att[sp.off : sp.off+sp.n] {
			d.att = append(d.att, Attempt{Backend: d.str(b, taBackend, a.text[0]), Deployment: d.str(b, taDeployment, a.text[1]),
				Model: d.str(b, taModel, a.text[2]), ErrorType: d.str(b, taErrorType, a.text[3]),
				Status: int(a.status), Duration: a.duration, Continued: a.continued,
				PromptTokens: a.promptTokens, CompletionTokens: a.completionTokens})
		}
		r.Attempts = d.att[k:len(d.att):len(d.att)]
	}
	if sp := q.tools; sp.n > 0 {
		k := len(d.tools)
		for _, t := range b.tools[sp.off : sp.off+sp.n] {
			d.tools = append(d.tools, ToolUse{Name: d.str(b, ttName, t.text[0]), Source: d.str(b, ttSource, t.text[1]),
				Calls: int(t.calls), Errors: int(t.errors), Duration: t.duration})
		}
		r.Tools = d.tools[k:len(d.tools):len(d.tools)]
	}
}

// reset lets go of the attempts and tools of the batch written (the arrays are kept).
func (d *decoder) reset() {
	clear(d.att)
	clear(d.tools)
	d.att, d.tools = d.att[:0], d.tools[:0]
}
