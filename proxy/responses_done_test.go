package proxy

import (
	"bytes"
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agate-gateway/agate/internal/logjson"
)

// TestResponsesLine_MembersMatchAttrs: the Responses access line the gateway's handler
// writes from responsesDone's members is the line it wrote through the request's logger
// and slog (responsesRun.finish before: request_id, then the same pairs), for the
// gateway's JSON handler and slog's text handler alike.
func TestResponsesLine_MembersMatchAttrs(t *testing.T) {
	at := time.Date(2026, 12, 6, 1, 2, 3, 450000000, time.UTC)
	for _, tt := range []struct {
		name string
		d    responsesDone
	}{
		{"passthrough", responsesDone{requestDone: requestDone{rid: "0123456789abcdef01234567", label: "resp-bench", backend: "resp",
			key: "bench", code: 200, at: at, took: 51 * time.Millisecond, prompt: 412, completion: 187}, passthrough: true}},
		{"translated stream, estimated", responsesDone{requestDone: requestDone{rid: "r", label: "claude", backend: "anth", key: "k",
			code: 499, stream: true, at: at, prompt: 5, completion: 50, estimated: true}}},
		{"answered by a fallback", responsesDone{requestDone: requestDone{rid: "r", label: "main", backend: "primary", key: "k", code: 200,
			at: at, answered: "spare\"1", fallback: true}}},
		{"escapes", responsesDone{requestDone: requestDone{rid: "a\"b\\c\n\x00<>&\u2028\xff", label: "m\u00e9", backend: "b\t", key: "k\"",
			code: 502, at: at, took: -time.Millisecond, prompt: -1, completion: 1 << 40}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d := tt.d
			for _, handler := range []struct {
				name string
				make func(*bytes.Buffer) slog.Handler
			}{
				{"json", func(b *bytes.Buffer) slog.Handler { return logjson.New(b, nil) }},
				{"text", func(b *bytes.Buffer) slog.Handler { return slog.NewTextHandler(b, nil) }},
			} {
				var before, now bytes.Buffer
				r := slog.NewRecord(at, slog.LevelInfo, "response", 0)
				r.Add("model", d.label, "backend", d.backend, "key", d.key, "stream", d.stream,
					"status", d.code, "passthrough", d.passthrough, "duration_ms", d.took.Milliseconds(),
					"prompt_tokens", d.prompt, "completion_tokens", d.completion,
					"usage_estimated", d.estimated, "answered_model", d.answered, "fallback", d.fallback)
				_ = requestLogger(slog.New(handler.make(&before)), d.rid).Handler().Handle(context.Background(), r)
				logLineAt(slog.New(handler.make(&now)), at, responsesLine, d.appendMembers, d.attrs)
				if diff := cmp.Diff(before.String(), now.String()); diff != "" {
					t.Errorf("%s access line (-before +now):\n%s", handler.name, diff)
				}
			}
		})
	}
}
