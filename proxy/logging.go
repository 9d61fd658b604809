package proxy

import (
	"context"
	"log/slog"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agate-gateway/agate/internal/logjson"
)

// logInfoAt logs an info record of time t (a reading the caller has already taken) of
// typed attributes, as Logger.LogAttrs does but without looking up the caller: slog's
// Logger methods call runtime.Callers for a source location the gateway's handlers never
// print, a measurable cost on the per-request access line.
func logInfoAt(l *slog.Logger, t time.Time, msg string, attrs ...slog.Attr) {
	ctx := context.Background()
	if !l.Enabled(ctx, slog.LevelInfo) {
		return
	}
	if h, ok := l.Handler().(*logjson.Handler); ok { // the gateway's: no Record to build
		_ = h.LogAttrs(ctx, t, slog.LevelInfo, msg, attrs...)
		return
	}
	r := slog.NewRecord(t, slog.LevelInfo, msg, 0)
	r.AddAttrs(attrs...)
	_ = l.Handler().Handle(ctx, r)
}

// logLineAt logs an info record of time t whose attributes are those attrs returns. The
// gateway's handler writes them with members instead, which must write what it would
// write for them (logjson.Handler.LogFunc): a line logged on every request then builds
// no attribute.
func logLineAt(l *slog.Logger, t time.Time, msg string, members func([]byte) []byte, attrs func() []slog.Attr) {
	ctx := context.Background()
	if !l.Enabled(ctx, slog.LevelInfo) {
		return
	}
	if h, ok := l.Handler().(*logjson.Handler); ok {
		_ = h.LogFunc(ctx, t, slog.LevelInfo, msg, members, attrs)
		return
	}
	r := slog.NewRecord(t, slog.LevelInfo, msg, 0)
	r.AddAttrs(attrs()...)
	_ = l.Handler().Handle(ctx, r)
}

// requestLogger returns a logger whose records carry request_id first, as
// l.With("request_id", rid) would, but costs nothing until a record is logged: With
// formats its attributes at once, and most requests log no line through it (the access
// line is logged by requestRun.finish with the id as an explicit attribute).
func requestLogger(l *slog.Logger, rid string) *slog.Logger {
	return slog.New(&requestHandler{next: l.Handler(), rid: rid})
}

// requestHandler adds request_id before a record's own attributes.
type requestHandler struct {
	next slog.Handler
	rid  string
}

func (h *requestHandler) Enabled(ctx context.Context, level slog.Level) bool {
	return h.next.Enabled(ctx, level)
}

func (h *requestHandler) Handle(ctx context.Context, r slog.Record) error {
	out := slog.NewRecord(r.Time, r.Level, r.Message, r.PC)
	out.AddAttrs(slog.String("request_id", h.rid))
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(a)
		return true
	})
	return h.next.Handle(ctx, out)
}

func (h *requestHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return h.next.WithAttrs(append([]slog.Attr{slog.String("request_id", h.rid)}, attrs...))
}

func (h *requestHandler) WithGroup(name string) slog.Handler {
	return h.next.WithAttrs([]slog.Attr{slog.String("request_id", h.rid)}).WithGroup(name)
}

const (
	// maxLoggedString bounds one client-supplied string (a model name) quoted in an error
	// message, and so in the log.
	maxLoggedString = 128
	// maxLoggedMessage bounds an error message in a log line: messages may quote
	// client-supplied strings.
	maxLoggedMessage = 512
)

// clip returns s as valid UTF-8 of at most n bytes plus a marker naming the original
// length when it had to be cut; invalid UTF-8 is replaced by U+FFFD.
func clip(s string, n int) string {
	if len(s) <= n && utf8.ValidString(s) {
		return s
	}
	total := len(s)
	cut := false
	if len(s) > n {
		s, cut = s[:n], true
		// Drop a rune cut in two at the end rather than turn it into U+FFFD.
		for i := 0; i < utf8.UTFMax-1 && len(s) > 0; i++ {
			if r, size := utf8.DecodeLastRuneInString(s); r != utf8.RuneError || size != 1 {
				break
			}
			s = s[:len(s)-1]
		}
	}
	s = strings.ToValidUTF8(s, "\uFFFD")
	if cut {
		s += "…[" + strconv.Itoa(total) + " bytes]"
	}
	return s
}
