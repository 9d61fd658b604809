package ledger

import "time"

// Record is one client request as the ledger keeps it. Strings are bounded by whoever
// fills them (configured names, the request id of at most 128 bytes); Prompt and
// Completion are set only when content capture is on, masked and truncated by the
// ledger's writer before the record is written or spooled (Add and AddFrom drop them
// when it is off).
type Record struct {
	// ID is the record's row id, assigned by the database (zero in Add).
	ID int64
	// Time is when the request was over.
	Time time.Time
	// RequestID is the request's X-Request-Id.
	RequestID string
	// Key is the client key's name, Team its team ("" when none).
	Key, Team string
	// API is the client API: "chat", "responses" or "messages".
	API string
	// Model is the requested model's label, Served the configured name of the model that
	// answered ("" when none did), Backend the requested route's backend.
	Model, Served, Backend string
	// Stream is set for a streamed answer.
	Stream bool
	// Status is the HTTP status of the answer (499: the client left a stream);
	// ErrorType the error's type ("" on success).
	Status    int
	ErrorType string
	// Tokens, every tool-loop turn and failover attempt summed (OpenAI semantics: Prompt
	// includes CachedRead and CacheWrite, Completion includes Reasoning).
	PromptTokens, CachedReadTokens, CacheWriteTokens, CompletionTokens, ReasoningTokens int64
	// CostUSD is the tokens priced by the answering model's configured price (0 when it
	// has none).
	CostUSD float64
	// Estimated is set when the tokens were estimated in part or whole.
	Estimated bool
	// Total is the request's duration, FirstToken the time to its first token (0: none),
	// Upstream the time spent waiting for upstream response headers, all attempts summed.
	Total, FirstToken, Upstream time.Duration
	// ToolCalls counts the tool calls the model made (every turn); Fallbacks the fallback
	// models tried.
	ToolCalls, Fallbacks int
	// CacheHit is set when the upstream read part of the prompt from its cache.
	CacheHit bool
	// Prompt and Completion are the request's last user text and the answer's text, only
	// with capture_content (empty otherwise).
	Prompt, Completion string
	// Deployment is the deployment label ("<backend>/<upstream model>", the bounded label
	// of gateway_upstream_duration_seconds) of the attempt that answered, else of the last
	// one tried ("" when none was); the rollups group by it (schema version 5).
	Deployment string
	// TraceID is the request's W3C trace id (32 lower-case hex digits) when tracing is
	// on, else "".
	TraceID string
	// ContinuedFrom is the configured name of the model whose stream broke when a
	// continuation finished the answer ("" when none did).
	ContinuedFrom string
	// Attempts are the request's upstream attempts in the order they were made (retries,
	// deployments, fallbacks, continuations, every tool-loop turn), at most MaxAttempts:
	// Add keeps the first MaxAttempts and adds the others to AttemptsOmitted.
	Attempts        []Attempt
	AttemptsOmitted int
	// RouteAttempt, with Attempts empty and AttemptsOmitted 0, stands for the request's one
	// attempt when it was its route's: Backend, Deployment, Served (its model), Status and
	// ErrorType the record's, not a continuation, charged the record's PromptTokens and
	// CompletionTokens; RouteAttemptDuration is its Duration. Its filler sets it instead of
	// Attempts (the proxy, which knows the attempt was its route's without comparing the
	// texts), so that the attempt is neither copied into the queue nor compared again by
	// the writer; the records read back never have it (their AttemptsJSON holds the
	// attempt). It is ignored when Attempts is not empty.
	RouteAttempt         bool
	RouteAttemptDuration time.Duration
	// AttemptsJSON is, in a record read back (Requests, Request), the attempts as
	// stored: a JSON array of objects (see Attempt), "" when there were none.
	AttemptsJSON string
	// Tools summarizes the server-side tools the request's tool loop ran, one entry a
	// tool in the order first called, at most MaxTools: Add keeps the first MaxTools and
	// adds the calls of the others to ToolsOmitted (schema version 6). ToolCalls counts
	// every tool call the model made, the client's too.
	Tools        []ToolUse
	ToolsOmitted int
	// ToolsJSON is, in a record read back, the tools as stored: a JSON array of objects
	// (see ToolUse), "" when none ran.
	ToolsJSON string
}

// UsageQuery selects a usage report: the rollups of [From, To) grouped by GroupBy.
type UsageQuery struct {
	From, To time.Time
	// GroupBy names the columns to group by, any of "key", "team", "model", "deployment",
	// "day" and "status"; empty means one row for everything.
	GroupBy []string
	// Key, Team, Model and Deployment filter (empty: all).
	Key, Team, Model, Deployment string
}

// UsageRow is one group of a usage report. The grouping fields not asked for are empty.
type UsageRow struct {
	Key, Team, Model string
	// Deployment is the deployment label when grouped by deployment ("" for requests
	// no upstream was tried for, and for those of schema versions before 5).
	Deployment string
	// Day is the UTC date, YYYY-MM-DD, when grouped by day.
	Day string
	// Status is the answers' status when grouped by status, else 0.
	Status                                                                              int
	Requests, Errors                                                                    int64
	PromptTokens, CachedReadTokens, CacheWriteTokens, CompletionTokens, ReasoningTokens int64
	CostUSD                                                                             float64
}

// RequestQuery selects raw records, newest first.
type RequestQuery struct {
	// From and To bound the records' time: [From, To); zero means unbounded.
	From, To time.Time
	// Key, Team, Model (requested) and Status filter; empty or 0 means all.
	Key, Team, Model string
	Status           int
	// ErrorsOnly keeps the failed answers (status 400 and over); FallbacksOnly those a
	// fallback model was tried for.
	ErrorsOnly, FallbacksOnly bool
	// Limit is the page size: default 100, at most 1000.
	Limit int
	// Cursor continues a listing: the Next of the previous page; empty starts at the
	// newest record.
	Cursor string
}
