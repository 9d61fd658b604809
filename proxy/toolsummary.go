package proxy

import (
	"sync"
	"time"

	"github.com/agate-gateway/agate/ledger"
	"github.com/agate-gateway/agate/loop"
	"github.com/agate-gateway/agate/tools"
)

// This file is the ledger's server tool summary: the tool loop (loop.Loop.Recorder)
// tells a request's toolLog of each server tool call, and toLedger copies the summary
// into the record. Only requests with a tool loop have one.

// toolLog sums one request's server tool calls by tool: the first ledger.MaxTools tools
// in the order first called, and the calls of the others. It keeps configured names
// only (the tool's and its source's), never arguments or results. Safe for concurrent
// use.
type toolLog struct {
	mu      sync.Mutex
	uses    []ledger.ToolUse
	omitted int
}

var _ loop.ToolRecorder = (*toolLog)(nil)

// ToolCall adds a call of d that took took; failed is set for an error result.
func (l *toolLog) ToolCall(d *tools.Definition, failed bool, took time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	i := 0
	for i < len(l.uses) && l.uses[i].Name != d.Name {
		i++
	}
	if i == len(l.uses) {
		if i == ledger.MaxTools {
			l.omitted++
			return
		}
		l.uses = append(l.uses, ledger.ToolUse{Name: d.Name, Source: d.Source})
	}
	u := &l.uses[i]
	u.Calls++
	if failed {
		u.Errors++
	}
	u.Duration += took
}

// summary returns a copy of the tools (nil when none ran, or l is nil) and the calls of
// those left out.
func (l *toolLog) summary() ([]ledger.ToolUse, int) {
	if l == nil {
		return nil, 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.uses) == 0 {
		return nil, l.omitted
	}
	return append([]ledger.ToolUse(nil), l.uses...), l.omitted
}
