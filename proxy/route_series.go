package proxy

import (
	"sync/atomic"

	"github.com/agate-gateway/agate/metrics"
)

// routeSeries are the metric handles a configured route keeps once its first request
// found them, so that its later requests record without a lookup by names: the Series of
// the first key that used the route (a map lookup hashing three strings, SeriesOf) and
// the observers of the route's deployment (UpstreamSeriesOf). A request of another key
// looks its Series up as before. Each handle is checked against the names before use
// (Series.Is, UpstreamSeries.Is), so a handle that is not the route's own is never used.
// A route made per request (a direct "<backend>/<model>" route) keeps none: nil.
type routeSeries struct {
	series   atomic.Pointer[metrics.Series]
	upstream atomic.Pointer[metrics.UpstreamSeries]
}

// seriesFor returns the Series of r's metric label and backend for key in m.
func (r *route) seriesFor(m *metrics.Metrics, key string) *metrics.Series {
	if r.kept != nil {
		if s := r.kept.series.Load(); s != nil && s.Is(m, r.metricLabel, r.backend.name, key) {
			return s
		}
	}
	s := m.SeriesOf(r.metricLabel, r.backend.name, key)
	if r.kept != nil {
		r.kept.series.CompareAndSwap(nil, s) // the first key's, kept for the runtime's life
	}
	return s
}

// upstreamSeries returns the upstream observers of r's backend and deployment label in m.
func (r *route) upstreamSeries(m *metrics.Metrics) *metrics.UpstreamSeries {
	if r.kept != nil {
		if u := r.kept.upstream.Load(); u != nil && u.Is(m, r.backend.name, r.upstreamLabel) {
			return u
		}
	}
	u := m.UpstreamSeriesOf(r.backend.name, r.upstreamLabel)
	if r.kept != nil {
		r.kept.upstream.CompareAndSwap(nil, u)
	}
	return u
}
