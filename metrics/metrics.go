// Package metrics defines Agate's Prometheus collectors. They are built once by New and
// passed to whoever records; nothing here is global.
package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// Metrics holds every collector the gateway records into. Labels are bounded: model and
// backend are configured names, key is the configured key name (never the secret), code is
// the HTTP status. Safe for concurrent use.
type Metrics struct {
	Requests        *prometheus.CounterVec   // model, backend, key, code, stream, api
	RequestDuration *prometheus.HistogramVec // model, backend, stream, api
	TTFT            *prometheus.HistogramVec // model, backend
	Upstream        *prometheus.HistogramVec // backend, deployment, code
	Tokens          *prometheus.CounterVec   // model, backend, key, type
	// UsageEstimated counts upstream answers whose tokens in Tokens are estimated, in
	// part or whole: a stream that ended before the upstream's final usage, or an
	// upstream that reports none.
	UsageEstimated  *prometheus.CounterVec // model, backend, key
	Inflight        prometheus.Gauge
	ToolCalls       *prometheus.CounterVec   // tool, outcome: ToolCallsVia's via="loop" (mcp.go)
	ToolCallsVia    *prometheus.CounterVec   // tool, outcome, via (mcp.go)
	ToolDuration    *prometheus.HistogramVec // tool
	ToolCache       *prometheus.CounterVec   // result: hit, miss, eviction
	LoopIterations  prometheus.Histogram
	ConfigReloads   *prometheus.CounterVec // result: success, failure
	DroppedParams   *prometheus.CounterVec // backend, param
	UpstreamRetries *prometheus.CounterVec // backend, reason
	// FallbacksSkipped counts fallbacks not tried: reason not_allowed (the key may not use
	// them) or limited (over the fallback model's own limits).
	FallbacksSkipped *prometheus.CounterVec // model, fallback, key, reason
	// FallbackAnswers counts answers (200s) a fallback model gave: model is the requested
	// model's label, answered_by the configured name of the fallback that answered.
	FallbackAnswers *prometheus.CounterVec // model, answered_by
	// ConnectionsRefused counts client connections refused by a connection cap.
	ConnectionsRefused *prometheus.CounterVec // cap: max_connections, max_connections_per_ip
	// RateLimitRejections counts requests refused by a limit or budget; limit is the
	// limits.Limit label (requests, tokens, concurrent, budget_tokens, budget_usd,
	// model_requests, model_tokens, model_concurrent).
	RateLimitRejections *prometheus.CounterVec // key, model, limit
	BudgetRemaining     *prometheus.GaugeVec   // key, unit: tokens, usd
	// TeamBudgetRemaining is what is left of a team's budget (configured and database
	// teams with a budget only, as bounded as keys).
	TeamBudgetRemaining *prometheus.GaugeVec   // team, unit: tokens, usd
	StateErrors         *prometheus.CounterVec // op: admit, finish, renew, cache_get, cache_add, ready, circuit_publish, circuit_probe, circuit_sync
	// Ledger are the usage ledger's (metrics/ledger.go).
	Ledger Ledger
	// ResponseCache are the response cache's (metrics/responsecache.go).
	ResponseCache ResponseCache
	// LogLinesDropped counts log lines dropped because the log output fell behind.
	LogLinesDropped prometheus.Counter
	// AnthropicBetasDropped counts anthropic-beta names of clients' requests not forwarded
	// because the backend's allowed_betas do not list them. The label is the configured
	// backend, never the client's beta name.
	AnthropicBetasDropped *prometheus.CounterVec // backend
	// Circuits are the circuit breakers' state and transitions (breaker.go).
	Circuits Circuits
	// Websocket are the Responses WebSocket mode's (websocket.go).
	Websocket Websocket
	// Continuation holds the mid-stream continuation collectors (continuation.go).
	Continuation
	// DeploymentSelected counts deployments chosen for an attempt; via is balance (the
	// strategy chose) or affinity (the conversation's deployment).
	DeploymentSelected *prometheus.CounterVec // model, deployment, via
	// DeploymentAttempts counts attempts on a deployment by outcome: ok, error (5xx,
	// timeout, connection, credential), rate_limited (429: it rests until Retry-After)
	// or client_error (the request's fault).
	DeploymentAttempts *prometheus.CounterVec // model, deployment, outcome
	// DeploymentFirstEvent is an attempt's time to its first event (the whole answer when
	// not streamed), what balance latency's EWMA follows.
	DeploymentFirstEvent *prometheus.HistogramVec // model, deployment
	// DeploymentHealthy is 1 while a deployment is taken, 0 after its health refused it
	// or its last attempt failed or was rate limited.
	DeploymentHealthy *prometheus.GaugeVec // model, deployment
	// DeploymentAffinity counts requests of models with affinity: hit or miss.
	DeploymentAffinity *prometheus.CounterVec // model, result

	series seriesCaches // series.go
}

// Runtime are the Go runtime's and the process's collectors (go_* and process_*). They
// read this process, not a gateway, so one Runtime may be registered in any number of
// registries and collected from them at once (the Go collector's Collect takes its own
// lock; the process collector reads /proc each time). The zero value is none: NewWith then
// builds its own.
type Runtime struct {
	collectors []prometheus.Collector
}

// NewRuntime builds the Go and process collectors. Building the Go collector matches every
// runtime/metrics name against its rules, a few milliseconds under the race detector: a
// test binary that starts hundreds of gateways builds one Runtime and passes it to each.
func NewRuntime() Runtime {
	return Runtime{collectors: []prometheus.Collector{
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	}}
}

// Options are what NewWith takes beside the registry. The zero value is New's.
type Options struct {
	// Runtime are the Go and process collectors to register; the zero value is a new
	// NewRuntime.
	Runtime Runtime
}

// New builds the collectors and registers them, with the Go and process collectors, on
// reg. It panics if a collector is already registered on reg (a wiring bug).
func New(reg prometheus.Registerer) *Metrics { return NewWith(reg, Options{}) }

// NewWith is New with o's Go and process collectors (o.Runtime) instead of new ones; what
// it registers on reg is otherwise New's.
func NewWith(reg prometheus.Registerer, o Options) *Metrics {
	latency := []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120}
	m := &Metrics{
		Requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gateway_requests_total", Help: "Requests by outcome; api is chat (/v1/chat/completions), responses (/v1/responses), messages (/v1/messages), embeddings (/v1/embeddings) or empty (any other route).",
		}, []string{"model", "backend", "key", "code", "stream", "api"}),
		RequestDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "gateway_request_duration_seconds", Help: "Time from request to the last byte of the response.", Buckets: latency,
		}, []string{"model", "backend", "stream", "api"}),
		TTFT: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "gateway_time_to_first_token_seconds", Help: "Time from request to the first content, reasoning or tool call delta.", Buckets: latency,
		}, []string{"model", "backend"}),
		Upstream: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "gateway_upstream_duration_seconds", Help: "Upstream attempts: time to response headers, by deployment (<backend>/<upstream model>, <backend>/* for a model the client named) and status (0 for transport errors).", Buckets: latency,
		}, []string{"backend", "deployment", "code"}),
		Tokens: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gateway_tokens_total", Help: "Tokens by type, in OpenAI semantics (prompt includes cached; completion includes reasoning).",
		}, []string{"model", "backend", "key", "type"}),
		UsageEstimated: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gateway_usage_estimated_total", Help: "Upstream answers whose tokens (in gateway_tokens_total and budgets) the gateway estimated, in part or whole, because the upstream did not report them: a stream that ended before its final usage, or an upstream that reports none.",
		}, []string{"model", "backend", "key"}),
		Inflight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "gateway_inflight_requests", Help: "Chat completion requests being served.",
		}),
		ToolCallsVia: toolCallsVia(),
		ToolDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "gateway_tool_duration_seconds", Help: "Server-side tool call duration (cache hits excluded).", Buckets: latency,
		}, []string{"tool"}),
		ToolCache: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gateway_tool_cache_total", Help: "Tool result cache lookups (hit, miss) and evictions.",
		}, []string{"result"}),
		LoopIterations: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "gateway_loop_iterations", Help: "Model turns per server-side tool loop request.", Buckets: []float64{1, 2, 3, 4, 5, 6, 8, 10, 16, 32},
		}),
		ConfigReloads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gateway_config_reloads_total", Help: "Configuration reloads by result.",
		}, []string{"result"}),
		DroppedParams: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gateway_dropped_params_total", Help: "Request parameters dropped because the backend cannot honour them (drop_unsupported_params).",
		}, []string{"backend", "param"}),
		AnthropicBetasDropped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gateway_anthropic_betas_dropped_total", Help: "anthropic-beta names of clients' requests not forwarded because the backend's allowed_betas do not list them.",
		}, []string{"backend"}),
		UpstreamRetries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gateway_upstream_retries_total", Help: "Upstream retries and fallbacks by backend and reason.",
		}, []string{"backend", "reason"}),
		FallbacksSkipped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gateway_fallbacks_skipped_total", Help: "Fallback models not tried because the request's key may not use them (reason not_allowed) or they are over their own limits (limited).",
		}, []string{"model", "fallback", "key", "reason"}),
		FallbackAnswers: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gateway_fallback_answers_total", Help: "Answers given by a fallback model because the requested model failed before answering: model is the requested model, answered_by the fallback that answered.",
		}, []string{"model", "answered_by"}),
		ConnectionsRefused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gateway_connections_refused_total", Help: "Client connections refused by server.max_connections or server.max_connections_per_ip.",
		}, []string{"cap"}),
		RateLimitRejections: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gateway_ratelimit_rejections_total", Help: "Requests refused with 429 by a key or model limit or a key budget.",
		}, []string{"key", "model", "limit"}),
		BudgetRemaining: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "gateway_budget_remaining", Help: "What is left of a key's budget in the current period, as last seen by this replica (unit tokens or usd).",
		}, []string{"key", "unit"}),
		TeamBudgetRemaining: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "gateway_team_budget_remaining", Help: "What is left of a team's budget in the current period, as last seen by this replica (unit tokens or usd).",
		}, []string{"team", "unit"}),
		StateErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gateway_state_errors_total", Help: "Failed or timed-out round trips to the shared state (Redis), by operation.",
		}, []string{"op"}),
		LogLinesDropped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "gateway_log_lines_dropped_total", Help: "Log lines dropped because the log output (stderr) fell behind by more than the gateway buffers.",
		}),
		Continuation: newContinuation(),
	}
	m.ToolCalls = m.ToolCallsVia.MustCurryWith(prometheus.Labels{"via": "loop"})
	reg.MustRegister(m.Continuation.collectors()...)
	reg.MustRegister(m.Requests, m.RequestDuration, m.TTFT, m.Upstream, m.Tokens, m.UsageEstimated, m.Inflight,
		m.ToolCallsVia, m.ToolDuration, m.ToolCache, m.LoopIterations, m.ConfigReloads, m.DroppedParams,
		m.UpstreamRetries, m.FallbacksSkipped, m.FallbackAnswers, m.ConnectionsRefused, m.RateLimitRejections, m.BudgetRemaining, m.StateErrors,
		m.TeamBudgetRemaining,
		m.LogLinesDropped,
		m.AnthropicBetasDropped)
	runtime := o.Runtime
	if runtime.collectors == nil {
		runtime = NewRuntime()
	}
	reg.MustRegister(runtime.collectors...)
	m.Ledger = newLedger(reg)
	m.ResponseCache = newResponseCache(reg)
	m.Circuits = newCircuits(reg)
	m.Websocket = newWebsocket(reg)
	m.addDeployments(reg, latency)
	m.ConfigReloads.WithLabelValues("success")
	m.ConfigReloads.WithLabelValues("failure")
	return m
}

// TokenCounts are the token figures of one response, by gateway_tokens_total type.
type TokenCounts struct {
	Prompt, Completion, Cached, CacheCreation, Reasoning int
}

// ToolCall records one tool call (it implements tools.Observer).
func (m *Metrics) ToolCall(tool, outcome string, d time.Duration) {
	m.ToolCalls.WithLabelValues(tool, outcome).Inc()
	if outcome != "cached" { // tools.OutcomeCached: nothing ran
		m.ToolDuration.WithLabelValues(tool).Observe(d.Seconds())
	}
}

// CacheLookup records a tool cache hit or miss (tools.Observer).
func (m *Metrics) CacheLookup(hit bool) {
	if hit {
		m.ToolCache.WithLabelValues("hit").Inc()
	} else {
		m.ToolCache.WithLabelValues("miss").Inc()
	}
}

// CacheEviction records a tool cache eviction (tools.Observer).
func (m *Metrics) CacheEviction() { m.ToolCache.WithLabelValues("eviction").Inc() }

// ConfigReload records a configuration reload attempt.
func (m *Metrics) ConfigReload(ok bool) {
	if ok {
		m.ConfigReloads.WithLabelValues("success").Inc()
	} else {
		m.ConfigReloads.WithLabelValues("failure").Inc()
	}
}

// StateError counts one failed round trip to the shared state (limits.ErrorObserver
// without the error, which the caller logs).
func (m *Metrics) StateError(op string) { m.StateErrors.WithLabelValues(op).Inc() }
