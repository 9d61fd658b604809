package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// builtin is one tool implemented in the gateway.
type builtin struct {
	spec toolSpec
	run  func(b *builtinSource, args json.RawMessage) (Result, error)
}

// builtinNames lists the tools a type builtin source can expose.
const builtinNames = "time_now"

// builtinByName returns the builtin tool called name.
func builtinByName(name string) (builtin, bool) {
	switch name {
	case "time_now":
		return builtin{
			spec: toolSpec{
				Description:      "Returns the current date and time in UTC, in RFC 3339 format (for example 2025-01-31T14:05:09Z).",
				Parameters:       json.RawMessage(`{"type":"object","properties":{},"additionalProperties":false}`),
				ReadOnly:         true,
				NoCacheByDefault: true, // the answer changes every second
			},
			run: func(b *builtinSource, _ json.RawMessage) (Result, error) {
				return Result{Content: b.now().UTC().Format(time.RFC3339)}, nil
			},
		}, true
	}
	return builtin{}, false
}

// builtinSource is a type builtin source: the one builtin its options name (Name, or,
// when that is empty, by the source name), offered to models under the source name.
type builtinSource struct {
	tool builtin
	now  func() time.Time
}

var _ source = (*builtinSource)(nil)

func newBuiltinSource(name string, cfg SourceOptions, now func() time.Time) (*builtinSource, error) {
	toolName := cfg.Name
	if toolName == "" {
		toolName = name
	}
	b, ok := builtinByName(toolName)
	if !ok {
		return nil, fmt.Errorf("unknown builtin %q (want one of: %s)", toolName, builtinNames)
	}
	b.spec.Tool = toolName
	b.spec.NamedAfterSource = true
	return &builtinSource{tool: b, now: now}, nil
}

func (s *builtinSource) start(context.Context) ([]toolSpec, error) {
	return []toolSpec{s.tool.spec}, nil
}

func (s *builtinSource) call(_ context.Context, _ string, args json.RawMessage) (Result, error) {
	return s.tool.run(s, args)
}

func (s *builtinSource) ready() error { return nil }
func (s *builtinSource) close() error { return nil }
