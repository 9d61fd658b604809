package config

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"sort"
	"strings"
	"time"
)

// Validate reports every problem with c as one error, one problem per line in a stable
// order, each naming the field by its dotted path (models.fast.backend). It never quotes
// secret values (API keys, client keys, header and env values, URLs). Validate does not
// fill in defaults: a zero value that Load would have replaced is accepted, except
// Server.Listen, which is required. Load calls Validate; call it directly for a
// Config built in code.
func (c *Config) Validate() error {
	return joinSorted(c.problems())
}

// fieldError is one problem, attributed to a field.
type fieldError struct {
	path string
	msg  string
	// bare means msg names the field itself and path is not printed.
	bare bool
}

func (e *fieldError) Error() string {
	if e.bare || e.path == "" {
		return "config: " + e.msg
	}
	return "config: " + e.path + ": " + e.msg
}

// joinSorted joins errs in the order of their text, or returns nil for none.
func joinSorted[E error](errs []E) error {
	if len(errs) == 0 {
		return nil
	}
	all := make([]error, len(errs))
	for i, e := range errs {
		all[i] = e
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].Error() < all[j].Error() })
	return errors.Join(all...)
}

var (
	backendTypes = []string{"anthropic", "gemini", "responses", "openai", "azure", "vertex", "bedrock", "mock"}
	toolTypes    = []string{"mcp", "http", "builtin"}
	promptCaches = []string{"", "off", "auto"}
	onTimeouts   = []string{"", OnTimeoutFallback, OnTimeoutRetry}
	logLevels    = []string{"", "debug", "info", "warn", "error"}
	logFormats   = []string{"", "json", "text"}
	cacheScopes  = []string{"", "key", "global"}
)

// responseStores are the responses.store modes; redis needs responses.url or state.type
// redis.
var responseStores = []string{"", "memory", "redis", "off"}

// validator collects the problems of one Config.
type validator struct {
	problems []error
}

func (v *validator) addf(path, format string, args ...any) {
	v.problems = append(v.problems, &fieldError{path: path, msg: fmt.Sprintf(format, args...)})
}

func (v *validator) nonNegative(path string, n int) {
	if n < 0 {
		v.addf(path, "must not be negative")
	}
}

func (v *validator) nonNegativeDuration(path string, d time.Duration) {
	if d < 0 {
		v.addf(path, "must not be negative")
	}
}

func (v *validator) oneOf(path, value string, allowed []string) {
	if !slices.Contains(allowed, value) {
		v.addf(path, "%q is not one of %s", value, strings.Join(nonEmpty(allowed), ", "))
	}
}

func nonEmpty(s []string) []string {
	return slices.DeleteFunc(slices.Clone(s), func(x string) bool { return x == "" })
}

// name checks a map key used as a name; slash forbids "/" in it.
func (v *validator) name(section, name string, slash bool) {
	switch {
	case name == "":
		v.addf(section+`.""`, "name must not be empty")
	case slash && strings.Contains(name, "/"):
		v.addf(section+"."+name, `name must not contain "/"`)
	}
}

// httpURL checks an absolute http(s) URL without quoting it (it may carry credentials).
func (v *validator) httpURL(path, raw string) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		v.addf(path, "must be an absolute http or https URL")
	}
}

// headers checks header names and that values cannot inject headers; values are never quoted.
func (v *validator) headers(path string, h map[string]string) {
	for name, value := range h {
		if !isToken(name) {
			v.addf(path, "invalid header name %q", name)
		}
		if strings.ContainsAny(value, "\r\n\x00") {
			v.addf(path+"."+name, "header value must not contain CR, LF or NUL")
		}
	}
}

// isToken reports whether s is an RFC 9110 token, the syntax of a header name.
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r >= 0x80 || !(r == '!' || r == '#' || r == '$' || r == '%' || r == '&' || r == '\'' ||
			r == '*' || r == '+' || r == '-' || r == '.' || r == '^' || r == '_' || r == '`' ||
			r == '|' || r == '~' || '0' <= r && r <= '9' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z') {
			return false
		}
	}
	return true
}

func (c *Config) problems() []error {
	var v validator
	c.validateServer(&v)
	for name, b := range c.Backends {
		v.name("backends", name, true)
		validateBackend(&v, "backends."+name, b)
	}
	for name, m := range c.Models {
		v.name("models", name, false)
		c.validateModel(&v, name, m)
	}
	c.validateKeys(&v)
	c.validateWebsocket(&v)
	for name, t := range c.Tools {
		v.name("tools", name, true)
		validateTool(&v, "tools."+name, t)
	}
	v.nonNegative("cache.max_entries", c.Cache.MaxEntries)
	v.nonNegativeDuration("cache.ttl", c.Cache.TTL)
	v.oneOf("cache.scope", c.Cache.Scope, cacheScopes)
	v.oneOf("responses.store", c.Responses.Store, responseStores)
	switch r := c.Responses; {
	case r.Store == "redis" && r.URL == "" && c.State.Type != "redis":
		v.addf("responses.store", "redis needs responses.url or state.type: redis (the Redis the replicas share)")
	case r.URL != "" && r.Store != "redis":
		v.addf("responses.url", "only for responses.store redis")
	case r.URL != "":
		v.redisURL("responses.url", r.URL)
	}
	v.nonNegative("responses.max_entries", c.Responses.MaxEntries)
	v.nonNegativeDuration("responses.ttl", c.Responses.TTL)
	if c.Responses.MaxBytes < 0 {
		v.addf("responses.max_bytes", "must not be negative")
	}
	if c.Responses.MaxStoredBytes < 0 {
		v.addf("responses.max_stored_bytes", "must not be negative")
	}
	c.validateLimits(&v)
	c.validateLedger(&v)
	c.validateResponseCaches(&v)
	c.validateAdmin(&v)
	c.validateTeams(&v)
	c.validateMCP(&v)
	c.validateFailover(&v)
	c.validateBalancing(&v)
	return v.problems
}

func (c *Config) validateServer(v *validator) {
	s := c.Server
	if s.Listen == "" {
		v.addf("server.listen", "required")
	} else if _, _, err := net.SplitHostPort(s.Listen); err != nil {
		v.addf("server.listen", "invalid address %q (want host:port or :port)", s.Listen)
	}
	v.nonNegative("server.max_body_bytes", s.MaxBodyBytes)
	v.nonNegative("server.max_inflated_bytes", s.MaxInflatedBytes)
	v.nonNegativeDuration("server.shutdown_timeout", s.ShutdownTimeout)
	v.nonNegativeDuration("server.read_timeout", s.ReadTimeout)
	v.nonNegativeDuration("server.idle_timeout", s.IdleTimeout)
	v.nonNegativeDuration("server.write_timeout", s.WriteTimeout)
	v.nonNegative("server.max_connections", s.MaxConnections)
	v.nonNegative("server.max_connections_per_ip", s.MaxConnectionsPerIP)
	if m := c.Metrics.Listen; m != "" {
		if _, port, err := net.SplitHostPort(m); err != nil {
			v.addf("metrics.listen", "invalid address %q (want host:port or :port)", m)
		} else if m == s.Listen && port != "0" {
			v.addf("metrics.listen", "must differ from server.listen")
		}
	}
	v.oneOf("log.level", c.Log.Level, logLevels)
	v.oneOf("log.format", c.Log.Format, logFormats)
}

func validateBackend(v *validator, p string, b Backend) {
	switch {
	case b.Type == "":
		v.addf(p+".type", "required (one of %s)", strings.Join(backendTypes, ", "))
	default:
		v.oneOf(p+".type", b.Type, backendTypes)
	}
	switch {
	case b.BaseURL != "":
		v.httpURL(p+".base_url", b.BaseURL)
	case b.Type != "mock" && slices.Contains(backendTypes, b.Type): // an unknown type is the one problem named
		v.addf(p+".base_url", "required")
	}
	v.headers(p+".headers", b.Headers)
	validateAzure(v, p, b)
	validateVertex(v, p, b)
	validateBedrock(v, p, b)
	v.nonNegativeDuration(p+".timeouts.connect", b.Timeouts.Connect)
	v.nonNegativeDuration(p+".timeouts.header", b.Timeouts.Header)
	v.nonNegativeDuration(p+".timeouts.stream_idle", b.Timeouts.StreamIdle)
	v.nonNegativeDuration(p+".timeouts.pool_wait", b.Timeouts.PoolWait)
	v.nonNegativeDuration(p+".timeouts.request", b.Timeouts.Request)
	v.oneOf(p+".retries.on_timeout", b.Retries.OnTimeout, onTimeouts)
	if b.Retries.Max < -1 {
		v.addf(p+".retries.max", "must be -1 (no retries) or more")
	}
	v.nonNegativeDuration(p+".retries.base_delay", b.Retries.BaseDelay)
	v.nonNegativeDuration(p+".retries.max_delay", b.Retries.MaxDelay)
	if b.Retries.BaseDelay > 0 && b.Retries.MaxDelay > 0 && b.Retries.BaseDelay > b.Retries.MaxDelay {
		v.addf(p+".retries.base_delay", "%v is longer than retries.max_delay %v", b.Retries.BaseDelay, b.Retries.MaxDelay)
	}
	v.nonNegative(p+".max_conns", b.MaxConns)
	v.nonNegative(p+".max_response_bytes", b.MaxResponseBytes)
	if b.Store && b.Type != "responses" {
		v.addf(p+".store", "only for responses backends")
	}
	if len(b.AllowedBetas) > 0 && b.Type != "anthropic" && slices.Contains(backendTypes, b.Type) {
		v.addf(p+".allowed_betas", "only for anthropic backends")
	}
	for i, beta := range b.AllowedBetas {
		if beta == "" || strings.ContainsAny(beta, ", \t\r\n") {
			v.addf(fmt.Sprintf("%s.allowed_betas[%d]", p, i), "a beta name without commas or spaces, or \"*\"")
		}
	}
}

func (c *Config) validateModel(v *validator, name string, m Model) {
	p := "models." + name
	c.validateDeployments(v, name, m)
	switch _, ok := c.Backends[m.Backend]; {
	case m.Backend == "" && len(m.Deployments) > 0: // named by its deployments
	case m.Backend == "":
		v.addf(p+".backend", "required")
	case !ok:
		v.addf(p+".backend", "unknown backend %q", m.Backend)
	}
	v.nonNegative(p+".max_tokens", m.MaxTokens)
	v.oneOf(p+".prompt_cache", m.PromptCache, promptCaches)
	c.validateScript(v, p, m)
	v.nonNegativeDuration(p+".timeouts.request", m.Timeouts.Request)
	v.nonNegativeDuration(p+".timeouts.first_token", m.Timeouts.FirstToken)
	v.validateEmbeddings(p, m.Embeddings)
	c.validateFallbacks(v, p+".fallbacks", name, m.Fallbacks)
	c.validateContinuation(v, p, m)
}

func (c *Config) validateKeys(v *validator) {
	names := make([]string, 0, len(c.Keys))
	for name := range c.Keys {
		names = append(names, name)
	}
	slices.Sort(names)
	owner := map[string]string{} // token hash -> first key name holding it
	for _, name := range names {
		k := c.Keys[name]
		p := "keys." + name
		v.name("keys", name, false)
		var hash string
		switch {
		case k.Key != "" && k.KeySHA256 != "":
			v.addf(p, "set only one of key and key_sha256")
		case k.Key != "":
			sum := sha256.Sum256([]byte(k.Key))
			hash = hex.EncodeToString(sum[:])
		case k.KeySHA256 != "":
			if !isSHA256Hex(k.KeySHA256) {
				v.addf(p+".key_sha256", "must be 64 lowercase hex characters")
			} else {
				hash = k.KeySHA256
			}
		default:
			v.addf(p, "one of key or key_sha256 is required (a ${VAR} that is empty counts as unset)")
		}
		if hash != "" {
			if first, ok := owner[hash]; ok {
				v.addf(p, "same token as keys.%s", first)
			} else {
				owner[hash] = name
			}
		}
		v.globs(p+".models", k.Models) // teams.go
		for i, tool := range k.Tools {
			c.validateKeyTool(v, fmt.Sprintf("%s.tools[%d]", p, i), tool)
		}
		v.nonNegative(p+".max_tool_iterations", k.MaxToolIterations)
		v.nonNegative(p+".max_tool_calls_per_turn", k.MaxToolCallsPerTurn)
		v.nonNegative(p+".max_concurrent_tool_calls", k.MaxConcurrentToolCalls)
	}
}

func (c *Config) validateKeyTool(v *validator, p, tool string) {
	source, name, single := strings.Cut(tool, "/")
	src, ok := c.Tools[source]
	switch {
	case tool == "":
		v.addf(p, "must not be empty")
	case !ok:
		v.addf(p, "unknown tool source %q", source)
	case single && name == "":
		v.addf(p, "%q names no tool after the source", tool)
	case single && src.Type != "mcp":
		v.addf(p, "%q: only mcp sources have several tools; name the %s source %q alone", tool, src.Type, source)
	}
}

func isSHA256Hex(s string) bool {
	if len(s) != 64 {
		return false
	}
	for _, r := range s {
		if !('0' <= r && r <= '9' || 'a' <= r && r <= 'f') {
			return false
		}
	}
	return true
}

func validateTool(v *validator, p string, t ToolSource) {
	if t.Type == "" {
		v.addf(p+".type", "required (one of %s)", strings.Join(toolTypes, ", "))
	} else {
		v.oneOf(p+".type", t.Type, toolTypes)
	}
	only := func(field, typ string, set bool) {
		if set && t.Type != typ && slices.Contains(toolTypes, t.Type) {
			v.addf(p+"."+field, "only for %s sources", typ)
		}
	}
	only("command", "mcp", len(t.Command) > 0)
	only("env", "mcp", len(t.Env) > 0)
	only("env_passthrough", "mcp", len(t.EnvPassthrough) > 0)
	only("url", "mcp or http", t.URL != "" && t.Type == "builtin")
	only("description", "http", t.Description != "")
	only("parameters", "http", t.Parameters != nil)
	only("name", "builtin", t.Name != "")
	only("required", "mcp", t.Required)
	switch t.Type {
	case "mcp":
		switch {
		case len(t.Command) > 0 && t.URL != "":
			v.addf(p, "set only one of command and url")
		case len(t.Command) == 0 && t.URL == "":
			v.addf(p, "one of command (stdio) or url (streamable HTTP) is required")
		case len(t.Command) > 0 && t.Command[0] == "":
			v.addf(p+".command[0]", "program must not be empty")
		case t.URL != "":
			v.httpURL(p+".url", t.URL)
		}
		if len(t.Env) > 0 && len(t.Command) == 0 {
			v.addf(p+".env", "only for sources started with command")
		}
		if len(t.EnvPassthrough) > 0 && len(t.Command) == 0 {
			v.addf(p+".env_passthrough", "only for sources started with command")
		}
		for name := range t.Env {
			if !isEnvName(name) {
				v.addf(p+".env", "%q is not a valid environment variable name (letters, digits and _, not starting with a digit)", name)
			}
		}
		for i, name := range t.EnvPassthrough {
			if !isEnvName(name) {
				v.addf(fmt.Sprintf("%s.env_passthrough[%d]", p, i), "not a valid environment variable name (letters, digits and _, not starting with a digit)")
			}
		}
	case "http":
		if t.URL == "" {
			v.addf(p+".url", "required")
		} else {
			v.httpURL(p+".url", t.URL)
		}
		if typ, ok := t.Parameters["type"]; ok && typ != "object" {
			v.addf(p+".parameters.type", `must be "object"`)
		}
	case "builtin":
		if t.Name == "" {
			v.addf(p+".name", "required")
		}
	}
	v.headers(p+".headers", t.Headers)
	v.nonNegativeDuration(p+".timeout", t.Timeout)
	v.nonNegative(p+".max_result_bytes", t.MaxResultBytes)
	for name, o := range t.Overrides {
		op := p + ".overrides." + name
		v.nonNegativeDuration(op+".timeout", o.Timeout)
		v.nonNegative(op+".max_result_bytes", o.MaxResultBytes)
	}
}
