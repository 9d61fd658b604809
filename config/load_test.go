package config

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

const examplePath = "../config.example.yaml"

func defaultTimeouts() Timeouts {
	return Timeouts{Connect: 10 * time.Second, Header: 120 * time.Second, StreamIdle: 120 * time.Second, PoolWait: 5 * time.Second,
		Request: 10 * time.Minute}
}

func defaultRetriesValue() Retries {
	return Retries{Max: 2, BaseDelay: 250 * time.Millisecond, MaxDelay: 10 * time.Second, OnTimeout: OnTimeoutFallback,
		CircuitBreaker: CircuitBreaker{Failures: 5, Cooldown: 30 * time.Second}}
}

func TestLoad_Example(t *testing.T) {
	tests := []struct {
		name    string
		environ []string
		// keys are applied to the expected config
		want func(*Config)
	}{
		{name: "no environment"},
		{
			name:    "api keys from the environment",
			environ: []string{"ANTHROPIC_API_KEY=sk-ant", "OPENAI_API_KEY=sk-oai", "GEMINI_API_KEY="},
			want: func(c *Config) {
				set := func(name, key string) {
					b := c.Backends[name]
					b.APIKey = key
					c.Backends[name] = b
				}
				set("claude", "sk-ant")
				set("openai", "sk-oai")
				set("openai-responses", "sk-oai")
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Load(examplePath, tt.environ)
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			want := exampleConfig()
			if tt.want != nil {
				tt.want(want)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("Load(%s) mismatch (-want +got):\n%s", examplePath, diff)
			}
		})
	}
}

// exampleConfig is what config.example.yaml loads to with no environment.
func exampleConfig() *Config {
	backend := func(typ, url string) Backend {
		b := Backend{Type: typ, BaseURL: url, Timeouts: defaultTimeouts(), Retries: defaultRetriesValue(), MaxConns: 512, MaxResponseBytes: 64 << 20}
		if typ == "anthropic" {
			b.AllowedBetas = DefaultAnthropicBetas()
		}
		return b
	}
	return &Config{
		Server: Server{
			Listen:           ":8080",
			MaxBodyBytes:     20971520,
			MaxInflatedBytes: 20971520,
			ShutdownTimeout:  30 * time.Second,
			WriteTimeout:     60 * time.Second,
			MaxConnections:   10000,
			ReadTimeout:      60 * time.Second,
			IdleTimeout:      120 * time.Second,
		},
		Log: Log{Level: "info", Format: "json"},
		Backends: map[string]Backend{
			"offline":          backend("mock", ""),
			"claude":           backend("anthropic", "https://api.anthropic.com"),
			"gemini":           backend("gemini", "https://generativelanguage.googleapis.com"),
			"openai-responses": backend("responses", "https://api.openai.com/v1"),
			"openai":           backend("openai", "https://api.openai.com/v1"),
		},
		Models: map[string]Model{
			"demo":          {Backend: "offline", UpstreamModel: "demo", PromptCache: "off"},
			"claude-sonnet": {Backend: "claude", UpstreamModel: "claude-sonnet-4-5", MaxTokens: 8192, PromptCache: "auto", Limits: Limits{RequestsPerMinute: 1000, TokensPerMinute: 2000000}, Price: &Price{Input: 3, Output: 15, CachedInput: 0.3, CacheWrite: 3.75}},
			"gemini-flash":  {Backend: "gemini", UpstreamModel: "gemini-2.5-flash", PromptCache: "off", Fallbacks: []string{"claude-sonnet"}},
			"gpt-5":         {Backend: "openai-responses", UpstreamModel: "gpt-5", PromptCache: "off"},
			"gpt-4o":        {Backend: "openai", UpstreamModel: "gpt-4o", PromptCache: "off"},
		},
		Cache: Cache{MaxEntries: 10000, TTL: 10 * time.Minute, Scope: "key"},
		State: defaultState(),

		Responses: Responses{Store: "memory", TTL: 24 * time.Hour, MaxEntries: 10000, MaxBytes: 64 << 20, MaxStoredBytes: 20 << 20},
	}
}

func defaultState() State {
	return State{Type: "memory", KeyPrefix: "agate:", Timeout: 50 * time.Millisecond, OnError: "allow", ReserveOutputTokens: 4096}
}

// TestLoad_ExampleCommentedSections uncomments the keys and tools examples of
// config.example.yaml so that they cannot rot either.
func TestLoad_ExampleCommentedSections(t *testing.T) {
	data, err := os.ReadFile(examplePath)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	inBlock := false
	for line := range strings.SplitSeq(string(data), "\n") {
		switch {
		case line == "# keys:" || line == "# tools:" || line == "# state:":
			inBlock = true
		case !strings.HasPrefix(line, "#  "):
			inBlock = false
		}
		if inBlock {
			line = strings.TrimPrefix(line, "# ")
		}
		out = append(out, line)
	}
	got, err := Parse([]byte(strings.Join(out, "\n")), []string{"ALICE_KEY=alice-secret", "WEATHER_TOKEN=w"})
	if err != nil {
		t.Fatalf("Parse(uncommented example): %v", err)
	}
	if len(got.Keys) != 2 || len(got.Tools) != 3 {
		t.Fatalf("uncommented example has %d keys and %d tools, want 2 and 3", len(got.Keys), len(got.Tools))
	}
	yes := true
	wantWeather := ToolSource{
		Type:        "http",
		URL:         "http://127.0.0.1:9000/weather",
		Headers:     map[string]string{"Authorization": "Bearer w"},
		Description: "Current weather for a city.",
		Parameters: map[string]any{
			"type":       "object",
			"properties": map[string]any{"city": map[string]any{"type": "string"}},
			"required":   []any{"city"},
		},
		ReadOnly:       true,
		Cache:          &yes,
		Timeout:        30 * time.Second,
		MaxResultBytes: 65536,
	}
	if diff := cmp.Diff(wantWeather, got.Tools["weather"]); diff != "" {
		t.Errorf("tools.weather mismatch (-want +got):\n%s", diff)
	}
	wantAlice := Key{Key: "alice-secret", Models: []string{"*"}, Tools: []string{"everything", "weather"}, MaxToolIterations: 8,
		MaxToolCallsPerTurn: 32, MaxConcurrentToolCalls: 8,
		Limits: Limits{RequestsPerMinute: 60, TokensPerMinute: 100000, Concurrent: 8},
		Budget: Budget{Tokens: 5000000, Period: 720 * time.Hour}}
	if diff := cmp.Diff(wantAlice, got.Keys["alice"]); diff != "" {
		t.Errorf("keys.alice mismatch (-want +got):\n%s", diff)
	}
	wantState := State{Type: "redis", URL: "redis://127.0.0.1:6379/0", KeyPrefix: "agate:", Timeout: 50 * time.Millisecond, OnError: "allow", ReserveOutputTokens: 4096}
	if diff := cmp.Diff(wantState, got.State); diff != "" {
		t.Errorf("state mismatch (-want +got):\n%s", diff)
	}
}

// minimal is a valid document the rows below extend.
const minimal = `
backends:
  m: {type: mock}
models:
  demo: {backend: m}
`

func TestParse_EnvOverride(t *testing.T) {
	tests := []struct {
		name    string
		doc     string
		environ []string
		get     func(*Config) any
		want    any
	}{
		{
			name:    "top-level section",
			environ: []string{"GATEWAY_SERVER__LISTEN=:9090"},
			get:     func(c *Config) any { return c.Server.Listen },
			want:    ":9090",
		},
		{
			name:    "overrides the file",
			doc:     "server: {listen: ':1'}",
			environ: []string{"GATEWAY_SERVER__LISTEN=:9090"},
			get:     func(c *Config) any { return c.Server.Listen },
			want:    ":9090",
		},
		{
			name:    "last entry wins",
			environ: []string{"GATEWAY_SERVER__LISTEN=:1", "GATEWAY_SERVER__LISTEN=:2"},
			get:     func(c *Config) any { return c.Server.Listen },
			want:    ":2",
		},
		{
			name:    "map entry key",
			environ: []string{"GATEWAY_BACKENDS__M__API_KEY=sk-x"},
			get:     func(c *Config) any { return c.Backends["m"].APIKey },
			want:    "sk-x",
		},
		{
			name:    "mixed case name is lowercased",
			environ: []string{"GATEWAY_Models__Demo__Upstream_Model=other"},
			get:     func(c *Config) any { return c.Models["demo"].UpstreamModel },
			want:    "other",
		},
		{
			name:    "number",
			environ: []string{"GATEWAY_SERVER__MAX_BODY_BYTES=1024"},
			get:     func(c *Config) any { return c.Server.MaxBodyBytes },
			want:    1024,
		},
		{
			name:    "duration",
			environ: []string{"GATEWAY_CACHE__TTL=1h"},
			get:     func(c *Config) any { return c.Cache.TTL },
			want:    time.Hour,
		},
		{
			name:    "bool",
			environ: []string{"GATEWAY_BACKENDS__M__DROP_UNSUPPORTED_PARAMS=true"},
			get:     func(c *Config) any { return c.Backends["m"].DropUnsupportedParams },
			want:    true,
		},
		{
			name:    "value is taken literally",
			environ: []string{"GATEWAY_BACKENDS__M__API_KEY=a${NOPE}b"},
			get:     func(c *Config) any { return c.Backends["m"].APIKey },
			want:    "a${NOPE}b",
		},
		{
			name:    "new map entry",
			environ: []string{"GATEWAY_MODELS__OTHER__BACKEND=m"},
			get:     func(c *Config) any { return c.Models["other"] },
			want:    Model{Backend: "m", UpstreamModel: "other", PromptCache: "off"},
		},
		{
			name:    "variables without the prefix are ignored",
			environ: []string{"SERVER__LISTEN=:1", "GATEWAYX_SERVER__LISTEN=:2"},
			get:     func(c *Config) any { return c.Server.Listen },
			want:    ":8080",
		},
		{
			// The documented config path variable, and what Kubernetes sets for a
			// service named "gateway": single-level names are not overrides.
			name: "names without a level separator are not overrides",
			environ: []string{EnvConfigPath + "=/etc/agate/config.yaml", "GATEWAY_PORT=tcp://10.0.0.1:8080",
				"GATEWAY_SERVICE_HOST=10.0.0.1", "GATEWAY_=x"},
			get:  func(c *Config) any { return c.Server.Listen },
			want: ":8080",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Parse([]byte(minimal+tt.doc), tt.environ)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if diff := cmp.Diff(tt.want, tt.get(c)); diff != "" {
				t.Errorf("mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParse_Expansion(t *testing.T) {
	tests := []struct {
		name    string
		apiKey  string // the YAML scalar for backends.m.api_key
		environ []string
		want    string
	}{
		{name: "set", apiKey: "${K}", environ: []string{"K=v"}, want: "v"},
		{name: "embedded", apiKey: "Bearer ${K}!", environ: []string{"K=v"}, want: "Bearer v!"},
		{name: "two references", apiKey: "${A}-${B}", environ: []string{"A=1", "B=2"}, want: "1-2"},
		{name: "set but empty", apiKey: "${K}", environ: []string{"K="}, want: ""},
		{name: "default when unset", apiKey: "${K:-d}", want: "d"},
		{name: "default when empty", apiKey: "${K:-d}", environ: []string{"K="}, want: "d"},
		{name: "empty default", apiKey: "${K:-}", want: ""},
		{name: "value wins over default", apiKey: "${K:-d}", environ: []string{"K=v"}, want: "v"},
		{name: "escaped", apiKey: "$${K}", want: "${K}"},
		{name: "lone dollar kept", apiKey: "p$ss$$w", want: "p$ss$$w"},
		{name: "replacement not expanded again", apiKey: "${K}", environ: []string{"K=${L}"}, want: "${L}"},
		{name: "YAML syntax in the value stays a string", apiKey: "${K}", environ: []string{"K={a: [1, 2]}\nb: c"}, want: "{a: [1, 2]}\nb: c"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc := strings.Replace(minimal, "m: {type: mock}", "m: {type: mock, api_key: '"+tt.apiKey+"'}", 1)
			c, err := Parse([]byte(doc), tt.environ)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if diff := cmp.Diff(tt.want, c.Backends["m"].APIKey); diff != "" {
				t.Errorf("api_key mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParse_ExpansionInListsAndMaps(t *testing.T) {
	doc := minimal + `
tools:
  t:
    type: mcp
    command: [run, "--token=${TOK}"]
    env: {TOKEN: "${TOK}"}
`
	c, err := Parse([]byte(doc), []string{"TOK=x"})
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	got := []any{c.Tools["t"].Command, c.Tools["t"].Env}
	want := []any{[]string{"run", "--token=x"}, map[string]string{"TOKEN": "x"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("mismatch (-want +got):\n%s", diff)
	}
}

// TestParse_Errors pins the whole error text of documents that fail before validation.
func TestParse_Errors(t *testing.T) {
	tests := []struct {
		name    string
		doc     string
		environ []string
		want    string
	}{
		{
			name: "unset variable",
			doc:  "backends:\n  m: {type: mock, api_key: '${ANTHROPIC_API_KEY}'}",
			want: "config: backends.m.api_key: environment variable ANTHROPIC_API_KEY is not set (write ${ANTHROPIC_API_KEY:-} to allow an empty value)",
		},
		{
			name: "unset variable in a list",
			doc:  "tools:\n  t: {type: mcp, command: [a, '${X}']}",
			want: "config: tools.t.command[1]: environment variable X is not set (write ${X:-} to allow an empty value)",
		},
		{
			name: "unterminated reference",
			doc:  "backends:\n  m: {type: mock, api_key: 'ab${X'}",
			want: `config: backends.m.api_key: unterminated "${" at byte 2 (write "$${" for a literal "${")`,
		},
		{
			name: "invalid variable name",
			doc:  "backends:\n  m: {type: mock, api_key: '${1X}'}",
			want: "config: backends.m.api_key: invalid variable reference at byte 0 (want ${NAME} or ${NAME:-default})",
		},
		{
			name: "unknown top-level key",
			doc:  "modles: {}",
			want: `config: unknown field "modles"`,
		},
		{
			name: "unknown nested key",
			doc:  "backends:\n  m: {type: mock}\nmodels:\n  demo:\n    backend: m\n    upstrem_model: x\n",
			want: `config: unknown field "models.demo.upstrem_model"`,
		},
		{
			name: "unknown keys at several levels, sorted",
			doc:  "server: {listn: x, port: 1}\nbackends:\n  m: {type: mock, timeouts: {conect: 1s}}\nzzz: 1",
			want: `config: unknown field "backends.m.timeouts.conect"
config: unknown field "server.listn"
config: unknown field "server.port"
config: unknown field "zzz"`,
		},
		{
			name: "names are case-sensitive",
			doc:  "server: {Listen: ':1'}",
			want: `config: unknown field "server.Listen"`,
		},
		{
			name:    "unknown key from the environment",
			environ: []string{"GATEWAY_SERVER__LISTN=:1"},
			want:    `config: unknown field "server.listn" (set by GATEWAY_SERVER__LISTN)`,
		},
		{
			name:    "empty level in an override",
			environ: []string{"GATEWAY_SERVER____LISTEN=:1"},
			want:    `config: environment variable GATEWAY_SERVER____LISTEN: empty level in name (levels are separated by "__")`,
		},
		{
			name: "duration without unit",
			doc:  "cache: {ttl: 600}",
			want: `config: cache.ttl: duration 600 has no unit (write a string such as "30s")`,
		},
		{
			name: "bad duration",
			doc:  "cache: {ttl: soon}",
			want: `config: cache.ttl: invalid duration "soon" (want a number with a unit, such as "30s")`,
		},
		{
			name: "wrong type",
			doc:  "server: {max_body_bytes: lots}",
			want: `config: server.max_body_bytes: "lots" is not an integer`,
		},
		{
			name:    "wrong type from the environment",
			environ: []string{"GATEWAY_SERVER__MAX_BODY_BYTES=lots"},
			want:    `config: server.max_body_bytes: "lots" is not an integer (set by GATEWAY_SERVER__MAX_BODY_BYTES)`,
		},
		{
			name: "decode problems come without the validation noise they would cause",
			doc:  "backends:\n  m: {type: mock, max_conns: x}\nmodels:\n  demo: {backend: m}",
			want: `config: backends.m.max_conns: "x" is not an integer`,
		},
		{
			name: "a fraction where an integer is meant",
			doc:  "server: {max_body_bytes: 1.5}",
			want: `config: server.max_body_bytes: must be an integer, not a number "1.5"`,
		},
		{
			name: "a boolean where a list is meant",
			doc:  "backends:\n  m: {type: mock}\nmodels:\n  demo: {backend: m}\nkeys:\n  k: {key: sk-1, models: [demo], tools: true}",
			want: `config: keys.k.tools: must be a list, not a boolean`,
		},
		{
			name: "a string where a list is meant",
			doc:  "backends:\n  m: {type: mock}\nmodels:\n  demo: {backend: m}\nkeys:\n  k: {key: sk-1, models: \"*\"}",
			want: `config: keys.k.models: must be a list, not a string (write ["*"])`,
		},
		{
			name: "a list where text is meant",
			doc:  "backends:\n  m: {type: [mock]}",
			want: `config: backends.m.type: must be a string, not a list`,
		},
		{
			name: "a misspelled backend type is the one problem of its backend",
			doc:  "backends:\n  m: {type: anthropc, api_key: x}\nmodels:\n  demo: {backend: m}",
			want: `config: backends.m.type: "anthropc" is not one of anthropic, gemini, responses, openai, azure, vertex, bedrock, mock`,
		},
		{
			name: "a tab in the indentation",
			doc:  "backends:\n\tm: {type: mock}",
			want: "config: parsing yaml: yaml: line 2: found character that cannot start any token (line 2 has a tab: YAML indents with spaces only)",
		},
		{
			name: "YAML syntax",
			doc:  "server: [",
			want: "config: parsing yaml: yaml: line 1: did not find expected node content",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Parse([]byte(tt.doc), tt.environ)
			if err == nil {
				t.Fatalf("Parse succeeded with %+v, want error", c)
			}
			if diff := cmp.Diff(tt.want, err.Error()); diff != "" {
				t.Errorf("error mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParse_RetriesMax(t *testing.T) {
	tests := []struct {
		name    string
		retries string
		environ []string
		want    int
	}{
		{name: "unset means 2", want: 2},
		{name: "null means 2", retries: "retries: {max: null}", want: 2},
		{name: "explicit 0 disables", retries: "retries: {max: 0}", want: 0},
		{name: "-1 disables", retries: "retries: {max: -1}", want: 0},
		{name: "explicit count", retries: "retries: {max: 5}", want: 5},
		{name: "0 from the environment disables", environ: []string{"GATEWAY_BACKENDS__M__RETRIES__MAX=0"}, want: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc := "backends:\n  m: {type: mock, " + tt.retries + "}\n"
			c, err := Parse([]byte(doc), tt.environ)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if got := c.Backends["m"].Retries.Max; got != tt.want {
				t.Errorf("retries.max = %d, want %d", got, tt.want)
			}
		})
	}
}

func TestParse_DottedNames(t *testing.T) {
	doc := "backends:\n  m: {type: mock}\nmodels:\n  gpt-4.1: {backend: m}\n  claude-3.5: {backend: m, fallbacks: [gpt-4.1]}\n"
	c, err := Parse([]byte(doc), []string{"GATEWAY_MODELS__GPT-4.1__MAX_TOKENS=7"})
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	want := map[string]Model{
		"gpt-4.1":    {Backend: "m", UpstreamModel: "gpt-4.1", MaxTokens: 7, PromptCache: "off"},
		"claude-3.5": {Backend: "m", UpstreamModel: "claude-3.5", PromptCache: "off", Fallbacks: []string{"gpt-4.1"}},
	}
	if diff := cmp.Diff(want, c.Models); diff != "" {
		t.Errorf("models mismatch (-want +got):\n%s", diff)
	}
}

func TestParse_Empty(t *testing.T) {
	c, err := Parse(nil, nil)
	if err != nil {
		t.Fatalf("Parse(empty): %v", err)
	}
	want := &Config{
		Server: Server{Listen: ":8080", MaxBodyBytes: 20971520, MaxInflatedBytes: 20971520, ShutdownTimeout: 30 * time.Second, ReadTimeout: 60 * time.Second, IdleTimeout: 120 * time.Second,
			WriteTimeout: 60 * time.Second, MaxConnections: 10000},
		Log:   Log{Level: "info", Format: "json"},
		Cache: Cache{MaxEntries: 10000, TTL: 10 * time.Minute, Scope: "key"},
		State: defaultState(),
		// responses.* defaults: an in-memory store of 10000 responses, 64 MiB, for 24h.
		Responses: Responses{Store: "memory", TTL: 24 * time.Hour, MaxEntries: 10000, MaxBytes: 64 << 20, MaxStoredBytes: 20 << 20},
	}
	if diff := cmp.Diff(want, c); diff != "" {
		t.Errorf("Parse(empty) mismatch (-want +got):\n%s", diff)
	}
}

func TestLoad_MissingFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "nope.yaml")
	_, err := Load(path, nil)
	if err == nil || !strings.HasPrefix(err.Error(), "config: open "+path) {
		t.Errorf("Load(missing) error = %v, want one starting with %q", err, "config: open "+path)
	}
}

// TestParse_AllowedBetas: an anthropic backend without allowed_betas forwards the default
// list; an explicit empty list forwards none; other backends have none.
func TestParse_AllowedBetas(t *testing.T) {
	tests := []struct {
		name    string
		backend string
		want    []string
	}{
		{name: "unset", backend: `{type: anthropic, base_url: "https://a.example", api_key: k}`, want: DefaultAnthropicBetas()},
		{name: "null", backend: `{type: anthropic, base_url: "https://a.example", api_key: k, allowed_betas: null}`, want: DefaultAnthropicBetas()},
		{name: "empty", backend: `{type: anthropic, base_url: "https://a.example", api_key: k, allowed_betas: []}`, want: []string{}},
		{name: "listed", backend: `{type: anthropic, base_url: "https://a.example", api_key: k, allowed_betas: [context-1m-2025-08-07]}`,
			want: []string{"context-1m-2025-08-07"}},
		{name: "not anthropic", backend: `{type: mock}`, want: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Parse([]byte("backends:\n  b: "+tt.backend+"\n"), nil)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, c.Backends["b"].AllowedBetas); diff != "" {
				t.Errorf("allowed_betas (-want +got):\n%s", diff)
			}
		})
	}
	if !slices.Contains(DefaultAnthropicBetas(), "interleaved-thinking-2025-05-14") || slices.Contains(DefaultAnthropicBetas(), "context-1m-2025-08-07") {
		t.Errorf("DefaultAnthropicBetas() = %v", DefaultAnthropicBetas())
	}
}
