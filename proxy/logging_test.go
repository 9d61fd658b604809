package proxy

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agate-gateway/agate/internal/asynclog"
	"github.com/agate-gateway/agate/internal/logjson"
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

// TestAccessLine_MembersMatchAttrs: the access line the gateway's handler writes from
// appendMembers is the line the stock JSON handler writes from attrs, for names and ids
// that need escaping too; a handler that is not the gateway's writes attrs.
func TestAccessLine_MembersMatchAttrs(t *testing.T) {
	at := time.Date(2026, 11, 28, 1, 2, 3, 450000000, time.UTC)
	tests := []struct {
		name string
		d    requestDone
	}{
		{"non-streamed answer", requestDone{rid: "0123456789abcdef01234567", label: "claude-bench", backend: "anth",
			key: "bench", api: apiChat, code: 200, at: at, took: 51 * time.Millisecond, prompt: 12, completion: 9}},
		{"streamed, refused before a route", requestDone{rid: "r", label: unknownLabel, key: "k", code: 429, stream: true, at: at}},
		{"estimated usage", requestDone{rid: "r", label: "m", backend: "b", key: "k", code: 499, stream: true, at: at,
			prompt: 5, completion: 50, estimated: true}},
		{"answered by a fallback", requestDone{rid: "r", label: "main", backend: "primary", key: "k", code: 200, at: at,
			answered: "spare\"1", fallback: true}},
		{"answered by the model asked for", requestDone{rid: "r", label: "main", backend: "primary", key: "k", code: 200, stream: true, at: at,
			answered: "main"}},
		{"escapes", requestDone{rid: "a\"b\\c\n\x00<>&\u2028\xff", label: "m\u00e9", backend: "b\t", key: "k\"",
			code: 502, at: at, took: -time.Millisecond, prompt: -1, completion: 1 << 40}},
	}
	for _, tt := range tests {
		// The same line with the members a route and a key wrote when they were made.
		pre := tt.d
		pre.routeLog, pre.keyLog = routeLogMembers(pre.label, pre.backend), keyLogMembers(pre.key)
		tests = append(tests, struct {
			name string
			d    requestDone
		}{tt.name + ", preformatted", pre})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var want, got, text, textWant bytes.Buffer
			r := slog.NewRecord(at, slog.LevelInfo, accessLine, 0)
			r.AddAttrs(tt.d.attrs()...)
			_ = slog.NewJSONHandler(&want, nil).Handle(context.Background(), r)
			logLineAt(slog.New(logjson.New(&got, nil)), at, accessLine, tt.d.appendMembers, tt.d.attrs)
			if diff := cmp.Diff(want.String(), got.String()); diff != "" {
				t.Errorf("access line (-stock +gateway's):\n%s", diff)
			}
			_ = slog.NewTextHandler(&textWant, nil).Handle(context.Background(), r)
			logLineAt(slog.New(slog.NewTextHandler(&text, nil)), at, accessLine, tt.d.appendMembers, tt.d.attrs)
			if diff := cmp.Diff(textWant.String(), text.String()); diff != "" {
				t.Errorf("text access line (-want +got):\n%s", diff)
			}
		})
	}
}

// BenchmarkAccessLine: the access line of one request (requestDone.record's logging)
// through the gateway's handler, into io.Discard.
func BenchmarkAccessLine(b *testing.B) {
	l := slog.New(logjson.New(io.Discard, nil))
	d := requestDone{rid: "0123456789abcdef01234567", label: "claude-bench", backend: "anth", key: "bench",
		code: 200, took: 50 * time.Millisecond, prompt: 12, completion: 9}
	b.Run("attrs", func(b *testing.B) { // the way before appendMembers
		b.ReportAllocs()
		for b.Loop() {
			d.at = time.Now()
			logInfoAt(l, d.at, accessLine, slog.String("request_id", d.rid),
				slog.String("model", d.label), slog.String("backend", d.backend), slog.String("key", d.key), slog.Bool("stream", d.stream),
				slog.Int("status", d.code), slog.Int64("duration_ms", d.took.Milliseconds()),
				slog.Int("prompt_tokens", d.prompt), slog.Int("completion_tokens", d.completion))
		}
	})
	b.Run("members", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			d.at = time.Now()
			logLineAt(l, d.at, accessLine, d.appendMembers, d.attrs)
		}
	})
	d.routeLog, d.keyLog = routeLogMembers(d.label, d.backend), keyLogMembers(d.key)
	b.Run("preformatted", func(b *testing.B) { // a configured route's and key's (#55)
		b.ReportAllocs()
		for b.Loop() {
			d.at = time.Now()
			logLineAt(l, d.at, accessLine, d.appendMembers, d.attrs)
		}
	})
	// The gateway's sink (cmd/gateway: the batching writer), its output discarded: the
	// line is appended in place there (#55).
	w := asynclog.New(io.Discard, asynclog.Options{})
	defer w.Close()
	la := slog.New(logjson.New(w, nil))
	b.Run("asynclog", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			d.at = time.Now()
			logLineAt(la, d.at, accessLine, d.appendMembers, d.attrs)
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

func TestHex8(t *testing.T) {
	for _, v := range []uint32{0, 1, 9, 10, 15, 16, 0x12345678, 0x9abcdef0, 0xa0b0c0d0, 0xffffffff, 0x0f0f0f0f} {
		var got [8]byte
		binary.LittleEndian.PutUint64(got[:], hex8(v))
		if want := fmt.Sprintf("%08x", v); string(got[:]) != want {
			t.Errorf("hex8(%#x) = %q, want %q", v, got[:], want)
		}
	}
}

func FuzzHex8(f *testing.F) {
	f.Add(uint32(0x12345678))
	f.Fuzz(func(t *testing.T, v uint32) {
		var got [8]byte
		binary.LittleEndian.PutUint64(got[:], hex8(v))
		if want := fmt.Sprintf("%08x", v); string(got[:]) != want {
			t.Fatalf("hex8(%#x) = %q, want %q", v, got[:], want)
		}
	})
}

func BenchmarkNewID(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		_ = newID("chatcmpl-")
	}
}
