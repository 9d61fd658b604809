package proxy

import (
	"bytes"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestRequestLogger: a request's logger writes the same lines as With("request_id", rid).
func TestRequestLogger(t *testing.T) {
	const rid = "req-42"
	tests := []struct {
		name string
		log  func(l *slog.Logger)
	}{
		{name: "plain", log: func(l *slog.Logger) { l.Info("retrying upstream", "backend", "anth", "attempt", 1) }},
		{name: "many attrs", log: func(l *slog.Logger) {
			l.Warn("falling back", "a", 1, "b", 2, "c", 3, "d", 4, "e", 5, "f", 6, "g", 7)
		}},
		{name: "with attrs", log: func(l *slog.Logger) { l.With("tool", "search").Error("tool failed", "error", "boom") }},
		{name: "with group", log: func(l *slog.Logger) { l.WithGroup("loop").Info("turn", "n", 2) }},
		{name: "below the level", log: func(l *slog.Logger) { l.Debug("not logged") }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var want, got bytes.Buffer
			opts := &slog.HandlerOptions{ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
				if a.Key == slog.TimeKey {
					return slog.Attr{}
				}
				return a
			}}
			tt.log(slog.New(slog.NewJSONHandler(&want, opts)).With("request_id", rid))
			tt.log(requestLogger(slog.New(slog.NewJSONHandler(&got, opts)), rid))
			if diff := cmp.Diff(want.String(), got.String()); diff != "" {
				t.Errorf("log (-want +got):\n%s", diff)
			}
		})
	}
}

// BenchmarkAccessLogLine: what the per-request logging costs, the old way (a With logger
// per request) and the new one (a lazy request logger, the access line with an explicit id).
func BenchmarkAccessLogLine(b *testing.B) {
	base := slog.New(slog.NewJSONHandler(io.Discard, nil))
	line := func(l *slog.Logger, attrs ...any) {
		l.Info("chat completion", append(attrs, "model", "claude-bench", "backend", "anth", "key", "bench", "stream", false,
			"status", 200, "duration_ms", int64(50), "prompt_tokens", 12, "completion_tokens", 9)...)
	}
	const rid = "0123456789abcdef01234567"
	b.Run("with", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			line(base.With("request_id", rid))
		}
	})
	b.Run("request-logger", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = requestLogger(base, rid)
			line(base, "request_id", rid)
		}
	})
}

func TestNewID(t *testing.T) {
	tests := []struct{ name, prefix string }{
		{name: "request id", prefix: ""},
		{name: "completion id", prefix: "chatcmpl-"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, b := newID(tt.prefix), newID(tt.prefix)
			if a == b {
				t.Errorf("two ids are equal: %q", a)
			}
			if len(a) != len(tt.prefix)+24 || a[:len(tt.prefix)] != tt.prefix || strings.Trim(a[len(tt.prefix):], "0123456789abcdef") != "" {
				t.Errorf("newID(%q) = %q, want the prefix and 24 hex digits", tt.prefix, a)
			}
		})
	}
}

func BenchmarkNewID(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		_ = newID("chatcmpl-")
	}
}
