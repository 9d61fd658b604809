package metrics

import "github.com/prometheus/client_golang/prometheus"

// Circuits are the collectors of the circuit breakers (package breaker), one circuit per
// configured deployment: backend is the configured backend, model its configured
// upstream model.
type Circuits struct {
	// State is each circuit's state: 0 closed, 1 open, 2 half-open.
	State *prometheus.GaugeVec // backend, model
	// Transitions counts each circuit's changes of state by the state entered (to:
	// closed, open, half_open).
	Transitions *prometheus.CounterVec // backend, model, to
}

func newCircuits(reg prometheus.Registerer) Circuits {
	c := Circuits{
		State: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "gateway_circuit_state", Help: "Each deployment's circuit breaker as this replica sees it: 0 closed, 1 open, 2 half-open (one probe let through).",
		}, []string{"backend", "model"}),
		Transitions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gateway_circuit_transitions_total", Help: "Changes of state of each deployment's circuit breaker, by the state entered (to: closed, open, half_open).",
		}, []string{"backend", "model", "to"}),
	}
	reg.MustRegister(c.State, c.Transitions)
	return c
}
