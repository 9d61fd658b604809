// Package logjson is a slog.Handler that writes, byte for byte, what slog.NewJSONHandler
// writes, at a fraction of its cost for the records a server logs on every request: a
// message and attributes of string, integer, boolean and duration values. Such a record
// is formatted into one pooled buffer with no allocation; any other record (a float, an
// error or other Any value, a group, an empty key, a LogValuer, a time outside years
// 0-9999) and every record under HandlerOptions.ReplaceAttr or AddSource is formatted by
// the stock handler, which the Handler keeps beside it with the same attributes and groups.
// Like the stock handler it writes each record with one Write call, under a lock; to a
// LineAppender (asynclog.Writer) a fast record is appended in place instead, whole.
package logjson

import (
	"context"
	"io"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agate-gateway/agate/internal/jsonx"
)

// Handler is the fast JSON handler. Its zero value is not usable; see New.
type Handler struct {
	w io.Writer
	// mu is shared by a Handler and those derived from it, and by std's writes; nil when
	// w is a LineWriter, which keeps each Write whole by itself.
	mu *sync.Mutex
	// app is w when it takes a line appended in place (LineAppender), else nil.
	app   LineAppender
	level slog.Leveler
	std   slog.Handler // the stock handler, with this Handler's attributes and groups
	// pre holds the WithAttrs attributes, formatted, each starting with a comma.
	pre []byte
	// slow sends every record to std: a group is open, an option the fast path does not
	// implement is set, or a WithAttrs attribute is not one it formats.
	slow bool
	bufs *sync.Pool
	// clock is the last second formatted, shared with the handlers derived from this one.
	clock *atomic.Pointer[second]
}

// LineWriter is a writer safe for concurrent use that keeps every Write whole, never
// interleaved with another (asynclog.Writer). The Handler writes to one without a lock of
// its own: two locks a line would pass two cache lines between cores instead of one.
type LineWriter interface {
	io.Writer
	// KeepsWritesWhole marks the contract; it does nothing.
	KeepsWritesWhole()
}

// LineAppender is a LineWriter that takes a line appended straight to its own buffer
// (asynclog.Writer): the Handler then formats a fast record there, with no buffer of its
// own and no copy of the line.
type LineAppender interface {
	LineWriter
	// BeginLine locks the writer and returns its buffer to append one whole line to; ok
	// false (the writer left unlocked) means the line is to be written with Write.
	BeginLine() (b []byte, ok bool)
	// EndLine takes the buffer BeginLine returned with the line appended (or as it was
	// returned, to abandon the line) and unlocks the writer.
	EndLine(b []byte)
}

// New returns a Handler writing to w with opts (nil means the defaults), as
// slog.NewJSONHandler(w, opts) would.
func New(w io.Writer, opts *slog.HandlerOptions) *Handler {
	if opts == nil {
		opts = &slog.HandlerOptions{}
	}
	var mu *sync.Mutex
	if _, whole := w.(LineWriter); !whole {
		mu = new(sync.Mutex)
	}
	app, _ := w.(LineAppender)
	h := &Handler{w: w, mu: mu, app: app, level: opts.Level, bufs: &sync.Pool{}, clock: new(atomic.Pointer[second])}
	h.std = slog.NewJSONHandler(lockedWriter{w: w, mu: mu}, opts)
	h.slow = opts.ReplaceAttr != nil || opts.AddSource
	if h.level == nil {
		h.level = slog.LevelInfo
	}
	return h
}

// lockedWriter gives the stock handler's writes the Handler's lock, so that the two never
// interleave on a writer that is not safe for concurrent use. A nil mu means none is
// needed (LineWriter).
type lockedWriter struct {
	w  io.Writer
	mu *sync.Mutex
}

func (l lockedWriter) Write(p []byte) (int, error) {
	if l.mu == nil {
		return l.w.Write(p)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// Enabled reports whether level is at least the handler's level.
func (h *Handler) Enabled(_ context.Context, level slog.Level) bool {
	return level >= h.level.Level()
}

// fast reports whether the fast path formats a as the stock handler would.
func fast(a slog.Attr) bool {
	if a.Key == "" {
		return false
	}
	switch a.Value.Kind() {
	case slog.KindString, slog.KindInt64, slog.KindUint64, slog.KindBool, slog.KindDuration:
		return true
	}
	return false
}

// Handle writes r as one JSON line.
func (h *Handler) Handle(ctx context.Context, r slog.Record) error {
	simple := h.fastTime(r.Time)
	r.Attrs(func(a slog.Attr) bool {
		simple = simple && fast(a)
		return simple
	})
	if !simple {
		return h.std.Handle(ctx, r)
	}
	return h.write(r.Time, r.Level, r.Message, func(b []byte) []byte {
		r.Attrs(func(a slog.Attr) bool {
			b = appendAttr(b, a)
			return true
		})
		return b
	})
}

// LogAttrs writes the record of msg and attrs at level and time t exactly as Handle
// writes a slog.Record holding them, without building that Record: one holds five
// attributes, and each further one costs an allocation. Like Handle it leaves the level
// check to the caller (Enabled); ctx goes to the stock handler when it writes the record.
func (h *Handler) LogAttrs(ctx context.Context, t time.Time, level slog.Level, msg string, attrs ...slog.Attr) error {
	simple := h.fastTime(t)
	for _, a := range attrs {
		simple = simple && fast(a)
	}
	if !simple {
		r := slog.NewRecord(t, level, msg, 0)
		r.AddAttrs(attrs...)
		return h.std.Handle(ctx, r)
	}
	return h.write(t, level, msg, func(b []byte) []byte {
		for _, a := range attrs {
			b = appendAttr(b, a)
		}
		return b
	})
}

// LogFunc writes the record of msg at level and time t whose attributes are those attrs
// returns, as LogAttrs would, with the attributes built only when the stock handler
// formats the record. Otherwise members writes them: for each attribute, in order, a
// comma and the JSON member the stock handler writes for it (AppendString writes a
// string its way). It is for a line logged on every request, whose keys are constants:
// nothing is built, boxed or checked per attribute, and members must not retain its
// argument. Like LogAttrs it leaves the level check to the caller.
func (h *Handler) LogFunc(ctx context.Context, t time.Time, level slog.Level, msg string, members func([]byte) []byte, attrs func() []slog.Attr) error {
	if !h.fastTime(t) {
		r := slog.NewRecord(t, level, msg, 0)
		r.AddAttrs(attrs()...)
		return h.std.Handle(ctx, r)
	}
	return h.write(t, level, msg, members)
}

// fastTime reports whether the fast path may format a record at t: no option it does
// not implement is set and t is zero or within years 0-9999.
func (h *Handler) fastTime(t time.Time) bool {
	if h.slow {
		return false
	}
	if t.IsZero() {
		return true
	}
	// The second last formatted was within the years (appendTime keeps only those): a
	// line in the same second and location needs no calendar arithmetic.
	if s := h.clock.Load(); s != nil && s.unix == t.Unix() && s.loc == t.Location() {
		return true
	}
	y := t.Year()
	return y >= 0 && y < 10000
}

// second is one second of wall time in one location, formatted as RFC 3339 writes it: the
// date and time of day to the second, and the zone ("Z" or "±hh:mm").
type second struct {
	unix  int64
	loc   *time.Location
	clock []byte
	zone  []byte
}

// appendTime appends t as t.AppendFormat(b, time.RFC3339Nano) does. The text of its
// second is formatted once and kept (most lines of a busy server fall in the second of
// the line before); only the fraction is written per line.
func (h *Handler) appendTime(b []byte, t time.Time) []byte {
	unix, loc := t.Unix(), t.Location()
	s := h.clock.Load()
	if s == nil || s.unix != unix || s.loc != loc {
		s = &second{unix: unix, loc: loc, clock: t.AppendFormat(nil, "2006-01-02T15:04:05"),
			zone: t.AppendFormat(nil, "Z07:00")}
		h.clock.Store(s)
	}
	b = append(b, s.clock...)
	if ns := t.Nanosecond(); ns != 0 { // as .999999999 does: trailing zeros left out
		var frac [10]byte
		frac[0] = '.'
		// Three groups of three digits, each written from its value by constant
		// divisions (no loop, no bounds checks).
		ms, us, rest := uint32(ns)/1000000, uint32(ns)/1000%1000, uint32(ns)%1000
		frac[1], frac[2], frac[3] = byte('0'+ms/100), byte('0'+ms/10%10), byte('0'+ms%10)
		frac[4], frac[5], frac[6] = byte('0'+us/100), byte('0'+us/10%10), byte('0'+us%10)
		frac[7], frac[8], frac[9] = byte('0'+rest/100), byte('0'+rest/10%10), byte('0'+rest%10)
		n := 10
		for frac[n-1] == '0' {
			n--
		}
		b = append(b, frac[:n]...)
	}
	return append(b, s.zone...)
}

// write formats a record whose attributes the fast path formats (attrs appends them)
// straight into a LineAppender's buffer, or else into a pooled buffer that it writes with
// one Write call.
func (h *Handler) write(t time.Time, level slog.Level, msg string, attrs func([]byte) []byte) error {
	if h.app != nil {
		if b, ok := h.app.BeginLine(); ok {
			h.appendLine(b, t, level, msg, attrs)
			return nil
		}
	}
	bp, _ := h.bufs.Get().(*[]byte)
	if bp == nil {
		bp = new([]byte)
	}
	b := h.format((*bp)[:0], t, level, msg, attrs)
	var err error
	if h.mu == nil {
		_, err = h.w.Write(b)
	} else {
		h.mu.Lock()
		_, err = h.w.Write(b)
		h.mu.Unlock()
	}
	if cap(b) <= 16<<10 {
		*bp = b
		h.bufs.Put(bp)
	}
	return err
}

// appendLine appends the line to b, the buffer h.app.BeginLine returned, and hands it to
// EndLine; a panic of attrs abandons the line and leaves the writer unlocked.
func (h *Handler) appendLine(b []byte, t time.Time, level slog.Level, msg string, attrs func([]byte) []byte) {
	n, done := len(b), false
	defer func() {
		if !done {
			h.app.EndLine(b[:n])
		}
	}()
	b = h.format(b, t, level, msg, attrs)
	done = true
	h.app.EndLine(b)
}

// format appends the line of a record the fast path formats to b.
func (h *Handler) format(b []byte, t time.Time, level slog.Level, msg string, attrs func([]byte) []byte) []byte {
	b = append(b, '{')
	if !t.IsZero() {
		b = append(b, `"time":"`...)
		b = h.appendTime(b, t)
		b = append(b, `",`...)
	}
	if level == slog.LevelInfo { // every request's line: its level's text is a constant
		b = append(b, `"level":"INFO","msg":`...)
	} else {
		b = append(b, `"level":`...)
		b = AppendString(b, level.String())
		b = append(b, `,"msg":`...)
	}
	b = AppendString(b, msg)
	b = append(b, h.pre...)
	b = attrs(b)
	return append(b, "}\n"...)
}

// appendAttr appends ,"key":value for an attribute fast accepted.
func appendAttr(b []byte, a slog.Attr) []byte {
	b = append(b, ',')
	b = AppendString(b, a.Key)
	b = append(b, ':')
	switch v := a.Value; v.Kind() {
	case slog.KindString:
		b = AppendString(b, v.String())
	case slog.KindInt64:
		b = strconv.AppendInt(b, v.Int64(), 10)
	case slog.KindUint64:
		b = strconv.AppendUint(b, v.Uint64(), 10)
	case slog.KindBool:
		b = strconv.AppendBool(b, v.Bool())
	case slog.KindDuration:
		b = strconv.AppendInt(b, int64(v.Duration()), 10) // nanoseconds, as json.Marshal
	}
	return b
}

// WithAttrs returns a handler whose records carry attrs after their built-in fields.
func (h *Handler) WithAttrs(attrs []slog.Attr) slog.Handler {
	h2 := *h
	h2.std = h.std.WithAttrs(attrs)
	if h.slow {
		return &h2
	}
	pre := append([]byte(nil), h.pre...)
	for _, a := range attrs {
		if !fast(a) {
			h2.slow = true
			return &h2
		}
		pre = appendAttr(pre, a)
	}
	h2.pre = pre
	return &h2
}

// WithGroup returns a handler that qualifies later attributes with name; its records
// are formatted by the stock handler.
func (h *Handler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	h2 := *h
	h2.std, h2.slow = h.std.WithGroup(name), true
	return &h2
}

// AppendString appends s as a JSON string the way slog's JSON handler escapes it: ", \
// and control characters escaped (\n, \r, \t by name), HTML characters left as they are,
// each invalid UTF-8 byte as \ufffd, and U+2028 and U+2029 escaped. It is jsonx's
// escaper with those rules (jsonx.AppendSlogString).
func AppendString(b []byte, s string) []byte { return jsonx.AppendSlogString(b, s) }
