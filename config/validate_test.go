package config

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const (
	secretAPIKey    = "sk-ant-SECRET-api-key-0123456789"
	secretClientKey = "client-SECRET-token-9876543210"
	secretHeader    = "Bearer SECRET-header-value"
)

// validConfig is a hand-built valid Config, with secrets set, that the rows below break.
func validConfig() *Config {
	c := exampleConfig()
	b := c.Backends["claude"]
	b.APIKey = secretAPIKey
	b.Headers = map[string]string{"X-Token": secretHeader}
	c.Backends["claude"] = b
	c.Keys = map[string]Key{
		"alice": {Key: secretClientKey, Models: []string{"*"}, Tools: []string{"everything", "weather", "everything/echo"}, MaxToolIterations: 8},
		"ci":    {KeySHA256: strings.Repeat("ab", 32), Models: []string{"demo", "claude/*"}},
	}
	c.Tools = map[string]ToolSource{
		"everything": {Type: "mcp", Command: []string{"npx", "-y", "@modelcontextprotocol/server-everything"}, Env: map[string]string{"T": secretHeader}},
		"remote":     {Type: "mcp", URL: "https://user:" + secretAPIKey + "@mcp.example.com/mcp"},
		"weather":    {Type: "http", URL: "http://127.0.0.1:9000/weather", Parameters: map[string]any{"type": "object"}},
		"clock":      {Type: "builtin", Name: "current_time"},
	}
	return c
}

func TestValidate_Valid(t *testing.T) {
	if err := validConfig().Validate(); err != nil {
		t.Fatalf("Validate(validConfig()) = %v", err)
	}
}

func TestValidate_NamesTheField(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*Config)
		want   string
	}{
		{
			name:   "server.listen empty",
			mutate: func(c *Config) { c.Server.Listen = "" },
			want:   "config: server.listen: required",
		},
		{
			name:   "server.listen not an address",
			mutate: func(c *Config) { c.Server.Listen = "8080" },
			want:   `config: server.listen: invalid address "8080" (want host:port or :port)`,
		},
		{
			name:   "negative max_body_bytes",
			mutate: func(c *Config) { c.Server.MaxBodyBytes = -1 },
			want:   "config: server.max_body_bytes: must not be negative",
		},
		{
			name:   "negative shutdown_timeout",
			mutate: func(c *Config) { c.Server.ShutdownTimeout = -1 },
			want:   "config: server.shutdown_timeout: must not be negative",
		},
		{
			name:   "negative max_connections_per_ip",
			mutate: func(c *Config) { c.Server.MaxConnectionsPerIP = -1 },
			want:   "config: server.max_connections_per_ip: must not be negative",
		},
		{
			name:   "negative write_timeout",
			mutate: func(c *Config) { c.Server.WriteTimeout = -1 },
			want:   "config: server.write_timeout: must not be negative",
		},
		{
			name:   "metrics.listen is server.listen",
			mutate: func(c *Config) { c.Metrics.Listen = c.Server.Listen },
			want:   "config: metrics.listen: must differ from server.listen",
		},
		{
			name:   "metrics.listen not an address",
			mutate: func(c *Config) { c.Metrics.Listen = "9090" },
			want:   `config: metrics.listen: invalid address "9090" (want host:port or :port)`,
		},
		{
			name:   "log level",
			mutate: func(c *Config) { c.Log.Level = "verbose" },
			want:   `config: log.level: "verbose" is not one of debug, info, warn, error`,
		},
		{
			name:   "log format",
			mutate: func(c *Config) { c.Log.Format = "xml" },
			want:   `config: log.format: "xml" is not one of json, text`,
		},
		{
			name:   "backend type unknown",
			mutate: func(c *Config) { setBackend(c, "claude", func(b *Backend) { b.Type = "claude" }) },
			want:   `config: backends.claude.type: "claude" is not one of anthropic, gemini, responses, openai, azure, vertex, bedrock, mock`,
		},
		{
			name:   "backend type missing",
			mutate: func(c *Config) { setBackend(c, "claude", func(b *Backend) { b.Type = "" }) },
			want:   "config: backends.claude.type: required (one of anthropic, gemini, responses, openai, azure, vertex, bedrock, mock)",
		},
		{
			name:   "backend name with slash",
			mutate: func(c *Config) { c.Backends["a/b"] = Backend{Type: "mock"} },
			want:   `config: backends.a/b: name must not contain "/"`,
		},
		{
			name:   "base_url missing",
			mutate: func(c *Config) { setBackend(c, "gemini", func(b *Backend) { b.BaseURL = "" }) },
			want:   "config: backends.gemini.base_url: required",
		},
		{
			name:   "base_url not http",
			mutate: func(c *Config) { setBackend(c, "gemini", func(b *Backend) { b.BaseURL = "ftp://example.com" }) },
			want:   "config: backends.gemini.base_url: must be an absolute http or https URL",
		},
		{
			name:   "base_url relative",
			mutate: func(c *Config) { setBackend(c, "gemini", func(b *Backend) { b.BaseURL = "api.example.com/v1" }) },
			want:   "config: backends.gemini.base_url: must be an absolute http or https URL",
		},
		{
			name:   "base_url optional for mock",
			mutate: func(c *Config) { setBackend(c, "offline", func(b *Backend) { b.BaseURL = "" }) },
		},
		{
			name:   "empty api_key allowed",
			mutate: func(c *Config) { setBackend(c, "claude", func(b *Backend) { b.APIKey = "" }) },
		},
		{
			name:   "header name",
			mutate: func(c *Config) { setBackend(c, "claude", func(b *Backend) { b.Headers["Bad Name"] = "v" }) },
			want:   `config: backends.claude.headers: invalid header name "Bad Name"`,
		},
		{
			name: "header value injection",
			mutate: func(c *Config) {
				setBackend(c, "claude", func(b *Backend) { b.Headers["X-Token"] = secretHeader + "\r\nX-Evil: 1" })
			},
			want: "config: backends.claude.headers.X-Token: header value must not contain CR, LF or NUL",
		},
		{
			name:   "negative timeout",
			mutate: func(c *Config) { setBackend(c, "claude", func(b *Backend) { b.Timeouts.StreamIdle = -1 }) },
			want:   "config: backends.claude.timeouts.stream_idle: must not be negative",
		},
		{
			name:   "retries.max -1 allowed",
			mutate: func(c *Config) { setBackend(c, "claude", func(b *Backend) { b.Retries.Max = -1 }) },
		},
		{
			name:   "retries.max below -1",
			mutate: func(c *Config) { setBackend(c, "claude", func(b *Backend) { b.Retries.Max = -2 }) },
			want:   "config: backends.claude.retries.max: must be -1 (no retries) or more",
		},
		{
			name: "retries base_delay above max_delay",
			mutate: func(c *Config) {
				setBackend(c, "claude", func(b *Backend) { b.Retries.BaseDelay = b.Retries.MaxDelay * 2 })
			},
			want: "config: backends.claude.retries.base_delay: 20s is longer than retries.max_delay 10s",
		},
		{
			name:   "negative request timeout",
			mutate: func(c *Config) { setBackend(c, "claude", func(b *Backend) { b.Timeouts.Request = -1 }) },
			want:   "config: backends.claude.timeouts.request: must not be negative",
		},
		{
			name:   "retries.on_timeout retry allowed",
			mutate: func(c *Config) { setBackend(c, "claude", func(b *Backend) { b.Retries.OnTimeout = OnTimeoutRetry }) },
		},
		{
			name:   "unknown retries.on_timeout",
			mutate: func(c *Config) { setBackend(c, "claude", func(b *Backend) { b.Retries.OnTimeout = "wait" }) },
			want:   `config: backends.claude.retries.on_timeout: "wait" is not one of fallback, retry`,
		},
		{
			name:   "negative model request timeout",
			mutate: func(c *Config) { setModel(c, "demo", func(m *Model) { m.Timeouts.Request = -1 }) },
			want:   "config: models.demo.timeouts.request: must not be negative",
		},
		{
			name:   "negative first_token",
			mutate: func(c *Config) { setModel(c, "demo", func(m *Model) { m.Timeouts.FirstToken = -1 }) },
			want:   "config: models.demo.timeouts.first_token: must not be negative",
		},
		{
			name:   "negative max_conns",
			mutate: func(c *Config) { setBackend(c, "claude", func(b *Backend) { b.MaxConns = -5 }) },
			want:   "config: backends.claude.max_conns: must not be negative",
		},
		{
			name:   "negative max_response_bytes",
			mutate: func(c *Config) { setBackend(c, "claude", func(b *Backend) { b.MaxResponseBytes = -1 }) },
			want:   "config: backends.claude.max_response_bytes: must not be negative",
		},
		{
			name:   "store on a non-responses backend",
			mutate: func(c *Config) { setBackend(c, "openai", func(b *Backend) { b.Store = true }) },
			want:   "config: backends.openai.store: only for responses backends",
		},
		{
			name:   "model backend missing",
			mutate: func(c *Config) { setModel(c, "demo", func(m *Model) { m.Backend = "" }) },
			want:   "config: models.demo.backend: required",
		},
		{
			name:   "model backend unknown",
			mutate: func(c *Config) { setModel(c, "demo", func(m *Model) { m.Backend = "x" }) },
			want:   `config: models.demo.backend: unknown backend "x"`,
		},
		{
			name: "fallback unknown",
			mutate: func(c *Config) {
				setModel(c, "gemini-flash", func(m *Model) { m.Fallbacks = []string{"claude-sonnet", "nope"} })
			},
			want: `config: models.gemini-flash.fallbacks[1]: unknown model "nope"`,
		},
		{
			name: "fallback to itself",
			mutate: func(c *Config) {
				setModel(c, "gemini-flash", func(m *Model) { m.Fallbacks = []string{"gemini-flash"} })
			},
			want: "config: models.gemini-flash.fallbacks[0]: model cannot fall back to itself",
		},
		{
			name: "fallback duplicate",
			mutate: func(c *Config) {
				setModel(c, "gemini-flash", func(m *Model) { m.Fallbacks = []string{"demo", "demo"} })
			},
			want: `config: models.gemini-flash.fallbacks[1]: duplicate fallback "demo"`,
		},
		{
			name:   "prompt_cache",
			mutate: func(c *Config) { setModel(c, "demo", func(m *Model) { m.PromptCache = "on" }) },
			want:   `config: models.demo.prompt_cache: "on" is not one of off, auto`,
		},
		{
			name:   "a script on a mock model",
			mutate: func(c *Config) { setModel(c, "demo", func(m *Model) { m.Script = []ScriptTurn{{Text: "hi"}} }) },
		},
		{
			name: "a script on a model that is not on a mock backend",
			mutate: func(c *Config) {
				setModel(c, "gemini-flash", func(m *Model) { m.Script = []ScriptTurn{{Text: "hi"}} })
			},
			want: `config: models.gemini-flash.script: only a model on a mock backend has a script (backend "gemini" is gemini)`,
		},
		{
			name: "a script turn with neither text nor calls, and a call without a name",
			mutate: func(c *Config) {
				setModel(c, "demo", func(m *Model) {
					m.Script = []ScriptTurn{{}, {ToolCalls: []ScriptToolCall{{}}}, {Text: "x", ToolCalls: []ScriptToolCall{{Name: "t"}}}}
				})
			},
			want: "config: models.demo.script[0]: set text or tool_calls\nconfig: models.demo.script[1].tool_calls[0].name: required\nconfig: models.demo.script[2]: set text or tool_calls, not both",
		},
		{
			name:   "prompt_cache empty allowed",
			mutate: func(c *Config) { setModel(c, "demo", func(m *Model) { m.PromptCache = "" }) },
		},
		{
			name:   "negative max_tokens",
			mutate: func(c *Config) { setModel(c, "demo", func(m *Model) { m.MaxTokens = -1 }) },
			want:   "config: models.demo.max_tokens: must not be negative",
		},
		{
			name:   "empty model name",
			mutate: func(c *Config) { c.Models[""] = Model{Backend: "offline"} },
			want:   `config: models."": name must not be empty`,
		},
		{
			name:   "key and key_sha256",
			mutate: func(c *Config) { setKey(c, "alice", func(k *Key) { k.KeySHA256 = strings.Repeat("0", 64) }) },
			want:   "config: keys.alice: set only one of key and key_sha256",
		},
		{
			name:   "neither key nor key_sha256",
			mutate: func(c *Config) { setKey(c, "alice", func(k *Key) { k.Key = "" }) },
			want:   "config: keys.alice: one of key or key_sha256 is required (a ${VAR} that is empty counts as unset)",
		},
		{
			name:   "key_sha256 uppercase",
			mutate: func(c *Config) { setKey(c, "ci", func(k *Key) { k.KeySHA256 = strings.Repeat("AB", 32) }) },
			want:   "config: keys.ci.key_sha256: must be 64 lowercase hex characters",
		},
		{
			name:   "key_sha256 too short",
			mutate: func(c *Config) { setKey(c, "ci", func(k *Key) { k.KeySHA256 = "abc" }) },
			want:   "config: keys.ci.key_sha256: must be 64 lowercase hex characters",
		},
		{
			name: "same token twice",
			mutate: func(c *Config) {
				sum := sha256.Sum256([]byte(secretClientKey))
				setKey(c, "ci", func(k *Key) { k.KeySHA256 = hex.EncodeToString(sum[:]) })
			},
			want: "config: keys.ci: same token as keys.alice",
		},
		{
			name:   "model glob",
			mutate: func(c *Config) { setKey(c, "ci", func(k *Key) { k.Models = []string{"demo", "claude/[a-"} }) },
			want:   `config: keys.ci.models[1]: invalid glob "claude/[a-"`,
		},
		{
			name:   "empty model glob",
			mutate: func(c *Config) { setKey(c, "ci", func(k *Key) { k.Models = []string{""} }) },
			want:   "config: keys.ci.models[0]: must not be empty",
		},
		{
			name:   "key tool source unknown",
			mutate: func(c *Config) { setKey(c, "alice", func(k *Key) { k.Tools = []string{"wether"} }) },
			want:   `config: keys.alice.tools[0]: unknown tool source "wether"`,
		},
		{
			name:   "key single tool of unknown source",
			mutate: func(c *Config) { setKey(c, "alice", func(k *Key) { k.Tools = []string{"nothing/echo"} }) },
			want:   `config: keys.alice.tools[0]: unknown tool source "nothing"`,
		},
		{
			name:   "key single tool of an http source",
			mutate: func(c *Config) { setKey(c, "alice", func(k *Key) { k.Tools = []string{"weather/x"} }) },
			want:   `config: keys.alice.tools[0]: "weather/x": only mcp sources have several tools; name the http source "weather" alone`,
		},
		{
			name:   "key single tool without name",
			mutate: func(c *Config) { setKey(c, "alice", func(k *Key) { k.Tools = []string{"everything/"} }) },
			want:   `config: keys.alice.tools[0]: "everything/" names no tool after the source`,
		},
		{
			name:   "negative max_tool_iterations",
			mutate: func(c *Config) { setKey(c, "alice", func(k *Key) { k.MaxToolIterations = -1 }) },
			want:   "config: keys.alice.max_tool_iterations: must not be negative",
		},
		{
			name:   "negative max_tool_calls_per_turn",
			mutate: func(c *Config) { setKey(c, "alice", func(k *Key) { k.MaxToolCallsPerTurn = -1 }) },
			want:   "config: keys.alice.max_tool_calls_per_turn: must not be negative",
		},
		{
			name:   "negative max_concurrent_tool_calls",
			mutate: func(c *Config) { setKey(c, "alice", func(k *Key) { k.MaxConcurrentToolCalls = -1 }) },
			want:   "config: keys.alice.max_concurrent_tool_calls: must not be negative",
		},
		{
			name:   "tool type",
			mutate: func(c *Config) { setTool(c, "clock", func(t *ToolSource) { t.Type = "grpc" }) },
			want:   `config: tools.clock.type: "grpc" is not one of mcp, http, builtin`,
		},
		{
			name:   "tool name with slash",
			mutate: func(c *Config) { c.Tools["a/b"] = ToolSource{Type: "builtin", Name: "x"} },
			want:   `config: tools.a/b: name must not contain "/"`,
		},
		{
			name:   "mcp with command and url",
			mutate: func(c *Config) { setTool(c, "everything", func(t *ToolSource) { t.URL = "https://x.example/mcp" }) },
			want:   "config: tools.everything: set only one of command and url",
		},
		{
			name: "mcp with neither",
			mutate: func(c *Config) {
				setTool(c, "everything", func(t *ToolSource) { t.Command, t.Env = nil, nil })
			},
			want: "config: tools.everything: one of command (stdio) or url (streamable HTTP) is required",
		},
		{
			name:   "mcp empty program",
			mutate: func(c *Config) { setTool(c, "everything", func(t *ToolSource) { t.Command = []string{""} }) },
			want:   "config: tools.everything.command[0]: program must not be empty",
		},
		{
			name:   "mcp bad url",
			mutate: func(c *Config) { setTool(c, "remote", func(t *ToolSource) { t.URL = "mcp.example.com" }) },
			want:   "config: tools.remote.url: must be an absolute http or https URL",
		},
		{
			name:   "mcp env without command",
			mutate: func(c *Config) { setTool(c, "remote", func(t *ToolSource) { t.Env = map[string]string{"A": "b"} }) },
			want:   "config: tools.remote.env: only for sources started with command",
		},
		{
			name:   "allowed_betas on a mock backend",
			mutate: func(c *Config) { setBackend(c, "offline", func(b *Backend) { b.AllowedBetas = []string{"x"} }) },
			want:   "config: backends.offline.allowed_betas: only for anthropic backends",
		},
		{
			name:   "allowed_betas with a comma",
			mutate: func(c *Config) { setBackend(c, "claude", func(b *Backend) { b.AllowedBetas = []string{"a,b"} }) },
			want:   `config: backends.claude.allowed_betas[0]: a beta name without commas or spaces, or "*"`,
		},
		{
			name: "mcp env_passthrough without command",
			mutate: func(c *Config) {
				setTool(c, "remote", func(t *ToolSource) { t.EnvPassthrough = []string{"HTTPS_PROXY"} })
			},
			want: "config: tools.remote.env_passthrough: only for sources started with command",
		},
		{
			name: "mcp env name invalid",
			mutate: func(c *Config) {
				setTool(c, "everything", func(t *ToolSource) { t.Env = map[string]string{"A=B": "c"} })
			},
			want: `config: tools.everything.env: "A=B" is not a valid environment variable name (letters, digits and _, not starting with a digit)`,
		},
		{
			name: "mcp env_passthrough name invalid",
			mutate: func(c *Config) {
				setTool(c, "everything", func(t *ToolSource) { t.EnvPassthrough = []string{"PATH", "1X"} })
			},
			want: "config: tools.everything.env_passthrough[1]: not a valid environment variable name (letters, digits and _, not starting with a digit)",
		},
		{
			name:   "env_passthrough on an http source",
			mutate: func(c *Config) { setTool(c, "weather", func(t *ToolSource) { t.EnvPassthrough = []string{"X"} }) },
			want:   "config: tools.weather.env_passthrough: only for mcp sources",
		},
		{
			name:   "required on an http source",
			mutate: func(c *Config) { setTool(c, "weather", func(t *ToolSource) { t.Required = true }) },
			want:   "config: tools.weather.required: only for mcp sources",
		},
		{
			name:   "http without url",
			mutate: func(c *Config) { setTool(c, "weather", func(t *ToolSource) { t.URL = "" }) },
			want:   "config: tools.weather.url: required",
		},
		{
			name:   "http with command",
			mutate: func(c *Config) { setTool(c, "weather", func(t *ToolSource) { t.Command = []string{"x"} }) },
			want:   "config: tools.weather.command: only for mcp sources",
		},
		{
			name: "http parameters not an object",
			mutate: func(c *Config) {
				setTool(c, "weather", func(t *ToolSource) { t.Parameters = map[string]any{"type": "string"} })
			},
			want: `config: tools.weather.parameters.type: must be "object"`,
		},
		{
			name:   "builtin without name",
			mutate: func(c *Config) { setTool(c, "clock", func(t *ToolSource) { t.Name = "" }) },
			want:   "config: tools.clock.name: required",
		},
		{
			name:   "builtin with url",
			mutate: func(c *Config) { setTool(c, "clock", func(t *ToolSource) { t.URL = "http://x" }) },
			want:   "config: tools.clock.url: only for mcp or http sources",
		},
		{
			name:   "negative tool timeout",
			mutate: func(c *Config) { setTool(c, "clock", func(t *ToolSource) { t.Timeout = -1 }) },
			want:   "config: tools.clock.timeout: must not be negative",
		},
		{
			name: "negative override",
			mutate: func(c *Config) {
				setTool(c, "everything", func(t *ToolSource) { t.Overrides = map[string]ToolOverride{"echo": {MaxResultBytes: -1}} })
			},
			want: "config: tools.everything.overrides.echo.max_result_bytes: must not be negative",
		},
		{
			name:   "negative cache ttl",
			mutate: func(c *Config) { c.Cache.TTL = -1 },
			want:   "config: cache.ttl: must not be negative",
		},
		{
			name:   "negative cache max_entries",
			mutate: func(c *Config) { c.Cache.MaxEntries = -1 },
			want:   "config: cache.max_entries: must not be negative",
		},
		{
			name:   "cache scope",
			mutate: func(c *Config) { c.Cache.Scope = "team" },
			want:   `config: cache.scope: "team" is not one of key, global`,
		},
		{
			name:   "responses store mode",
			mutate: func(c *Config) { c.Responses.Store = "disk" },
			want:   `config: responses.store: "disk" is not one of memory, redis, off`,
		},
		{
			name:   "responses store redis without redis state",
			mutate: func(c *Config) { c.Responses.Store = "redis" },
			want:   `config: responses.store: redis needs responses.url or state.type: redis (the Redis the replicas share)`,
		},
		{
			name:   "responses store redis on its own url is valid",
			mutate: func(c *Config) { c.Responses.Store = "redis"; c.Responses.URL = "redis://127.0.0.1:6380/0" },
		},
		{
			name:   "responses url not redis, not quoted",
			mutate: func(c *Config) { c.Responses.Store = "redis"; c.Responses.URL = "http://u:" + secretAPIKey + "@h:1" },
			want:   `config: responses.url: must be a redis:// or rediss:// URL with a host`,
		},
		{
			name:   "responses url without the redis store",
			mutate: func(c *Config) { c.Responses.URL = "redis://127.0.0.1:6380/0" },
			want:   `config: responses.url: only for responses.store redis`,
		},
		{
			name:   "negative responses max_stored_bytes",
			mutate: func(c *Config) { c.Responses.MaxStoredBytes = -1 },
			want:   `config: responses.max_stored_bytes: must not be negative`,
		},
		{
			name:   "negative responses max_bytes",
			mutate: func(c *Config) { c.Responses.MaxBytes = -1 },
			want:   "config: responses.max_bytes: must not be negative",
		},
		{
			name: "all problems at once, sorted",
			mutate: func(c *Config) {
				c.Server.Listen = ""
				c.Cache.TTL = -1
				setModel(c, "demo", func(m *Model) { m.Backend = "x" })
				setModel(c, "claude-sonnet", func(m *Model) { m.PromptCache = "always" })
			},
			want: `config: cache.ttl: must not be negative
config: models.claude-sonnet.prompt_cache: "always" is not one of off, auto
config: models.demo.backend: unknown backend "x"
config: server.listen: required`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := validConfig()
			tt.mutate(c)
			got := ""
			if err := c.Validate(); err != nil {
				got = err.Error()
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Validate() error mismatch (-want +got):\n%s", diff)
			}
			for _, secret := range []string{secretAPIKey, secretClientKey, secretHeader, "SECRET"} {
				if strings.Contains(got, secret) {
					t.Errorf("Validate() error contains a secret: %s", got)
				}
			}
		})
	}
}

// TestParse_ErrorsHideSecrets breaks a document around secret values in every way that
// fails and checks no message quotes them.
func TestParse_ErrorsHideSecrets(t *testing.T) {
	const secret = "sk-SECRET-5up3r"
	tests := []struct {
		name    string
		doc     string
		environ []string
	}{
		{name: "api_key of the wrong type", doc: "backends:\n  b: {type: mock, api_key: {nested: " + secret + "}}"},
		{name: "api_key list", doc: "backends:\n  b: {type: mock, api_key: [" + secret + "]}"},
		{name: "key with bad reference", doc: "keys:\n  a: {key: '" + secret + "${', models: ['*']}"},
		{name: "key with invalid name", doc: "keys:\n  a: {key: '" + secret + "${" + secret + "}'}"},
		{name: "key and key_sha256", doc: "keys:\n  a: {key: " + secret + ", key_sha256: " + secret + "}"},
		{name: "bad key_sha256", doc: "keys:\n  a: {key_sha256: " + secret + "}"},
		{name: "duplicate key", doc: "keys:\n  a: {key: " + secret + "}\n  b: {key: " + secret + "}"},
		{name: "duplicate key from env", doc: "keys:\n  a: {key: '${K}'}\n  b: {key: " + secret + "}", environ: []string{"K=" + secret}},
		{name: "url with credentials", doc: "backends:\n  b: {type: openai, base_url: 'ftp://u:" + secret + "@x/v1'}"},
		{name: "url with key in query", doc: "backends:\n  b: {type: gemini, base_url: '/v1?key=" + secret + "'}"},
		{name: "header value", doc: "backends:\n  b: {type: mock, headers: {A: \"" + secret + "\\r\\n\"}}"},
		{name: "header value of the wrong type", doc: "backends:\n  b: {type: mock, headers: {A: [" + secret + "]}}"},
		{name: "tool env of the wrong type", doc: "tools:\n  t: {type: mcp, command: [x], env: {A: {b: " + secret + "}}}"},
		{name: "secret as an unknown key's value", doc: "backends:\n  b: {type: mock, apikey: " + secret + "}"},
		{name: "override of the wrong type", doc: "backends:\n  b: {type: mock}", environ: []string{"GATEWAY_BACKENDS__B__API_KEY__X=" + secret}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.doc), tt.environ)
			if err == nil {
				t.Fatal("Parse succeeded, want an error")
			}
			if strings.Contains(err.Error(), "SECRET") {
				t.Errorf("error quotes a secret:\n%v", err)
			}
		})
	}
}

func setBackend(c *Config, name string, f func(*Backend)) {
	b := c.Backends[name]
	f(&b)
	c.Backends[name] = b
}

func setModel(c *Config, name string, f func(*Model)) {
	m := c.Models[name]
	f(&m)
	c.Models[name] = m
}

func setKey(c *Config, name string, f func(*Key)) {
	k := c.Keys[name]
	f(&k)
	c.Keys[name] = k
}

func setTool(c *Config, name string, f func(*ToolSource)) {
	t := c.Tools[name]
	f(&t)
	c.Tools[name] = t
}
