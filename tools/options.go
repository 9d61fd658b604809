package tools

import "time"

// The defaults a Registry applies, owned here. The gateway's config documents the same
// numbers for its tools and cache sections, and the gateway's tests hold the two equal.
const (
	// DefaultTimeout bounds one call when neither the tool's override nor its source sets
	// a timeout.
	DefaultTimeout = 30 * time.Second
	// DefaultMaxResultBytes bounds a result's content when neither the tool's override nor
	// its source sets a bound.
	DefaultMaxResultBytes = 64 << 10
	// DefaultCacheMaxEntries bounds the built-in result cache when CacheOptions.MaxEntries
	// (or NewLRUCache's maxEntries) is zero or less.
	DefaultCacheMaxEntries = 10000
	// DefaultCacheTTL is how long a cached result stays valid when CacheOptions.TTL (or
	// NewLRUCache's ttl) is zero or less.
	DefaultCacheTTL = 10 * time.Minute
)

// Source types, the values of SourceOptions.Type.
const (
	SourceMCP     = "mcp"     // an MCP server over stdio or streamable HTTP
	SourceHTTP    = "http"    // one webhook tool
	SourceBuiltin = "builtin" // one built-in tool
)

// SourceOptions configure one tool source of a [Registry] (one entry of [New]'s or
// [Registry.Update]'s sources). The Registry reads them when it starts the source, and
// does not modify them; Update restarts a source whose options are not reflect.DeepEqual to
// the running ones.
type SourceOptions struct {
	// Type is SourceMCP, SourceHTTP or SourceBuiltin; anything else fails New.
	Type string
	// Command starts a stdio MCP server (type mcp): program and arguments. An mcp source
	// has exactly one of Command and URL.
	Command []string
	// Env sets environment variables of a stdio MCP server. The server starts with PATH,
	// HOME, TMPDIR, TZ, LANG, LANGUAGE and the LC_* variables of the gateway's
	// environment, then the variables EnvPassthrough names, then Env (which wins).
	Env map[string]string
	// EnvPassthrough names variables of the gateway's environment a stdio MCP server gets
	// as they are; a name that is not set is left out.
	EnvPassthrough []string
	// URL is a streamable-HTTP MCP endpoint (type mcp) or the webhook (type http,
	// required): an absolute http or https URL. It is never logged as it is.
	URL string
	// Headers are sent with every HTTP request to the source.
	Headers map[string]string
	// Description is the tool description shown to the model (type http).
	Description string
	// Parameters is the JSON Schema of the tool's arguments (type http); nil means an
	// object schema without properties.
	Parameters map[string]any
	// Name is the builtin tool to expose (type builtin); empty means the source's name.
	Name string
	// ReadOnly marks the tool as free of side effects (type http; MCP tools use their
	// readOnlyHint annotation): read-only calls of one turn may run concurrently and are
	// cached by default.
	ReadOnly bool
	// Timeout bounds one call of the source's tools. Zero or less means DefaultTimeout.
	Timeout time.Duration
	// Cache forces result caching on or off. Nil means on for read-only tools (except
	// builtins whose results must not be reused, time_now).
	Cache *bool
	// MaxResultBytes truncates a longer result (with a marker), in bytes. Zero or less
	// means DefaultMaxResultBytes.
	MaxResultBytes int
	// MaskResults passes results through internal/redact's credential masking before the
	// model sees them. Nil means true.
	MaskResults *bool
	// Required makes a source that cannot be started fatal: New (or Update) fails. By
	// default (false) an MCP server that cannot be reached at start is logged, reported by
	// Ready and retried in the background with backoff, without tools until it is up, so
	// that one broken tool server does not stop the gateway. Other sources have no server
	// to wait for.
	Required bool
	// Overrides adjust single tools of the source, by the tool's own name; a name that
	// matches no tool is logged.
	Overrides map[string]Override
}

// Override adjusts one tool of a source; zero fields keep the source's value.
type Override struct {
	// Timeout bounds one call of this tool.
	Timeout time.Duration
	// Cache forces result caching of this tool on or off.
	Cache *bool
	// MaxResultBytes truncates a longer result, in bytes.
	MaxResultBytes int
}

// CacheOptions size the result cache a [Registry] builds (an [LRUCache], unless
// [WithCache] gives another) and say which callers share its entries.
type CacheOptions struct {
	// MaxEntries bounds the number of cached results. Zero or less means
	// DefaultCacheMaxEntries.
	MaxEntries int
	// TTL is how long a cached result stays valid. Zero or less means DefaultCacheTTL.
	TTL time.Duration
	// Shared makes every caller named by [WithCaller] share cached results and in-flight
	// executions. False (the default, the safe side) keeps each caller's apart, so one
	// caller cannot learn another's recent arguments from timing or results.
	Shared bool
}
