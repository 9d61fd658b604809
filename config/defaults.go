package config

import "time"

// The defaults documented on the Config fields.
const (
	defaultListen            = ":8080"
	defaultMaxBodyBytes      = 20 << 20
	defaultShutdownTimeout   = 30 * time.Second
	defaultReadTimeout       = 60 * time.Second
	defaultIdleTimeout       = 120 * time.Second
	defaultWriteTimeout      = 60 * time.Second
	defaultMaxConnections    = 10000
	defaultPoolWait          = 5 * time.Second
	defaultLogLevel          = "info"
	defaultLogFormat         = "json"
	defaultConnectTimeout    = 10 * time.Second
	defaultHeaderTimeout     = 120 * time.Second
	defaultStreamIdleTimeout = 120 * time.Second
	defaultRequestTimeout    = 10 * time.Minute
	defaultOnTimeout         = OnTimeoutFallback
	defaultRetries           = 2
	defaultRetryBaseDelay    = 250 * time.Millisecond
	defaultRetryMaxDelay     = 10 * time.Second
	defaultMaxConns          = 512
	defaultMaxResponseBytes  = 64 << 20
	defaultPromptCache       = "off"
	defaultCacheMaxEntries   = 10000
	defaultCacheTTL          = 10 * time.Minute
	defaultCacheScope        = "key"
	defaultResponsesStore    = "memory"
	defaultResponsesTTL      = 24 * time.Hour
	defaultResponsesEntries  = 10000
	defaultResponsesBytes    = 64 << 20
	defaultBudgetPeriod      = 720 * time.Hour
	defaultStateType         = "memory"
	defaultStateKeyPrefix    = "agate:"
	defaultStateTimeout      = 50 * time.Millisecond
	defaultStateOnError      = "allow"
)

// The exported defaults, for callers that need config's value without a loaded config
// (proxy's open-mode key and its reservations). The tool loop's and the tool registry's
// are the same numbers as loop's and tools' own defaults, which those packages own and
// apply to fields left zero; cmd/gateway's TestDefaults_ConfigAgreesWithPackages holds
// every default config fills in for them equal to theirs.
const (
	DefaultMaxToolIterations      = 8
	DefaultMaxToolCallsPerTurn    = 32
	DefaultMaxConcurrentToolCalls = 8
	DefaultToolTimeout            = 30 * time.Second
	DefaultMaxResultBytes         = 64 << 10
	DefaultReserveOutputTokens    = 4096
)

// applyDefaults fills in zero fields. raw is the decoded document, consulted where an
// explicit zero differs from an absent value (retries.max).
func (c *Config) applyDefaults(raw map[string]any) {
	setDefault(&c.Server.Listen, defaultListen)
	setDefault(&c.Server.MaxBodyBytes, defaultMaxBodyBytes)
	setDefault(&c.Server.MaxInflatedBytes, c.Server.MaxBodyBytes)
	setDefault(&c.Server.ShutdownTimeout, defaultShutdownTimeout)
	setDefault(&c.Server.ReadTimeout, defaultReadTimeout)
	setDefault(&c.Server.IdleTimeout, defaultIdleTimeout)
	setDefault(&c.Server.WriteTimeout, defaultWriteTimeout)
	setDefault(&c.Server.MaxConnections, defaultMaxConnections)
	setDefault(&c.Log.Level, defaultLogLevel)
	setDefault(&c.Log.Format, defaultLogFormat)

	for name, b := range c.Backends {
		setDefault(&b.Timeouts.Connect, defaultConnectTimeout)
		setDefault(&b.Timeouts.Header, defaultHeaderTimeout)
		setDefault(&b.Timeouts.StreamIdle, defaultStreamIdleTimeout)
		setDefault(&b.Timeouts.PoolWait, defaultPoolWait)
		setDefault(&b.Timeouts.Request, defaultRequestTimeout)
		setDefault(&b.Retries.OnTimeout, defaultOnTimeout)
		switch {
		case !hasKey(raw, "backends", name, "retries", "max"):
			b.Retries.Max = defaultRetries
		case b.Retries.Max == -1:
			b.Retries.Max = 0
		}
		setDefault(&b.Retries.BaseDelay, defaultRetryBaseDelay)
		setDefault(&b.Retries.MaxDelay, defaultRetryMaxDelay)
		setDefault(&b.MaxConns, defaultMaxConns)
		setDefault(&b.MaxResponseBytes, defaultMaxResponseBytes)
		defaultAzure(&b)
		defaultVertex(&b)
		defaultBedrock(&b)
		switch {
		case b.Type == "anthropic" && !hasKey(raw, "backends", name, "allowed_betas"):
			b.AllowedBetas = DefaultAnthropicBetas()
		case b.AllowedBetas == nil && hasKey(raw, "backends", name, "allowed_betas"):
			b.AllowedBetas = []string{} // allowed_betas: [] forwards none
		}
		c.Backends[name] = b
	}
	c.applyCircuitDefaults(raw)
	for name, m := range c.Models {
		defaultDeployments(&m, name)
		setDefault(&m.UpstreamModel, name)
		setDefault(&m.PromptCache, defaultPromptCache)
		c.Models[name] = m
	}
	for name, k := range c.Keys {
		setDefault(&k.MaxToolIterations, DefaultMaxToolIterations)
		setDefault(&k.MaxToolCallsPerTurn, DefaultMaxToolCallsPerTurn)
		setDefault(&k.MaxConcurrentToolCalls, DefaultMaxConcurrentToolCalls)
		setDefault(&k.Budget.Period, defaultBudgetPeriod)
		c.Keys[name] = k
	}
	for name, t := range c.Tools {
		setDefault(&t.Timeout, DefaultToolTimeout)
		setDefault(&t.MaxResultBytes, DefaultMaxResultBytes)
		if t.Type == "http" && t.Parameters == nil {
			t.Parameters = map[string]any{"type": "object", "properties": map[string]any{}}
		}
		c.Tools[name] = t
	}
	setDefault(&c.Cache.MaxEntries, defaultCacheMaxEntries)
	setDefault(&c.Cache.TTL, defaultCacheTTL)
	setDefault(&c.Cache.Scope, defaultCacheScope)
	setDefault(&c.Responses.Store, defaultResponsesStore)
	setDefault(&c.Responses.TTL, defaultResponsesTTL)
	setDefault(&c.Responses.MaxEntries, defaultResponsesEntries)
	setDefault(&c.Responses.MaxBytes, int64(defaultResponsesBytes))
	setDefault(&c.Responses.MaxStoredBytes, int64(c.Server.MaxBodyBytes))
	setDefault(&c.State.Type, defaultStateType)
	setDefault(&c.State.KeyPrefix, defaultStateKeyPrefix)
	setDefault(&c.State.Timeout, defaultStateTimeout)
	setDefault(&c.State.OnError, defaultStateOnError)
	setDefault(&c.State.ReserveOutputTokens, DefaultReserveOutputTokens)
	c.ledgerDefaults()
	c.responseCacheDefaults()
	c.adminDefaults()
	c.teamDefaults()
	c.mcpDefaults()
}

func setDefault[T comparable](field *T, value T) {
	var zero T
	if *field == zero {
		*field = value
	}
}

// hasKey reports whether the nested map m holds a non-null value at the path keys.
func hasKey(m map[string]any, keys ...string) bool {
	for i, k := range keys {
		v, ok := m[k]
		if !ok {
			return false
		}
		if i == len(keys)-1 {
			return v != nil
		}
		if m, ok = v.(map[string]any); !ok {
			return false
		}
	}
	return false
}
