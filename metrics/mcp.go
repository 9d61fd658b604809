package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// toolCallsVia is gateway_tool_calls_total: server-side tool calls by tool, outcome and via,
// the path the call came by: "loop" (the server-side tool loop) or "mcp" (the gateway's
// MCP endpoint). The values of via are the two of tools.ViaLoop and tools.ViaMCP.
func toolCallsVia() *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "gateway_tool_calls_total", Help: "Server-side tool calls by outcome and by the path they came by (via: loop or mcp).",
	}, []string{"tool", "outcome", "via"})
}

// ToolCallVia records one tool call made by via (it implements tools.ViaObserver): "mcp"
// for the MCP endpoint's, anything else counts as "loop", so the label stays bounded.
func (m *Metrics) ToolCallVia(via, tool, outcome string, d time.Duration) {
	if via != "mcp" {
		via = "loop"
	}
	m.ToolCallsVia.WithLabelValues(tool, outcome, via).Inc()
	if outcome != "cached" { // tools.OutcomeCached: nothing ran
		m.ToolDuration.WithLabelValues(tool).Observe(d.Seconds())
	}
}
