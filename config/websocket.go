package config

import "time"

// ResponsesWebsocket configures the WebSocket mode of the Responses API
// (responses_websocket): GET /v1/responses upgraded to a WebSocket, on which each
// response.create message is one turn answered with the same events as the SSE stream of
// POST /v1/responses, each a text message. Every turn goes through the request path of
// POST /v1/responses (keys, routing, limits, budgets, metrics, traces); the connection
// itself is bounded by the fields below.
type ResponsesWebsocket struct {
	// Enabled serves the upgrade (default true). Off, the upgrade is answered 426 Upgrade
	// Required, which Codex and OpenAI's clients take as "use HTTP": they fall back to
	// POST /v1/responses at once.
	Enabled *bool `koanf:"enabled"`
	// IdleTimeout closes a connection on which no turn has run for this long (default 5m;
	// a turn in progress is never idle).
	IdleTimeout time.Duration `koanf:"idle_timeout"`
	// MaxMessageBytes bounds one client message (default server.max_body_bytes, the bound
	// of a POST body); a longer one closes the connection with status 1009 (message too
	// big).
	MaxMessageBytes int `koanf:"max_message_bytes"`
	// MaxTurns is how many response.create messages one connection serves (default
	// 1000); the next one is answered with the error websocket_connection_limit_reached,
	// on which Codex opens a new connection, and the connection is closed.
	MaxTurns int `koanf:"max_turns"`
}

// On reports whether the WebSocket mode is served (Enabled, default true).
func (w ResponsesWebsocket) On() bool { return w.Enabled == nil || *w.Enabled }

const (
	defaultWebsocketIdle  = 5 * time.Minute
	defaultWebsocketTurns = 1000
)

// Effective returns w with its defaults in the fields left zero (the configuration keeps
// them zero, so that a file without responses_websocket loads as it did); maxBody is
// server.max_body_bytes.
func (w ResponsesWebsocket) Effective(maxBody int) ResponsesWebsocket {
	setDefault(&w.IdleTimeout, defaultWebsocketIdle)
	setDefault(&w.MaxMessageBytes, maxBody)
	setDefault(&w.MaxTurns, defaultWebsocketTurns)
	return w
}

// validateWebsocket checks responses_websocket.
func (c *Config) validateWebsocket(v *validator) {
	w := c.ResponsesWebsocket
	v.nonNegativeDuration("responses_websocket.idle_timeout", w.IdleTimeout)
	v.nonNegative("responses_websocket.max_message_bytes", w.MaxMessageBytes)
	v.nonNegative("responses_websocket.max_turns", w.MaxTurns)
}
