package proxy

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/agate-gateway/agate/metrics"
)

// TestRouteSeries: a route's kept metric handles are those SeriesOf and UpstreamSeriesOf
// return for its names, whichever key asks first and in whatever order keys, deployments
// and Metrics come; a route made per request (no kept handles) looks them up each time.
func TestRouteSeries(t *testing.T) {
	t.Parallel() // nothing shared, no clock or environment of the process (#54)
	m, m2 := metrics.New(prometheus.NewRegistry()), metrics.New(prometheus.NewRegistry())
	b, other := &backend{name: "oai"}, &backend{name: "other"}
	kept := &route{metricLabel: "gpt", backend: b, upstreamLabel: "oai/gpt-4o", kept: new(routeSeries)}
	// A deployment's route is a copy of its model's: other backend and label. Were it to
	// share its model's handles (a copy's pointer), it must still never record into them.
	shared := &route{metricLabel: "gpt", backend: other, upstreamLabel: "other/gpt-4o", kept: kept.kept}
	perRequest := &route{metricLabel: "oai/*", backend: b, upstreamLabel: "oai/*"}

	tests := []struct {
		name string
		r    *route
		m    *metrics.Metrics
		key  string
	}{
		{"first key", kept, m, "alice"},
		{"first key again", kept, m, "alice"},
		{"second key", kept, m, "bob"},
		{"first key after the second", kept, m, "alice"},
		{"other backend, shared handles", shared, m, "alice"},
		{"other Metrics", kept, m2, "alice"},
		{"route made per request", perRequest, m, "alice"},
		{"route made per request again", perRequest, m, "bob"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got, want := tt.r.seriesFor(tt.m, tt.key), tt.m.SeriesOf(tt.r.metricLabel, tt.r.backend.name, tt.key); got != want {
				t.Errorf("seriesFor(%q) is not SeriesOf(%q, %q, %q)", tt.key, tt.r.metricLabel, tt.r.backend.name, tt.key)
			}
			if got, want := tt.r.upstreamSeries(tt.m), tt.m.UpstreamSeriesOf(tt.r.backend.name, tt.r.upstreamLabel); got != want {
				t.Errorf("upstreamSeries is not UpstreamSeriesOf(%q, %q)", tt.r.backend.name, tt.r.upstreamLabel)
			}
		})
	}
	if s := kept.kept.series.Load(); s == nil || !s.Is(m, "gpt", "oai", "alice") {
		t.Error("the route did not keep its first key's Series")
	}
}
