package metrics

import "github.com/prometheus/client_golang/prometheus"

// ResponseCache are the response cache's collectors.
type ResponseCache struct {
	// Results counts requests the response cache applied to, by result: hit (answered
	// from the cache), miss (asked upstream), skip (the client asked not to use it:
	// x-agate-cache: skip or Cache-Control: no-store), refresh (asked upstream although
	// it may be cached: x-agate-cache: refresh or Cache-Control: no-cache), and store
	// (an answer was stored).
	Results *prometheus.CounterVec // result
	// Errors counts store operations that failed (Redis down or slow): get or set. The
	// request is then served as a miss, or its answer not stored.
	Errors *prometheus.CounterVec // op
}

// newResponseCache makes and registers the response cache's collectors, their labels at zero.
func newResponseCache(reg prometheus.Registerer) ResponseCache {
	r := ResponseCache{
		Results: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gateway_response_cache_total", Help: "Requests the response cache applied to, by result: hit, miss, skip, refresh; and answers stored (store).",
		}, []string{"result"}),
		Errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gateway_response_cache_errors_total", Help: "Response cache store operations that failed, by op: get, set.",
		}, []string{"op"}),
	}
	reg.MustRegister(r.Results, r.Errors)
	for _, l := range []string{"hit", "miss", "skip", "refresh", "store"} {
		r.Results.WithLabelValues(l)
	}
	r.Errors.WithLabelValues("get")
	r.Errors.WithLabelValues("set")
	return r
}
