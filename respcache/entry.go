package respcache

import (
	"encoding/binary"
	"errors"
	"math"

	"github.com/agate-gateway/agate/internal/jsonx"
	"github.com/agate-gateway/agate/translate"
)

// An entry is the events of one answer, as the client's encoder got them, in a compact
// binary form that copies every string (an event's strings alias its decoder's buffer
// only for the duration of the callback):
//
//	entry  = version:byte event*
//	event  = kind:byte fields:uvarint field*        (fields: a bit per present field)
//	string = len:uvarint bytes
//	int    = varint
//
// The fields, in bit order: Choice, ID, Model, Text, Index, CallID, Name, Usage (five
// ints), FinishReason, Logprobs (count, then each token: Token, Logprob as float64 bits,
// Bytes, count of Top, each: Token, Logprob, Bytes), Block (seven strings), Item (three
// strings). An error event is never recorded. Decode rejects anything else.

const entryVersion = 1

const (
	fChoice = 1 << iota
	fID
	fModel
	fText
	fIndex
	fCallID
	fName
	fUsage
	fFinish
	fLogprobs
	fBlock
	fItem
	fAll = fItem<<1 - 1
)

// ErrCorrupt is returned by Decode for bytes that are not an entry.
var ErrCorrupt = errors.New("respcache: corrupt entry")

// Recorder appends the events of an answer to its entry as they are emitted. The zero
// Recorder is ready; it refuses (Ok false) once it saw an error event or its entry grew
// beyond Max.
type Recorder struct {
	// Max bounds the entry in bytes; zero means no bound.
	Max int
	buf []byte
	bad bool
	// finished is set once a Finish event was recorded.
	finished bool
}

// Add records ev (its strings copied).
func (r *Recorder) Add(ev *translate.Event) {
	if r.bad {
		return
	}
	if ev.Kind == translate.EventError || ev.Kind == 0 {
		r.bad = true
		return
	}
	if ev.Kind == translate.EventFinish {
		r.finished = true
	}
	if len(r.buf) == 0 {
		r.buf = append(r.buf, entryVersion)
	}
	r.buf = appendEvent(r.buf, ev)
	if r.Max > 0 && len(r.buf) > r.Max {
		r.bad, r.buf = true, nil
	}
}

// Entry returns the recorded entry and whether it is a whole answer worth caching: at
// least one Finish event, no error event, within Max.
func (r *Recorder) Entry() ([]byte, bool) {
	if r.bad || !r.finished || len(r.buf) == 0 {
		return nil, false
	}
	return r.buf, true
}

func appendEvent(b []byte, ev *translate.Event) []byte {
	var f uint64
	set := func(bit uint64, on bool) {
		if on {
			f |= bit
		}
	}
	set(fChoice, ev.Choice != 0)
	set(fID, ev.ID != "")
	set(fModel, ev.Model != "")
	set(fText, ev.Text != "")
	set(fIndex, ev.Index != 0)
	set(fCallID, ev.CallID != "")
	set(fName, ev.Name != "")
	set(fUsage, ev.Usage != translate.Usage{})
	set(fFinish, ev.FinishReason != "")
	set(fLogprobs, len(ev.Logprobs) > 0)
	set(fBlock, ev.Block != nil)
	set(fItem, ev.Item != nil)
	b = append(b, byte(ev.Kind))
	b = binary.AppendUvarint(b, f)
	if f&fChoice != 0 {
		b = binary.AppendVarint(b, int64(ev.Choice))
	}
	b = appendIf(b, f&fID != 0, ev.ID)
	b = appendIf(b, f&fModel != 0, ev.Model)
	b = appendIf(b, f&fText != 0, ev.Text)
	if f&fIndex != 0 {
		b = binary.AppendVarint(b, int64(ev.Index))
	}
	b = appendIf(b, f&fCallID != 0, ev.CallID)
	b = appendIf(b, f&fName != 0, ev.Name)
	if f&fUsage != 0 {
		u := ev.Usage
		for _, n := range [...]int{u.PromptTokens, u.CompletionTokens, u.CachedTokens, u.CacheCreationTokens, u.ReasoningTokens} {
			b = binary.AppendVarint(b, int64(n))
		}
	}
	b = appendIf(b, f&fFinish != 0, ev.FinishReason)
	if f&fLogprobs != 0 {
		b = binary.AppendUvarint(b, uint64(len(ev.Logprobs)))
		for _, t := range ev.Logprobs {
			b = appendLogprob(b, t.Token, t.Logprob, t.Bytes)
			b = binary.AppendUvarint(b, uint64(len(t.Top)))
			for _, top := range t.Top {
				b = appendLogprob(b, top.Token, top.Logprob, top.Bytes)
			}
		}
	}
	if f&fBlock != 0 {
		k := ev.Block
		for _, s := range [...]string{k.Type, k.Thinking, k.Signature, k.Data, k.ID, k.Dialect, k.CallID} {
			b = appendString(b, s)
		}
	}
	if f&fItem != 0 {
		for _, s := range [...]string{ev.Item.Dialect, ev.Item.Type, ev.Item.Raw} {
			b = appendString(b, s)
		}
	}
	return b
}

func appendIf(b []byte, on bool, s string) []byte {
	if !on {
		return b
	}
	return appendString(b, s)
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func appendLogprob(b []byte, token string, lp float64, bytes []byte) []byte {
	b = appendString(b, token)
	b = binary.LittleEndian.AppendUint64(b, math.Float64bits(lp))
	if bytes == nil {
		return append(b, 0)
	}
	b = append(b, 1)
	return appendString(b, string(bytes))
}

// Replay decodes entry and passes its events to emit in order, stopping at emit's first
// error, which it returns. An event's strings alias entry (jsonx.View), which must not
// change while Replay runs; like every event's, they are valid for the duration of
// emit's call. Bytes that are not an entry are ErrCorrupt, before any event is emitted.
func Replay(entry []byte, emit translate.Emit) error {
	if err := Check(entry); err != nil {
		return err
	}
	d := decoder{b: entry[1:], view: true}
	var ev translate.Event
	for len(d.b) > 0 {
		d.event(&ev)
		if err := emit(&ev); err != nil {
			return err
		}
	}
	return nil
}

// Check reports whether entry is a well-formed entry (ErrCorrupt if not).
func Check(entry []byte) error {
	if len(entry) < 1 || entry[0] != entryVersion {
		return ErrCorrupt
	}
	d := decoder{b: entry[1:], view: true} // the strings are not kept
	var ev translate.Event
	for len(d.b) > 0 && !d.bad {
		d.event(&ev)
	}
	if d.bad {
		return ErrCorrupt
	}
	return nil
}

// decoder reads an entry's events; any malformation sets bad and leaves the rest unread.
type decoder struct {
	b   []byte
	bad bool
	// view makes strings alias b instead of copies of it.
	view bool
	// blk, item and lps are reused between events: an event is valid only until the next.
	blk  translate.ThinkingBlock
	item translate.Item
	lps  []translate.TokenLogprob
}

func (d *decoder) event(ev *translate.Event) {
	*ev = translate.Event{}
	if len(d.b) < 1 {
		d.bad = true
		return
	}
	k := translate.EventKind(d.b[0])
	d.b = d.b[1:]
	if k < translate.EventStart || k > translate.EventBuiltinItem || k == translate.EventError {
		d.fail()
		return
	}
	ev.Kind = k
	f := d.uvarint()
	if f&^fAll != 0 {
		d.fail()
		return
	}
	if f&fChoice != 0 {
		ev.Choice = d.int()
	}
	ev.ID = d.stringIf(f&fID != 0)
	ev.Model = d.stringIf(f&fModel != 0)
	ev.Text = d.stringIf(f&fText != 0)
	if f&fIndex != 0 {
		ev.Index = d.int()
	}
	ev.CallID = d.stringIf(f&fCallID != 0)
	ev.Name = d.stringIf(f&fName != 0)
	if f&fUsage != 0 {
		u := &ev.Usage
		u.PromptTokens, u.CompletionTokens, u.CachedTokens = d.int(), d.int(), d.int()
		u.CacheCreationTokens, u.ReasoningTokens = d.int(), d.int()
	}
	ev.FinishReason = d.stringIf(f&fFinish != 0)
	if f&fLogprobs != 0 {
		n := d.count()
		d.lps = d.lps[:0]
		for i := 0; i < n && !d.bad; i++ {
			var t translate.TokenLogprob
			t.Token, t.Logprob, t.Bytes = d.logprob()
			m := d.count()
			if m > 0 {
				t.Top = make([]translate.TopLogprob, 0, m)
			}
			for j := 0; j < m && !d.bad; j++ {
				var top translate.TopLogprob
				top.Token, top.Logprob, top.Bytes = d.logprob()
				t.Top = append(t.Top, top)
			}
			d.lps = append(d.lps, t)
		}
		ev.Logprobs = d.lps
	}
	if f&fBlock != 0 {
		k := &d.blk
		k.Type, k.Thinking, k.Signature, k.Data = d.string(), d.string(), d.string(), d.string()
		k.ID, k.Dialect, k.CallID = d.string(), d.string(), d.string()
		ev.Block = k
	}
	if f&fItem != 0 {
		d.item.Dialect, d.item.Type, d.item.Raw = d.string(), d.string(), d.string()
		ev.Item = &d.item
	}
	if d.bad {
		*ev = translate.Event{}
	}
}

func (d *decoder) fail() { d.bad, d.b = true, nil }

func (d *decoder) uvarint() uint64 {
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail()
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) int() int {
	v, n := binary.Varint(d.b)
	if n <= 0 || v > math.MaxInt32 || v < math.MinInt32 {
		d.fail()
		return 0
	}
	d.b = d.b[n:]
	return int(v)
}

// count reads a length that must fit in what is left (each element takes a byte at least).
func (d *decoder) count() int {
	v := d.uvarint()
	if v > uint64(len(d.b)) {
		d.fail()
		return 0
	}
	return int(v)
}

func (d *decoder) stringIf(on bool) string {
	if !on {
		return ""
	}
	return d.string()
}

func (d *decoder) string() string {
	n := d.count()
	if d.bad {
		return ""
	}
	s := d.b[:n]
	d.b = d.b[n:]
	if d.view {
		return jsonx.View(s)
	}
	return string(s)
}

func (d *decoder) logprob() (string, float64, []byte) {
	tok := d.string()
	if len(d.b) < 9 {
		d.fail()
		return "", 0, nil
	}
	lp := math.Float64frombits(binary.LittleEndian.Uint64(d.b))
	has := d.b[8]
	d.b = d.b[9:]
	switch has {
	case 0:
		return tok, lp, nil
	case 1:
		s := d.string()
		return tok, lp, []byte(s) // a copy: the event's bytes are its own
	}
	d.fail()
	return "", 0, nil
}
