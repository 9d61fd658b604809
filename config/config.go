package config

import "time"

// Config is the whole gateway configuration: plain data, built and validated once by Load
// (or Parse) and not modified afterwards, so it may be shared between goroutines.
// Durations are YAML strings with a unit, such as "30s" or "10m"; a bare number is rejected.
// After Load every default named in the field comments below has been filled in.
type Config struct {
	// Server configures the listening HTTP server.
	Server Server `koanf:"server"`
	// Log configures structured logging.
	Log Log `koanf:"log"`
	// Backends maps a backend name to the upstream it talks to. Names must not contain "/":
	// "<backend>/<upstream model>" also routes a request directly.
	Backends map[string]Backend `koanf:"backends"`
	// Models maps a client-facing model name to a route. Empty means only
	// "<backend>/<upstream model>" names route.
	Models map[string]Model `koanf:"models"`
	// Keys maps a key name (the label used in logs and metrics) to a client credential.
	// No keys means open mode: every request is accepted (a warning is logged at start).
	Keys map[string]Key `koanf:"keys"`
	// Tools maps a tool source name to a server-side tool source. Names must not contain "/":
	// "<source>/<tool>" names one tool of an MCP source.
	Tools map[string]ToolSource `koanf:"tools"`
	// Cache configures the tool result cache.
	Cache Cache `koanf:"cache"`
	// Metrics configures where /metrics is served and who may read it.
	Metrics Metrics `koanf:"metrics"`

	// State says where rate-limit counters, budgets, concurrency slots and the second
	// level of the tool result cache live: in this process, or in Redis shared by replicas.
	State State `koanf:"state"`
	// Responses configures the stored responses of POST /v1/responses.
	Responses Responses `koanf:"responses"`
	// ResponsesWebsocket configures the WebSocket mode of /v1/responses (websocket.go).
	ResponsesWebsocket ResponsesWebsocket `koanf:"responses_websocket"`
	// Balancing holds the settings of models' deployments that every model shares.
	Balancing Balancing `koanf:"balancing"`

	// Telemetry configures OpenTelemetry traces. Off by default.
	Telemetry Telemetry `koanf:"telemetry"`
	// Ledger configures the usage ledger (config/ledger.go). Off by default.
	Ledger Ledger `koanf:"ledger"`
	// Admin configures the admin API (config/admin.go). Off by default.
	Admin Admin `koanf:"admin"`
	// Teams maps a team name to the limits and budget its keys share (config/teams.go).
	Teams map[string]Team `koanf:"teams"`
	// MCP configures the gateway's own MCP endpoint (config/mcp.go). Off by default.
	MCP MCP `koanf:"mcp"`
}

// Responses configures where POST /v1/responses keeps the responses a client asked to store
// (store: true, OpenAI's default), for previous_response_id and GET/DELETE
// /v1/responses/{id}. Stored responses belong to the key that created them.
type Responses struct {
	// Store is "memory" (the default; in process, lost at restart and not shared between
	// replicas), "redis" (in Redis, shared by every replica: the Redis of URL, or of state
	// when URL is empty; records expire after TTL) or "off" (nothing is stored:
	// previous_response_id and GET are then refused, store: true is ignored). MaxEntries
	// and MaxBytes bound both.
	Store string `koanf:"store"`
	// URL is the Redis of a redis store, redis://[user:password@]host:port/db or rediss://
	// for TLS; empty means the Redis of state (type redis). Give the store its own Redis
	// instance when it may be evicted (maxmemory-policy allkeys-lru): an instance's
	// eviction reaches every database, and the limiter's counters must never be evicted.
	// Never logged or included in errors.
	URL string `koanf:"url"`
	// TTL is how long a stored response is kept. Default 24h (also when 0).
	TTL time.Duration `koanf:"ttl"`
	// MaxEntries bounds the number of stored responses; the least recently used go first.
	// Default 10000 (also when 0).
	MaxEntries int `koanf:"max_entries"`
	// MaxBytes bounds the total size of the stored responses in bytes (their JSON). Default
	// 64 MiB (67108864; also when 0).
	MaxBytes int64 `koanf:"max_bytes"`
	// MaxStoredBytes bounds one stored response (the Response object, its output items
	// and the input items of its whole previous_response_id chain) and the input a
	// continuation rebuilds from it. A response over it is served but not kept for
	// continuation; continuing it, or a continuation whose rebuilt input would be over
	// it, is a 400 naming previous_response_id. Default server.max_body_bytes (also when
	// 0).
	MaxStoredBytes int64 `koanf:"max_stored_bytes"`
}

// Telemetry configures OpenTelemetry tracing. Where spans go, the service name and the
// sampler are not configured here: the OpenTelemetry SDK reads the standard variables
// (OTEL_EXPORTER_OTLP_*, OTEL_SERVICE_NAME, OTEL_TRACES_SAMPLER, OTEL_TRACES_SAMPLER_ARG)
// from the process environment. It takes effect at start; a reload does not change it.
type Telemetry struct {
	// Traces turns tracing on: a server span per request, a client span per upstream
	// attempt and a span per server tool call, exported over OTLP. Default false: no
	// tracer is built and nothing is recorded or propagated.
	Traces bool `koanf:"traces"`
	// CaptureContent records prompts, completions, tool arguments and tool results in
	// span attributes (gen_ai.input.messages, gen_ai.output.messages,
	// gen_ai.tool.call.arguments, gen_ai.tool.call.result). Default false: spans carry
	// no content, only names, ids, counts and parameters.
	CaptureContent bool `koanf:"capture_content"`
}

// Metrics configures the Prometheus endpoint.
type Metrics struct {
	// Listen is a separate host:port serving /metrics only. Empty (the default) serves
	// /metrics on server.listen; when set, the main listener no longer serves it.
	Listen string `koanf:"listen"`
	// Bearer, when set, is the token a scraper must send as "Authorization: Bearer
	// <token>" (usually "${METRICS_TOKEN}"); it is compared in constant time and never
	// logged. Empty (the default) means /metrics is open to whoever reaches its address.
	Bearer string `koanf:"bearer"`
}

// Server configures the HTTP listener.
type Server struct {
	// Listen is the TCP address to listen on, host:port (host may be empty). Default ":8080".
	Listen string `koanf:"listen"`
	// MaxBodyBytes is the largest accepted request body in bytes; larger bodies get 413.
	// Default 20 MiB (20971520).
	MaxBodyBytes int `koanf:"max_body_bytes"`
	// MaxInflatedBytes bounds, in all, what the compressed state one request carries (the
	// gateway's sealed reasoning blobs in encrypted_content, the state in its tool call
	// ids, a stored response's included) may inflate to; a request beyond is a 400 naming
	// the field. Default: MaxBodyBytes.
	MaxInflatedBytes int `koanf:"max_inflated_bytes"`
	// ShutdownTimeout is how long a graceful shutdown waits for in-flight requests and
	// streams to finish before closing them. Default 30s.
	ShutdownTimeout time.Duration `koanf:"shutdown_timeout"`
	// ReadTimeout bounds reading one client request (headers and body). Default 60s.
	ReadTimeout time.Duration `koanf:"read_timeout"`
	// IdleTimeout bounds an idle keep-alive client connection. Default 120s.
	IdleTimeout time.Duration `koanf:"idle_timeout"`
	// WriteTimeout bounds how long one write to a client may wait for the client to
	// accept it; a stream whose client stops reading is then ended and its upstream
	// released. It bounds each write, not the whole response; a write may wait up to
	// 1.25 times it. Default 60s (also when 0).
	WriteTimeout time.Duration `koanf:"write_timeout"`
	// MaxConnections caps the client connections open at once; a connection beyond it is
	// answered 503 and closed. Default 10000 (also when 0).
	MaxConnections int `koanf:"max_connections"`
	// MaxConnectionsPerIP caps the client connections open at once from one IP address;
	// a connection beyond it is answered 429 and closed. Default 0: no per-address cap,
	// since behind a load balancer every client shares its address.
	MaxConnectionsPerIP int `koanf:"max_connections_per_ip"`
}

// Log configures logging.
type Log struct {
	// Level is one of debug, info, warn, error. Default info.
	Level string `koanf:"level"`
	// Format is json or text. Default json.
	Format string `koanf:"format"`
	// UnsafeTransportErrors logs the HTTP server's request-parsing errors verbatim. They
	// can hold a client's request headers (credentials) and body, so this is for
	// debugging only. Default false: such errors are logged without any request bytes.
	UnsafeTransportErrors bool `koanf:"unsafe_transport_errors"`
	// UpstreamErrorMessages logs the message of an upstream's 4xx error, which may quote the
	// request (the prompt), masked and cut to 512 bytes, for debugging. Default false: the
	// log shows the upstream's status, error type, code and param only. The client gets
	// the (masked) message either way.
	UpstreamErrorMessages bool `koanf:"upstream_error_messages"`
}

// Backend is one upstream provider endpoint.
type Backend struct {
	// Type is anthropic, gemini, responses, openai, azure, vertex, bedrock or mock. Required.
	Type string `koanf:"type"`
	// BaseURL is the provider root in each provider SDK's convention: anthropic and gemini
	// without a version path (Agate appends /v1/messages, /v1beta/models/...), responses and
	// openai including /v1 (Agate appends /responses or /chat/completions), azure the
	// resource's endpoint. Required except for mock, and for vertex and bedrock, whose
	// default is their location's or region's endpoint.
	BaseURL string `koanf:"base_url"`
	// APIKey is the upstream credential, usually "${ENV_VAR}". Empty means no credential is
	// sent (mock backends, local servers). Never logged or included in errors. An
	// anthropic, gemini or responses backend, or an openai backend on api.openai.com, with
	// neither an APIKey nor a credential header in Headers (Authorization, x-api-key,
	// api-key, x-goog-api-key) is unusable: the gateway warns once, leaves its models out
	// of /v1/models and answers requests for them with 404 model_not_found. On the cloud
	// backends it is Azure's api-key (azure.auth api_key) or a Bedrock API key; without
	// one they use their cloud's credentials (config/azure.go, vertex.go, bedrock.go).
	APIKey string `koanf:"api_key"`
	// Headers are extra headers sent on every upstream request (values may hold ${SECRETS}
	// and are never logged).
	Headers map[string]string `koanf:"headers"`
	// Timeouts bound the upstream exchange. Zero fields get their defaults.
	Timeouts Timeouts `koanf:"timeouts"`
	// Retries configures retrying failed upstream attempts before any byte reached the client.
	Retries Retries `koanf:"retries"`
	// DropUnsupportedParams makes request parameters this upstream cannot honour be dropped
	// (and counted) instead of rejected with 400. Default false.
	DropUnsupportedParams bool `koanf:"drop_unsupported_params"`
	// MaxConns caps pooled connections to this upstream. Default 512.
	MaxConns int `koanf:"max_conns"`
	// MaxResponseBytes bounds a non-streamed answer's body from this upstream, decoded (a
	// gzip answer is counted as it inflates): one over it is a 502 naming the bound, never
	// a truncated answer. Streamed answers are bounded per event instead. Default 64 MiB
	// (67108864; also when 0).
	MaxResponseBytes int `koanf:"max_response_bytes"`
	// Store sets store=true on Responses API requests (responses backends only). Default false:
	// Agate is stateless and carries reasoning state itself.
	Store bool `koanf:"store"`
	// AllowedBetas are the anthropic-beta names a client's /v1/messages request may switch
	// on at this backend (anthropic backends only): the others in the client's
	// anthropic-beta header are dropped and counted in
	// gateway_anthropic_betas_dropped_total. Unset means DefaultAnthropicBetas(), betas that
	// change no price; [] forwards none; ["*"] forwards every one the client sends. Betas
	// that bill more or reach beyond the request (context-1m, fast-mode, extended-cache-ttl,
	// files-api, mcp-client, code-execution, ...) must be listed to be forwarded.
	AllowedBetas []string `koanf:"allowed_betas"`
	// Azure configures an azure backend (config/azure.go).
	Azure Azure `koanf:"azure"`
	// Vertex configures a vertex backend (config/vertex.go).
	Vertex Vertex `koanf:"vertex"`
	// Bedrock configures a bedrock backend (config/bedrock.go).
	Bedrock Bedrock `koanf:"bedrock"`
}

// DefaultAnthropicBetas are the anthropic-beta names forwarded when a backend sets no
// allowed_betas: features that change neither the price of a token nor what the request
// may reach, among them every beta Claude Code sends (claude-code, interleaved-thinking,
// context-management, effort, advanced-tool-use, thinking-token-count,
// mid-conversation-tool-changes). Each call returns a new slice.
func DefaultAnthropicBetas() []string {
	return []string{
		"advanced-tool-use-2025-11-20",
		"claude-code-20250219",
		"context-management-2025-06-27",
		"effort-2025-11-24",
		"fine-grained-tool-streaming-2025-05-14",
		"interleaved-thinking-2025-05-14",
		"mid-conversation-tool-changes-2026-07-01",
		"model-context-window-exceeded-2025-08-26",
		"pdfs-2024-09-25",
		"prompt-caching-2024-07-31",
		"thinking-token-count-2026-05-13",
		"token-counting-2024-11-01",
		"token-efficient-tools-2025-02-19",
	}
}

// Timeouts bound one upstream attempt. Zero means the default; negative is invalid.
type Timeouts struct {
	// Connect bounds dialing the upstream. Default 10s.
	Connect time.Duration `koanf:"connect"`
	// Header bounds the wait for response headers after the request was sent. Default 120s.
	Header time.Duration `koanf:"header"`
	// StreamIdle bounds the silence between two reads of a streamed body (a stream is cut
	// after between 15/16 of it and all of it: the clock is read once every 1/16).
	// Default 120s.
	StreamIdle time.Duration `koanf:"stream_idle"`
	// PoolWait bounds the wait for a free connection when all max_conns are busy; the
	// request then fails with 503 and Retry-After (and may fall back). Default 5s (also
	// when 0).
	PoolWait time.Duration `koanf:"pool_wait"`
	// Request bounds one client request on this backend's models as a whole: every
	// attempt, retry backoff and fallback (a model's own timeouts.request overrides it).
	// When it passes, nothing more is tried and the client gets a 504 timeout error, or
	// an in-band error event once its stream started. It does not cut a stream that is
	// still flowing: stream_idle bounds a silent one. Default 10m: generous, because a
	// long reasoning answer legitimately takes minutes, and the point is that retries
	// and fallbacks of a dead route end, not that slow answers do.
	Request time.Duration `koanf:"request"`
}

// Retries configures upstream retries with exponential backoff and full jitter.
type Retries struct {
	// Max is the number of retries after the first attempt. In the file (or environment),
	// leaving it unset means the default 2, and "max: 0" or "max: -1" disables retries.
	// After Load, Max is final and never negative: 0 means no retries. Validate accepts
	// -1 in hand-built configs; users of Max should treat any value <= 0 as no retries.
	Max int `koanf:"max"`
	// BaseDelay is the first backoff delay. Default 250ms.
	BaseDelay time.Duration `koanf:"base_delay"`
	// MaxDelay caps one backoff delay, including a Retry-After the upstream asked for;
	// a longer Retry-After is not retried. Default 10s.
	MaxDelay time.Duration `koanf:"max_delay"`
	// OnTimeout is what follows an attempt on which the upstream said nothing within
	// timeouts.header (or stream_idle before the first event): "fallback" (default) goes
	// to the model's next fallback at once, as a silent upstream is unlikely to answer
	// the same request a moment later; "retry" retries it like a reset or a 5xx, within
	// max. Resets, 429s and 5xx are retried either way. Load turns "" into "fallback";
	// Validate accepts "" as "fallback".
	OnTimeout string `koanf:"on_timeout"`
	// CircuitBreaker stops calling a deployment of this backend that keeps failing, for
	// a cooldown (see CircuitBreaker). On by default: 5 failures, 30s.
	CircuitBreaker CircuitBreaker `koanf:"circuit_breaker"`
}

// The values of Retries.OnTimeout.
const (
	OnTimeoutFallback = "fallback"
	OnTimeoutRetry    = "retry"
)

// Model routes a client-facing model name.
type Model struct {
	// Backend names an entry of Config.Backends. Required.
	Backend string `koanf:"backend"`
	// UpstreamModel is the model name sent upstream. Default: the client-facing name.
	UpstreamModel string `koanf:"upstream_model"`
	// MaxTokens is the output token limit used when the client sets none and the upstream
	// requires one (Anthropic). Zero means the backend's default (4096 for Anthropic).
	MaxTokens int `koanf:"max_tokens"`
	// PromptCache is "off" (default) or "auto": place prompt-cache breakpoints on the
	// system prompt, tools and the last turns (Anthropic). Load turns "" into "off";
	// Validate accepts "" as "off".
	PromptCache string `koanf:"prompt_cache"`
	// Script, on a mock backend only, is the model's canned turns: turn i of a
	// conversation (i = the assistant messages it holds so far) is Script[i]; past its end
	// the mock answers as without one. It makes an offline demo or a test of a tool loop
	// say what it should.
	Script []ScriptTurn `koanf:"script"`
	// Fallbacks are client-facing model names tried in order when this model's upstream
	// fails retryably after its retries. Each must name another entry of Config.Models;
	// a fallback's own fallbacks are not followed. A fallback the requesting key may not
	// use (Key.Models) is skipped and counted in gateway_fallbacks_skipped_total.
	Fallbacks []string `koanf:"fallbacks"`
	// ContextFallbacks are client-facing model names (larger-context models) tried in
	// order only when this model's upstream says the request is over its context window
	// (OpenAI's context_length_exceeded, Anthropic's "prompt is too long", Gemini's
	// "exceeds the maximum number of tokens"); that error is never retried on the same
	// model. Each must name another entry of Config.Models; their own fallbacks are not
	// followed; the key's models allowlist and the fallback's limits apply as to
	// Fallbacks.
	ContextFallbacks []string `koanf:"context_fallbacks"`
	// CircuitBreaker overrides the backend's retries.circuit_breaker for this model: a
	// zero field keeps the backend's value, failures -1 turns it off.
	CircuitBreaker *CircuitBreaker `koanf:"circuit_breaker"`
	// Limits bound the requests to this model from all keys together. Zero fields mean
	// no limit.
	Limits Limits `koanf:"limits"`
	// Price is what this model's tokens cost, for usd budgets. Nil means no price: keys
	// with a usd budget must not be able to reach the model.
	Price *Price `koanf:"price"`
	// Timeouts are this model's own bounds.
	Timeouts ModelTimeouts `koanf:"timeouts"`
	// Embeddings are the model's settings for POST /v1/embeddings; nil means none.
	Embeddings *ModelEmbeddings `koanf:"embeddings"`
	// Continuation is what a streamed answer of this model that fails after part of it
	// reached the client becomes: prefill, restart or off (ContinuationPrefill and the
	// others). Default by backend type (DefaultContinuation): prefill for anthropic and
	// gemini, restart for openai, responses and azure, off for mock; on vertex and
	// bedrock by the dialect that serves the model (ContinuationDialect): prefill for
	// Claude and Gemini, restart for Bedrock's Converse. prefill is refused on responses
	// and azure backends. It applies to translated streams (the client's API is not the
	// backend's; on openai backends, prefill with vLLM's continue_final_message too), to Messages passthrough streams (Claude on anthropic, vertex and
	// bedrock), to chat completions passthrough streams (prefill with vLLM's
	// continue_final_message), and, as restart whatever else it says but off, to
	// Responses passthrough streams.
	Continuation string `koanf:"continuation"`
	// Deployments, when set, are the upstreams that serve this model, in place of
	// Backend and UpstreamModel (which, absent, Load sets to the first deployment's): each
	// attempt of a request goes to one of them, chosen by Balance and Affinity (see
	// Deployment and docs/deployments.md). Empty: Backend alone, as one deployment.
	Deployments []Deployment `koanf:"deployments"`
	// Balance is how a deployment is chosen: weighted (default, also "": smooth weighted round
	// robin by weight), least_busy (fewest in flight of two drawn at random), latency
	// (lowest EWMA of time to first token) or cost (cheapest price).
	Balance string `koanf:"balance"`
	// Affinity keeps a conversation on the deployment that served it while it is usable,
	// so the provider's prompt cache stays warm: off (default), prefix (a hash of the
	// tools, the system prompt and the messages up to the first user message), user (the
	// request's user field) or header:<name> (a session id the client sends); "" is off. The map is
	// per replica with state type memory, shared in Redis with state type redis.
	Affinity string `koanf:"affinity"`
	// Cache turns caches on for this model's requests (config/responsecache.go); nil: none.
	Cache *CacheSettings `koanf:"cache"`
}

// ModelTimeouts bound a model's requests. Zero means the backend's value.
type ModelTimeouts struct {
	// Request bounds one client request routed to this model (its retries and fallbacks
	// included): see Timeouts.Request. Zero: the backend's timeouts.request.
	Request time.Duration `koanf:"request"`
	// FirstToken, when set, bounds the wait for the first event of a streamed answer
	// after its headers came: a stream that shows the client nothing within it counts
	// as a silent upstream (retries.on_timeout: fails over, or is retried). Zero
	// (default): no bound but stream_idle, because a reasoning model may think for
	// minutes before its first token. It applies while nothing has reached the client,
	// on translated and passed-through streams alike.
	FirstToken time.Duration `koanf:"first_token"`
}

// Limits bound a key's or a model's traffic. Zero (or absent) fields mean no limit;
// negative is invalid. Minute windows start with the first request counted in them and
// last one minute.
type Limits struct {
	// RequestsPerMinute is how many requests are admitted per minute window.
	RequestsPerMinute int `koanf:"requests_per_minute"`
	// TokensPerMinute is how many tokens (prompt plus completion, every tool loop turn
	// counted) are charged per minute window; a request is admitted while the window's
	// charged tokens are below it, and charged with its real usage when it ends.
	TokensPerMinute int `koanf:"tokens_per_minute"`
	// Concurrent is how many requests (streams until they end or the client leaves) may
	// be in flight at once.
	Concurrent int `koanf:"concurrent"`
}

// Budget bounds what a key may spend in a fixed window: a request is admitted while both
// amounts are below their caps, and charged with its real usage when it ends. Zero fields
// mean no cap; negative is invalid.
type Budget struct {
	// Tokens caps the tokens (prompt plus completion) charged in one period.
	Tokens int `koanf:"tokens"`
	// USD caps the cost in US dollars charged in one period, priced by each serving model's
	// Price. Every configured model the key's models globs match (and their fallbacks) must
	// have a price; "<backend>/<model>" names have none and are refused for such a key.
	USD float64 `koanf:"usd"`
	// Period is the window length: it starts with the first charge and lasts Period, then
	// the next one starts. Default 720h (30 days).
	Period time.Duration `koanf:"period"`
}

// Price is a model's cost in US dollars per million tokens. Zero fields cost nothing;
// negative is invalid.
type Price struct {
	// Input prices prompt tokens that are neither cache reads nor cache writes.
	Input float64 `koanf:"input"`
	// Output prices completion tokens (reasoning included).
	Output float64 `koanf:"output"`
	// CachedInput prices prompt tokens read from the provider's prompt cache.
	CachedInput float64 `koanf:"cached_input"`
	// CacheWrite prices prompt tokens written to the provider's prompt cache.
	CacheWrite float64 `koanf:"cache_write"`
}

// Key is one client credential and its policy.
type Key struct {
	// Key is the bearer token in plain text, usually "${ENV_VAR}". Exactly one of Key and
	// KeySHA256 is required (an empty value counts as unset). Never logged or included in
	// errors; two keys with the same token are an error.
	Key string `koanf:"key"`
	// KeySHA256 is the lowercase hex SHA-256 of the bearer token (64 characters), for
	// configs that must not hold the token itself.
	KeySHA256 string `koanf:"key_sha256"`
	// Models are the client-facing model names (or "<backend>/<model>" names) this key may
	// use, as path.Match globs. Empty means none; "*" means all.
	Models []string `koanf:"models"`
	// Tools names server-side tools this key gets: whole sources ("weather") or single tools
	// ("everything/echo", MCP sources only). Empty means no server-side tool loop.
	Tools []string `koanf:"tools"`
	// MaxToolIterations bounds model turns that call server tools. Default 8 (also when 0).
	MaxToolIterations int `koanf:"max_tool_iterations"`
	// MaxToolCallsPerTurn bounds the server tool calls run for one model turn; each call
	// beyond it is not run and gives the model an error result. Default 32 (also when 0).
	MaxToolCallsPerTurn int `koanf:"max_tool_calls_per_turn"`
	// MaxConcurrentToolCalls bounds how many read-only tool calls of one turn run at the
	// same time (calls of a turn with a mutating tool always run one at a time). Default 8
	// (also when 0); 1 runs every call in order.
	MaxConcurrentToolCalls int `koanf:"max_concurrent_tool_calls"`
	// Limits bound this key's requests, tokens and concurrent requests. Zero fields mean
	// no limit.
	Limits Limits `koanf:"limits"`
	// Budget caps this key's tokens and spend per period. Zero fields mean no cap.
	Budget Budget `koanf:"budget"`
	// Team is the team the key's usage is accounted to in the ledger (its usage report
	// groups by it); a configured team's limits, budget and models apply to the key on
	// top of its own (teams). Empty means none.
	Team string `koanf:"team"`
	// Cache turns caches on for this key's requests (config/responsecache.go); nil: none.
	Cache *CacheSettings `koanf:"cache"`
}

// ToolSource is a source of server-side tools.
type ToolSource struct {
	// Type is mcp, http or builtin. Required.
	Type string `koanf:"type"`
	// Command starts a stdio MCP server (type mcp): program and arguments. An mcp source has
	// exactly one of Command and URL.
	Command []string `koanf:"command"`
	// Env sets environment variables of a stdio MCP server (values may hold ${SECRETS}).
	// A stdio server does not inherit the gateway's environment, which holds upstream and
	// client credentials: it starts with PATH, HOME, TMPDIR, TZ, LANG, LANGUAGE and the
	// LC_* variables of the gateway's environment, then the variables EnvPassthrough
	// names, then Env (which wins over both).
	Env map[string]string `koanf:"env"`
	// EnvPassthrough names variables of the gateway's own environment that a stdio MCP
	// server gets as they are (npm_config_registry, HTTPS_PROXY, ...). A name that is not
	// set in the gateway's environment is left out.
	EnvPassthrough []string `koanf:"env_passthrough"`
	// URL is a streamable-HTTP MCP endpoint (type mcp) or a webhook (type http, required):
	// an absolute http or https URL.
	URL string `koanf:"url"`
	// Headers are sent with every HTTP request to the source (values may hold ${SECRETS}).
	Headers map[string]string `koanf:"headers"`
	// Description is the tool description shown to the model (type http).
	Description string `koanf:"description"`
	// Parameters is the JSON Schema of the tool arguments (type http). Its "type", when set,
	// must be "object". Default for http sources: {"type": "object", "properties": {}}.
	Parameters map[string]any `koanf:"parameters"`
	// Name is the builtin tool to expose (type builtin, required).
	Name string `koanf:"name"`
	// ReadOnly marks the tool as free of side effects (type http; MCP tools use their
	// readOnlyHint annotation): read-only calls of one turn run concurrently and are cached.
	ReadOnly bool `koanf:"read_only"`
	// Timeout bounds one tool call. Default 30s.
	Timeout time.Duration `koanf:"timeout"`
	// Cache forces result caching on or off. Default: on for read-only tools.
	Cache *bool `koanf:"cache"`
	// MaxResultBytes truncates a longer result (with a marker), in bytes. Default 65536.
	MaxResultBytes int `koanf:"max_result_bytes"`
	// MaskResults passes the source's results through the credential masking of upstream
	// error messages (internal/redact: sk-… keys, AIza… keys, Bearer values, runs of 32 or
	// more hex or mixed base64 characters) before the model sees them. Default true; false
	// for a source whose results hold long hex digests (git commit ids, checksums) and
	// never a secret.
	MaskResults *bool `koanf:"mask_results"`
	// Required makes an MCP server that cannot be started or reached fatal (type mcp): the
	// gateway does not start, a reload adding or changing it is refused. Default false: the
	// failure is logged (the source's name and the cause), /readyz answers 503 naming the
	// source, its tools are not offered (keys that list the source or one of its tools
	// still load), and it is retried in the background with backoff (100ms doubling to
	// 30s) until it comes up and its tools are offered.
	Required bool `koanf:"required"`
	// Overrides set Timeout, Cache and MaxResultBytes for single tools of this source,
	// by the tool's own name.
	Overrides map[string]ToolOverride `koanf:"overrides"`
}

// ToolOverride adjusts one tool of a source; zero fields keep the source's value.
type ToolOverride struct {
	// Timeout bounds one call of this tool. Zero keeps ToolSource.Timeout.
	Timeout time.Duration `koanf:"timeout"`
	// Cache forces result caching of this tool on or off. Nil keeps ToolSource.Cache.
	Cache *bool `koanf:"cache"`
	// MaxResultBytes truncates a longer result, in bytes. Zero keeps ToolSource.MaxResultBytes.
	MaxResultBytes int `koanf:"max_result_bytes"`
}

// Cache configures the tool result cache.
type Cache struct {
	// MaxEntries bounds the number of cached results. Default 10000 (also when 0); to keep a
	// tool out of the cache, set its cache: false.
	MaxEntries int `koanf:"max_entries"`
	// TTL is how long a cached result stays valid. Default 10m (also when 0).
	TTL time.Duration `koanf:"ttl"`
	// Scope is "key" or "global". With key, each API key has its own cache entries (and
	// shares no in-flight execution with other keys), so one key cannot learn another's
	// recent arguments from timing or results; with global, every key shares them. Default
	// key; Load turns "" into "key" and Validate accepts "" as "key".
	Scope string `koanf:"scope"`
}

// State configures where limits, budgets and the shared tool cache keep their state.
// Changes take effect after a restart.
type State struct {
	// Type is memory (this process only; the default, also when "") or redis (shared by
	// every replica using the same URL and KeyPrefix).
	Type string `koanf:"type"`
	// URL is the Redis URL (type redis, required): redis://[user:password@]host:port/db,
	// or rediss:// for TLS. Never logged or included in errors.
	URL string `koanf:"url"`
	// KeyPrefix starts every Redis key Agate writes. Default "agate:".
	KeyPrefix string `koanf:"key_prefix"`
	// Timeout bounds one Redis round trip; a request never waits longer for its limits.
	// Default 50ms.
	Timeout time.Duration `koanf:"timeout"`
	// OnError is what a request gets when Redis does not answer in time: allow (admitted
	// without limits; the default, also when "") or deny (503).
	OnError string `koanf:"on_error"`
	// ReserveOutputTokens is the output a request is assumed to produce when it sets no
	// output cap (max_tokens, max_completion_tokens, max_output_tokens) and its model sets
	// no max_tokens. A request that a token limit or budget applies to reserves its prompt
	// estimate plus its output cap (priced at its model's price for a usd budget) when it
	// is admitted, and is charged its real usage in place of the reservation when it ends.
	// Default 4096.
	ReserveOutputTokens int `koanf:"reserve_output_tokens"`
}
