package config

import (
	"errors"
	"strings"
	"testing"
)

func TestValidateMCP(t *testing.T) {
	tests := []struct {
		name string
		mcp  MCP
		want string // a problem's text; "" means valid
	}{
		{name: "off is never checked", mcp: MCP{Path: "no-slash"}},
		{name: "on with defaults", mcp: MCP{Enabled: true}},
		{name: "on elsewhere", mcp: MCP{Enabled: true, Path: "/tools/mcp"}},
		{name: "relative path", mcp: MCP{Enabled: true, Path: "mcp"}, want: "mcp.path: must start with /"},
		{name: "query in path", mcp: MCP{Enabled: true, Path: "/mcp?x=1"}, want: "mcp.path: must be a plain path"},
		{name: "a chat route", mcp: MCP{Enabled: true, Path: "/v1/chat/completions"}, want: "one of the gateway's own routes"},
		{name: "the admin API", mcp: MCP{Enabled: true, Path: "/admin/v1/mcp"}, want: "one of the gateway's own routes"},
		{name: "readyz", mcp: MCP{Enabled: true, Path: "/readyz"}, want: "one of the gateway's own routes"},
		{name: "negative bound", mcp: MCP{Enabled: true, MaxMessageBytes: -1}, want: "mcp.max_message_bytes: must not be negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &Config{MCP: tt.mcp}
			c.mcpDefaults()
			var v validator
			c.validateMCP(&v)
			var got string
			if err := errors.Join(v.problems...); err != nil {
				got = err.Error()
			}
			if tt.want == "" && got != "" || !strings.Contains(got, tt.want) {
				t.Errorf("problems = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestMCPDefaults(t *testing.T) {
	c := &Config{MCP: MCP{Enabled: true}}
	c.mcpDefaults()
	if c.MCP.Path != "/mcp" || c.MCP.MaxMessageBytes != 1<<20 || c.MCP.SessionIdleTimeout != DefaultMCPSessionIdleTimeout {
		t.Errorf("defaults = %+v", c.MCP)
	}
}
