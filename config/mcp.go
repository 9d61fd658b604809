package config

import (
	"strings"
	"time"
)

// MCP configures the gateway's own MCP endpoint (docs/mcp-endpoint.md): the tool sources
// of `tools:` served to MCP clients (MCP streamable HTTP), each key seeing exactly the tools
// of its keys.<name>.tools, authenticated by the key as the chat routes are. Off by default.
type MCP struct {
	// Enabled serves the endpoint on server.listen.
	Enabled bool `koanf:"enabled"`
	// Path is where it is served (POST, GET and DELETE). Default /mcp; it must start with
	// "/" and must not be one of the gateway's own routes (/v1/..., /healthz, /readyz,
	// /metrics, /admin/...).
	Path string `koanf:"path"`
	// MaxMessageBytes bounds one request body (a JSON-RPC message or batch), read before
	// anything parses it; a larger one is answered 413 with a JSON-RPC error. Default 1 MiB
	// (1048576; also when 0).
	MaxMessageBytes int `koanf:"max_message_bytes"`
	// SessionIdleTimeout closes a session that sent no request for this long (its client
	// must initialize again). Default 30m (also when 0).
	SessionIdleTimeout time.Duration `koanf:"session_idle_timeout"`
}

// The mcp section's defaults.
const (
	DefaultMCPPath               = "/mcp"
	DefaultMCPMaxMessageBytes    = 1 << 20
	DefaultMCPSessionIdleTimeout = 30 * time.Minute
)

// mcpDefaults fills the section's defaults when the endpoint is on (a config without it
// stays as written).
func (c *Config) mcpDefaults() {
	if !c.MCP.Enabled {
		return
	}
	setDefault(&c.MCP.Path, DefaultMCPPath)
	setDefault(&c.MCP.MaxMessageBytes, DefaultMCPMaxMessageBytes)
	setDefault(&c.MCP.SessionIdleTimeout, DefaultMCPSessionIdleTimeout)
}

// reservedPaths are the gateway's own routes (exact, or prefix when ending in "/"), which
// mcp.path must not shadow.
var reservedPaths = []string{"/v1/", "/chat/completions", "/responses", "/embeddings", "/models",
	"/healthz", "/readyz", "/metrics", "/admin/"}

func (c *Config) validateMCP(v *validator) {
	m := c.MCP
	if !m.Enabled {
		return
	}
	switch {
	case !strings.HasPrefix(m.Path, "/"):
		v.addf("mcp.path", "must start with / (got %q)", m.Path)
	case strings.ContainsAny(m.Path, "?#* \t"):
		v.addf("mcp.path", "must be a plain path, without query, fragment, spaces or wildcards (got %q)", m.Path)
	default:
		for _, p := range reservedPaths {
			if m.Path == p || m.Path == strings.TrimSuffix(p, "/") || strings.HasSuffix(p, "/") && strings.HasPrefix(m.Path, p) {
				v.addf("mcp.path", "%q is one of the gateway's own routes", m.Path)
				break
			}
		}
	}
	if m.MaxMessageBytes < 0 {
		v.addf("mcp.max_message_bytes", "must not be negative")
	}
	v.nonNegativeDuration("mcp.session_idle_timeout", m.SessionIdleTimeout)
}
