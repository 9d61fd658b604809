package metrics

import "github.com/prometheus/client_golang/prometheus"

// The collectors of models' deployments (models.<m>.deployments), fields of Metrics
// (DeploymentSelected...). Their labels are bounded: model is a configured model,
// deployment a configured "<backend>/<upstream_model>" of it.

// addDeployments builds the deployment collectors into m and registers them on reg.
func (m *Metrics) addDeployments(reg prometheus.Registerer, latency []float64) {
	m.DeploymentSelected = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "gateway_deployment_selected_total", Help: "Deployments chosen for an upstream attempt, by how (via balance or affinity).",
	}, []string{"model", "deployment", "via"})
	m.DeploymentAttempts = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "gateway_deployment_attempts_total", Help: "Upstream attempts on a deployment by outcome: ok, error, rate_limited, client_error.",
	}, []string{"model", "deployment", "outcome"})
	m.DeploymentFirstEvent = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "gateway_deployment_first_event_seconds", Help: "An attempt's time to its first event on a deployment (the whole answer when not streamed).", Buckets: latency,
	}, []string{"model", "deployment"})
	m.DeploymentHealthy = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "gateway_deployment_healthy", Help: "1 while a deployment is taken; 0 after its breaker refused it or its last attempt failed or was rate limited.",
	}, []string{"model", "deployment"})
	m.DeploymentAffinity = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "gateway_deployment_affinity_total", Help: "Requests of models with affinity: hit (sent to the conversation's deployment) or miss.",
	}, []string{"model", "result"})
	reg.MustRegister(m.DeploymentSelected, m.DeploymentAttempts, m.DeploymentFirstEvent, m.DeploymentHealthy, m.DeploymentAffinity)
}
