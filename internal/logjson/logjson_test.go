package logjson

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"
)

// record is one logging call: a level, a message and attributes, made on a handler
// derived with with (WithAttrs) and group (WithGroup) first.
type record struct {
	level slog.Level
	msg   string
	time  time.Time
	attrs []slog.Attr
	with  []slog.Attr
	group string
}

// both formats rec with the stock JSON handler and with New, with the same options.
func both(t *testing.T, rec record, opts *slog.HandlerOptions) (got, want string) {
	t.Helper()
	var g, w, l bytes.Buffer
	derive := func(h slog.Handler) slog.Handler {
		if len(rec.with) > 0 {
			h = h.WithAttrs(rec.with)
		}
		if rec.group != "" {
			h = h.WithGroup(rec.group).WithAttrs([]slog.Attr{slog.Int("n", 1)})
		}
		return h
	}
	for _, x := range []struct {
		buf *bytes.Buffer
		h   slog.Handler
	}{{&g, New(&g, opts)}, {&w, slog.NewJSONHandler(&w, opts)}} {
		h := derive(x.h)
		if !h.Enabled(context.Background(), rec.level) {
			continue
		}
		r := slog.NewRecord(rec.time, rec.level, rec.msg, 0)
		r.AddAttrs(rec.attrs...)
		if err := h.Handle(context.Background(), r); err != nil {
			t.Fatal(err)
		}
	}
	// A writer that takes lines appended in place (asynclog.Writer) gets the same bytes.
	ap := &appender{}
	if h := derive(New(ap, opts)); h.Enabled(context.Background(), rec.level) {
		r := slog.NewRecord(rec.time, rec.level, rec.msg, 0)
		r.AddAttrs(rec.attrs...)
		if err := h.Handle(context.Background(), r); err != nil {
			t.Fatal(err)
		}
		if string(ap.buf) != g.String() {
			t.Errorf("Handle appended in place\n%s\nHandle wrote\n%s", ap.buf, g.String())
		}
	}
	if lh, ok := derive(New(&l, opts)).(*Handler); ok && lh.Enabled(context.Background(), rec.level) {
		// LogAttrs, the Record-less form, writes the same line.
		if err := lh.LogAttrs(context.Background(), rec.time, rec.level, rec.msg, rec.attrs...); err != nil {
			t.Fatal(err)
		}
		if l.String() != g.String() {
			t.Errorf("LogAttrs wrote\n%s\nHandle wrote\n%s", l.String(), g.String())
		}
		// So does LogFunc, given the members the fast path writes for fast attributes.
		allFast := true
		for _, a := range rec.attrs {
			allFast = allFast && fast(a)
		}
		if allFast {
			l.Reset()
			members := func(b []byte) []byte {
				for _, a := range rec.attrs {
					b = appendAttr(b, a)
				}
				return b
			}
			if err := lh.LogFunc(context.Background(), rec.time, rec.level, rec.msg, members, func() []slog.Attr { return rec.attrs }); err != nil {
				t.Fatal(err)
			}
			if l.String() != g.String() {
				t.Errorf("LogFunc wrote\n%s\nHandle wrote\n%s", l.String(), g.String())
			}
		}
	}
	return g.String(), w.String()
}

// appender is a LineAppender over a buffer, as asynclog.Writer is; it counts the lines
// appended in place and the Writes.
type appender struct {
	mu            sync.Mutex
	buf           []byte
	lines, writes int
}

func (a *appender) Write(p []byte) (int, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.writes++
	a.buf = append(a.buf, p...)
	return len(p), nil
}

func (*appender) KeepsWritesWhole() {}

func (a *appender) BeginLine() ([]byte, bool) {
	a.mu.Lock()
	return a.buf, true
}

func (a *appender) EndLine(b []byte) {
	if len(b) > len(a.buf) {
		a.lines++
	}
	a.buf = b
	a.mu.Unlock()
}

// TestHandler_AppendsInPlace: to a LineAppender, a fast record is appended in place (no
// Write), the stock handler's bytes; a record the fast path does not format is written.
func TestHandler_AppendsInPlace(t *testing.T) {
	ap := &appender{}
	h := New(ap, nil)
	members := func(b []byte) []byte { return appendAttr(b, slog.Int("status", 200)) }
	if err := h.LogFunc(context.Background(), at, slog.LevelInfo, "chat completion", members, nil); err != nil {
		t.Fatal(err)
	}
	var want bytes.Buffer
	_ = slog.New(slog.NewJSONHandler(&want, nil)).Handler().Handle(context.Background(), func() slog.Record {
		r := slog.NewRecord(at, slog.LevelInfo, "chat completion", 0)
		r.AddAttrs(slog.Int("status", 200))
		return r
	}())
	if string(ap.buf) != want.String() || ap.lines != 1 || ap.writes != 0 {
		t.Errorf("got %q in %d lines appended and %d writes, want %q in one line appended", ap.buf, ap.lines, ap.writes, want.String())
	}
	_ = h.LogAttrs(context.Background(), at, slog.LevelInfo, "m", slog.Float64("f", 0.5))
	if ap.lines != 1 || ap.writes != 1 {
		t.Errorf("a float attribute: %d lines appended, %d writes; want it written", ap.lines-1, ap.writes)
	}
}

// TestHandler_PanicAbandonsLine: a members function that panics while its line is being
// appended in place leaves nothing of the line and the writer unlocked.
func TestHandler_PanicAbandonsLine(t *testing.T) {
	ap := &appender{}
	h := New(ap, nil)
	ok := func(b []byte) []byte { return appendAttr(b, slog.Int("n", 1)) }
	_ = h.LogFunc(context.Background(), at, slog.LevelInfo, "first", ok, nil)
	before := string(ap.buf)
	func() {
		defer func() {
			if recover() == nil {
				t.Error("the members function's panic was lost")
			}
		}()
		_ = h.LogFunc(context.Background(), at, slog.LevelInfo, "second", func(b []byte) []byte {
			_ = append(b, `,"half":`...)
			panic("members")
		}, nil)
	}()
	if !ap.mu.TryLock() {
		t.Fatal("the writer is still locked after the panic")
	}
	ap.mu.Unlock()
	if string(ap.buf) != before {
		t.Errorf("after the panic the writer holds %q, want %q", ap.buf, before)
	}
	_ = h.LogFunc(context.Background(), at, slog.LevelInfo, "third", ok, nil)
	if !strings.HasPrefix(string(ap.buf), before) || !strings.Contains(string(ap.buf[len(before):]), `"msg":"third","n":1}`) {
		t.Errorf("the line after the panic: %q", ap.buf[len(before):])
	}
}

// asciiBytes is every byte below 0x80, in order.
var asciiBytes = func() string {
	b := make([]byte, 0x80)
	for c := range b {
		b[c] = byte(c)
	}
	return string(b)
}()

var at = time.Date(2026, 11, 24, 21, 36, 9, 123456789, time.UTC)

func TestHandler_MatchesStock(t *testing.T) {
	access := []slog.Attr{slog.String("request_id", "0123456789abcdef01234567"), slog.String("model", "claude-bench"),
		slog.String("backend", "anth"), slog.String("key", "bench"), slog.Bool("stream", false), slog.Int("status", 200),
		slog.Int64("duration_ms", 50), slog.Int("prompt_tokens", 12), slog.Int("completion_tokens", 9)}
	tests := []struct {
		name string
		rec  record
		opts *slog.HandlerOptions
	}{
		{"access line", record{level: slog.LevelInfo, msg: "chat completion", time: at, attrs: access}, nil},
		{"escapes", record{level: slog.LevelWarn, msg: "q\"b\\s\n\r\t\x00\x1f\x7f<>&\u2028\u2029é\xff\xc3", time: at,
			attrs: []slog.Attr{slog.String("k\"ey\n", "v\x01\xfe"), slog.String("", "empty key")}}, nil},
		{"every ASCII byte, in runs past the words the escaper skips", record{level: slog.LevelInfo, time: at,
			msg: asciiBytes + "<<<<>>>>&&&&<>&" + strings.Repeat("plain ", 6) + "<tag>&amp;\b\f", attrs: []slog.Attr{slog.String(asciiBytes, "\b\f\x0b")}}, nil},
		{"kinds", record{level: slog.LevelError + 2, msg: "m", time: at, attrs: []slog.Attr{slog.Uint64("u", 1<<63),
			slog.Int("neg", -5), slog.Duration("d", 1500*time.Millisecond), slog.Bool("t", true)}}, nil},
		{"slow kinds go to the stock handler", record{level: slog.LevelInfo, msg: "m", time: at, attrs: []slog.Attr{
			slog.Float64("f", 1e21), slog.Any("err", errors.New("boom")), slog.Time("at", at),
			slog.Group("g", slog.String("a", "b")), slog.Group("empty"), {}}}, nil},
		{"zero time is left out", record{level: slog.LevelDebug - 1, msg: "m", attrs: access[:2]},
			&slog.HandlerOptions{Level: slog.LevelDebug - 3}},
		{"below the level: nothing", record{level: slog.LevelDebug, msg: "m", time: at}, nil},
		{"time outside years 0-9999", record{level: slog.LevelInfo, msg: "m", time: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}, nil},
		{"with attrs", record{level: slog.LevelInfo, msg: "m", time: at, with: []slog.Attr{slog.String("request_id", "r1")}, attrs: access[1:3]}, nil},
		{"with an attr the fast path does not format", record{level: slog.LevelInfo, msg: "m", time: at,
			with: []slog.Attr{slog.Any("e", errors.New("x"))}, attrs: access[1:3]}, nil},
		{"group", record{level: slog.LevelInfo, msg: "m", time: at, group: "g", attrs: access[1:3]}, nil},
		{"replace attr", record{level: slog.LevelInfo, msg: "m", time: at, attrs: access[1:3]},
			&slog.HandlerOptions{ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
				if a.Key == slog.TimeKey {
					return slog.Attr{}
				}
				return a
			}}},
		{"add source", record{level: slog.LevelInfo, msg: "m", time: at}, &slog.HandlerOptions{AddSource: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, want := both(t, tt.rec, tt.opts)
			if got != want {
				t.Errorf("got  %s\nwant %s", got, want)
			}
		})
	}
}

// TestAppendTime: the time of a line is RFC 3339 with nanoseconds, as AppendFormat writes
// it, whether its second's text is kept from the line before or not.
func TestAppendTime(t *testing.T) {
	east, west := time.FixedZone("E", 5*3600+30*60), time.FixedZone("W", -8*3600)
	odd := time.FixedZone("LMT", -75) // an offset with seconds: RFC 3339 drops them
	h := New(io.Discard, nil)
	for _, tm := range []time.Time{
		at, at, // the second kept
		at.Add(time.Second), at.Truncate(time.Second), at.Truncate(time.Millisecond),
		at.Truncate(time.Microsecond), at.Add(-time.Nanosecond * 123456788), // .000000001
		at.In(east), at.In(west), at.In(west), at.In(odd), at.In(time.UTC),
		time.Date(0, 1, 1, 0, 0, 0, 1, time.UTC), time.Date(9999, 12, 31, 23, 59, 59, 999999999, east),
		time.Date(999, 3, 4, 5, 6, 7, 100, time.UTC), time.Unix(0, 0).UTC(),
		time.Now(), time.Now().In(west), // with a monotonic reading, which RFC 3339 leaves out
	} {
		if got, want := string(h.appendTime(nil, tm)), tm.Format(time.RFC3339Nano); got != want {
			t.Errorf("appendTime(%v) = %s, want %s", tm, got, want)
		}
	}
	// Each digit of the fraction in each place, and trailing zeros of every length.
	for ns := 1; ns < 1e9; ns = ns*10 + ns%7 + 1 {
		for _, tm := range []time.Time{at.Truncate(time.Second).Add(time.Duration(ns)), at.Truncate(time.Second).Add(time.Duration(1e9 - ns))} {
			if got, want := string(h.appendTime(nil, tm)), tm.Format(time.RFC3339Nano); got != want {
				t.Errorf("appendTime(%v) = %s, want %s", tm, got, want)
			}
		}
	}
}

// TestFastTime: the fast path takes a time within years 0-9999 in any zone, and never one
// outside them, whatever second it formatted last.
func TestFastTime(t *testing.T) {
	h := New(io.Discard, nil)
	east := time.FixedZone("E", 14*3600)
	for _, tt := range []struct {
		t    time.Time
		want bool
	}{
		{at, true}, {at, true}, {time.Time{}, true},
		{time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC), true},
		{time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC).In(east), false}, // the same second, in year 10000 there
		{time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), false},
		{time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC), true},
		{time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC).In(time.FixedZone("W", -3600)), false},
	} {
		if got := h.fastTime(tt.t); got != tt.want {
			t.Errorf("fastTime(%v) = %v, want %v", tt.t, got, tt.want)
		}
		if tt.want && !tt.t.IsZero() {
			h.appendTime(nil, tt.t) // kept as the last second
		}
	}
}

// FuzzAppendTimeMatchesFormat: any instant in years 0-9999, in any whole-minute or odd
// offset, is written as AppendFormat writes it, after any instant before it.
func FuzzAppendTimeMatchesFormat(f *testing.F) {
	f.Add(at.Unix(), int64(at.Nanosecond()), int32(0), int64(1))
	f.Add(int64(-62167219200), int64(1), int32(19800), int64(-1))
	h := New(io.Discard, nil)
	f.Fuzz(func(t *testing.T, sec, nsec int64, offset int32, step int64) {
		zone := time.FixedZone("Z", int(offset%(18*3600)))
		for _, tm := range []time.Time{time.Unix(sec, nsec).In(zone), time.Unix(sec, nsec).In(zone).Add(time.Duration(step))} {
			y := tm.Year()
			// fastTime, which trusts the second appendTime kept last, says what the year says.
			if got, want := h.fastTime(tm), y >= 0 && y < 10000; got != want {
				t.Fatalf("fastTime(%v) = %v, want %v", tm, got, want)
			}
			if y < 0 || y >= 10000 {
				continue
			}
			if got, want := string(h.appendTime(nil, tm)), tm.Format(time.RFC3339Nano); got != want {
				t.Fatalf("appendTime(%v) = %s, want %s", tm, got, want)
			}
		}
	})
}

// TestHandler_LineWriterIsNotLocked: a writer that keeps each Write whole gets the lines
// of concurrent records as they come, with no lock of the Handler's around its Write; any
// other writer gets one Write at a time.
func TestHandler_LineWriterIsNotLocked(t *testing.T) {
	for _, tt := range []struct {
		name       string
		lineWriter bool
		want       int // writes in progress at once
	}{{"LineWriter", true, 2}, {"plain writer", false, 1}} {
		t.Run(tt.name, func(t *testing.T) {
			w := &gate{entered: make(chan struct{}, 2), release: make(chan struct{})}
			var out io.Writer = w
			if tt.lineWriter {
				out = lineGate{w}
			}
			h := New(out, nil)
			done := make(chan struct{})
			for range 2 {
				go func() {
					_ = h.LogAttrs(context.Background(), at, slog.LevelInfo, "m", slog.Int("n", 1))
					done <- struct{}{}
				}()
			}
			<-w.entered
			if tt.want == 2 { // generous: only a Handler lock keeps the second out this long
				select {
				case <-w.entered:
				case <-time.After(10 * time.Second):
					t.Error("the second Write waited for the first: the Handler held a lock around it")
				}
			} else { // a lock the Handler forgot would let the second in within this
				select {
				case <-w.entered:
					t.Error("a second Write began before the first returned")
				case <-time.After(100 * time.Millisecond):
				}
			}
			close(w.release)
			<-done
			<-done
		})
	}
}

// gate is a writer whose Writes announce themselves and wait to be released.
type gate struct{ entered, release chan struct{} }

func (g *gate) Write(p []byte) (int, error) {
	g.entered <- struct{}{}
	<-g.release
	return len(p), nil
}

type lineGate struct{ *gate }

func (lineGate) KeepsWritesWhole() {}

// FuzzHandlerMatchesStock: for any message, keys and values, level and attributes derived
// with WithAttrs, the handler writes the stock JSON handler's bytes.
func FuzzHandlerMatchesStock(f *testing.F) {
	f.Add("chat completion", "request_id", "0123", int64(200), uint8(3), false, int8(0), true)
	f.Add("q\"\\\n\x00<>&\u2028\xff", "k\x01\"", "v\xc3(", int64(-1), uint8(0), true, int8(4), false)
	f.Fuzz(func(t *testing.T, msg, key, val string, n int64, kinds uint8, with bool, level int8, zeroTime bool) {
		var attrs []slog.Attr
		for i := range 5 {
			k := key + strings.Repeat("_", i)
			switch (kinds >> i) & 7 {
			case 0:
				attrs = append(attrs, slog.String(k, val))
			case 1:
				attrs = append(attrs, slog.Int64(k, n))
			case 2:
				attrs = append(attrs, slog.Uint64(k, uint64(n)))
			case 3:
				attrs = append(attrs, slog.Bool(k, n%2 == 0))
			case 4:
				attrs = append(attrs, slog.Duration(k, time.Duration(n)))
			case 5:
				attrs = append(attrs, slog.Float64(k, float64(n)/3))
			case 6:
				attrs = append(attrs, slog.Any(k, val))
			}
		}
		rec := record{level: slog.Level(level), msg: msg, time: at.Add(time.Duration(n)), attrs: attrs}
		if zeroTime {
			rec.time = time.Time{}
		}
		if with && len(attrs) > 0 {
			rec.with, rec.attrs = attrs[:1], attrs[1:]
		}
		got, want := both(t, rec, &slog.HandlerOptions{Level: slog.LevelDebug})
		if got != want {
			t.Fatalf("got  %s\nwant %s", got, want)
		}
	})
}

// BenchmarkAccessLine: the per-request access line through the stock JSON handler and
// through this one (both into io.Discard).
func BenchmarkAccessLine(b *testing.B) {
	for _, bc := range []struct {
		name string
		h    slog.Handler
	}{{"stock", slog.NewJSONHandler(io.Discard, nil)}, {"logjson", New(io.Discard, nil)}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				r := slog.NewRecord(time.Now(), slog.LevelInfo, "chat completion", 0)
				r.AddAttrs(slog.String("request_id", "0123456789abcdef01234567"), slog.String("model", "claude-bench"),
					slog.String("backend", "anth"), slog.String("key", "bench"), slog.Bool("stream", false), slog.Int("status", 200),
					slog.Int64("duration_ms", 50), slog.Int("prompt_tokens", 12), slog.Int("completion_tokens", 9))
				_ = bc.h.Handle(context.Background(), r)
			}
		})
	}
	// The gateway's own path: LogAttrs, with no Record built.
	b.Run("logjson-LogAttrs", func(b *testing.B) {
		h := New(io.Discard, nil)
		b.ReportAllocs()
		for b.Loop() {
			_ = h.LogAttrs(context.Background(), time.Now(), slog.LevelInfo, "chat completion",
				slog.String("request_id", "0123456789abcdef01234567"), slog.String("model", "claude-bench"),
				slog.String("backend", "anth"), slog.String("key", "bench"), slog.Bool("stream", false), slog.Int("status", 200),
				slog.Int64("duration_ms", 50), slog.Int("prompt_tokens", 12), slog.Int("completion_tokens", 9))
		}
	})
}
