package tools

import (
	"context"
	"log/slog"
	"strings"
)

// redactURLs returns s with every URL ("scheme://...") cut down to its scheme and host: user
// information, path, query and fragment are replaced by redactedRest. Tool source URLs carry
// secrets in any of those parts (?token=, https://user:pass@, Zapier-style keys in the
// path), and Go's HTTP client quotes the whole URL in its errors, so any error text from a
// source passes through here before it reaches the model, the client or the log.
//
// A URL ends at whitespace, a quote, a backslash or an angle bracket. When it holds an '@',
// everything up to the last one is treated as user information, so a password containing
// '/', '?' or '#' cannot be mistaken for the host.
func redactURLs(s string) string {
	i := strings.Index(s, "://")
	if i < 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i >= 0 {
		start := i
		for start > 0 && isSchemeByte(s[start-1]) {
			start--
		}
		rest := s[i+len("://"):]
		end := strings.IndexAny(rest, " \t\r\n\"'`<>\\")
		if end < 0 {
			end = len(rest)
		}
		authority := rest[:end]
		if at := strings.LastIndexByte(authority, '@'); at >= 0 {
			authority = authority[at+1:]
		}
		host := authority
		if j := strings.IndexAny(host, "/?#"); j >= 0 {
			host = host[:j]
		}
		b.WriteString(s[:i+len("://")])
		b.WriteString(host)
		if host != rest[:end] {
			b.WriteString(redactedRest)
		}
		s = rest[end:]
		i = strings.Index(s, "://")
	}
	b.WriteString(s)
	return b.String()
}

// redactedRest replaces the part of a URL after its host.
const redactedRest = "/[redacted]"

func isSchemeByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '+' || c == '-' || c == '.'
}

// redactedError is an error whose text went through redactURLs. It still unwraps to the
// original, so errors.Is and errors.As see the cause; only its text is safe to show.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// redactError returns err with URLs cut from its text (nil stays nil).
func redactError(err error) error {
	if err == nil {
		return nil
	}
	if _, ok := err.(*redactedError); ok {
		return err
	}
	msg := err.Error()
	if red := redactURLs(msg); red != msg {
		return &redactedError{msg: red, err: err}
	}
	return err
}

// redactingHandler is a slog.Handler that passes the message and every string or error
// attribute through redactURLs. It wraps the logger handed to a URL-configured source and to
// the MCP SDK, whose log lines quote transport errors verbatim.
type redactingHandler struct{ next slog.Handler }

func newRedactingLogger(l *slog.Logger) *slog.Logger {
	return slog.New(redactingHandler{next: l.Handler()})
}

func (h redactingHandler) Enabled(ctx context.Context, level slog.Level) bool {
	return h.next.Enabled(ctx, level)
}

func (h redactingHandler) Handle(ctx context.Context, r slog.Record) error {
	out := slog.NewRecord(r.Time, r.Level, redactURLs(r.Message), r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(redactAttr(a))
		return true
	})
	return h.next.Handle(ctx, out)
}

func (h redactingHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	red := make([]slog.Attr, len(attrs))
	for i, a := range attrs {
		red[i] = redactAttr(a)
	}
	return redactingHandler{next: h.next.WithAttrs(red)}
}

func (h redactingHandler) WithGroup(name string) slog.Handler {
	return redactingHandler{next: h.next.WithGroup(name)}
}

// redactAttr redacts string values, errors and anything else that formats as text
// (fmt.Stringer, %v of an arbitrary value), recursing into groups.
func redactAttr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, redactURLs(v.String()))
	case slog.KindGroup:
		g := v.Group()
		red := make([]any, len(g))
		for i, ga := range g {
			red[i] = redactAttr(ga)
		}
		return slog.Group(a.Key, red...)
	case slog.KindAny:
		if err, ok := v.Any().(error); ok {
			return slog.Any(a.Key, redactError(err))
		}
		return slog.String(a.Key, redactURLs(v.String()))
	default:
		return slog.Attr{Key: a.Key, Value: v}
	}
}
