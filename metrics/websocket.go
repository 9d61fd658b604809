package metrics

import "github.com/prometheus/client_golang/prometheus"

// Websocket are the collectors of the Responses API's WebSocket mode (GET /v1/responses
// upgraded). Each turn is also a request of api="responses" in the request metrics.
type Websocket struct {
	// Open is the number of open WebSocket connections.
	Open prometheus.Gauge
	// Upgrades counts upgrade requests by result: accepted, disabled (answered 426),
	// refused (a bad handshake or credential).
	Upgrades *prometheus.CounterVec // result
	// Closed counts closed connections by reason: client (the client closed or left),
	// idle (responses_websocket.idle_timeout), max_turns, too_big (a message over
	// max_message_bytes), invalid (a binary message), shutdown.
	Closed *prometheus.CounterVec // reason
	// Turns counts client messages by outcome: turn (a response.create served), warmup
	// (generate: false), busy (sent while a turn ran: refused), refused (not a client
	// event), ignored (response.processed).
	Turns *prometheus.CounterVec // outcome
}

func newWebsocket(reg prometheus.Registerer) Websocket {
	w := Websocket{
		Open: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "gateway_websocket_connections", Help: "Open WebSocket connections of the Responses API's WebSocket mode.",
		}),
		Upgrades: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gateway_websocket_upgrades_total", Help: "WebSocket upgrade requests of GET /v1/responses by result: accepted, disabled (426), refused.",
		}, []string{"result"}),
		Closed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gateway_websocket_closed_total", Help: "Closed WebSocket connections by reason: client, idle, max_turns, too_big, invalid, shutdown.",
		}, []string{"reason"}),
		Turns: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gateway_websocket_messages_total", Help: "Client messages on WebSocket connections by outcome: turn, warmup, busy, refused, ignored.",
		}, []string{"outcome"}),
	}
	reg.MustRegister(w.Open, w.Upgrades, w.Closed, w.Turns)
	// Every label value is known: each series is exported from the start, at zero.
	for _, r := range []string{"accepted", "disabled", "refused"} {
		w.Upgrades.WithLabelValues(r)
	}
	for _, r := range []string{"client", "idle", "max_turns", "too_big", "invalid", "shutdown"} {
		w.Closed.WithLabelValues(r)
	}
	for _, o := range []string{"turn", "warmup", "busy", "refused", "ignored"} {
		w.Turns.WithLabelValues(o)
	}
	return w
}
