package metrics

import "github.com/prometheus/client_golang/prometheus"

// Deployments are the collectors of models' deployments (models.<m>.deployments). Their
// labels are bounded: model is a configured model, deployment a configured
// "<backend>/<upstream_model>" of it.
type Deployments struct {
	// Selected counts deployments chosen for an attempt; via is balance (the strategy
	// chose) or affinity (the conversation's deployment, an affinity hit).
	Selected *prometheus.CounterVec // model, deployment, via
	// Attempts counts attempts on a deployment by outcome: ok, error (failed: 5xx,
	// timeout, connection, credential), rate_limited (429: it rests until Retry-After) or
	// client_error (the request's fault, 4xx).
	Attempts *prometheus.CounterVec // model, deployment, outcome
	// Duration is an attempt's time to its first event (the whole answer when not
	// streamed): what balance latency's EWMA follows.
	Duration *prometheus.HistogramVec // model, deployment
	// Healthy is 1 while a deployment is taken, 0 after its health refused it or its last
	// attempt failed or was rate limited.
	Healthy *prometheus.GaugeVec // model, deployment
	// Affinity counts requests of models with affinity by result: hit (went to the
	// conversation's deployment) or miss (a new conversation, or its deployment was not
	// usable).
	Affinity *prometheus.CounterVec // model, result
}

// newDeployments builds the deployment collectors and registers them on reg.
func newDeployments(reg prometheus.Registerer, latency []float64) *Deployments {
	d := &Deployments{
		Selected: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gateway_deployment_selected_total", Help: "Deployments chosen for an upstream attempt, by how (via balance or affinity).",
		}, []string{"model", "deployment", "via"}),
		Attempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gateway_deployment_attempts_total", Help: "Upstream attempts on a deployment by outcome: ok, error, rate_limited, client_error.",
		}, []string{"model", "deployment", "outcome"}),
		Duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "gateway_deployment_first_event_seconds", Help: "An attempt's time to its first event on a deployment (the whole answer when not streamed).", Buckets: latency,
		}, []string{"model", "deployment"}),
		Healthy: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "gateway_deployment_healthy", Help: "1 while a deployment is taken; 0 after its breaker refused it or its last attempt failed or was rate limited.",
		}, []string{"model", "deployment"}),
		Affinity: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gateway_deployment_affinity_total", Help: "Requests of models with affinity: hit (sent to the conversation's deployment) or miss.",
		}, []string{"model", "result"}),
	}
	reg.MustRegister(d.Selected, d.Attempts, d.Duration, d.Healthy, d.Affinity)
	return d
}
