package metrics

import (
	"maps"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// The methods below record the per-request series through caches of the vectors'
// children: WithLabelValues hashes and checks every label value on each call, a map
// lookup on a comparable key costs a fraction of that. The keys are bounded as the labels
// are (configured names, status codes); a name removed by a reload keeps its entry, as it
// keeps its series.

// labelCache memoizes a vector's children by key. Safe for concurrent use. A lookup takes
// no lock and writes no shared memory: the map is immutable once published, and a new
// key publishes a copy with it (under mu). Two cores looking up children at once so do
// not pass a lock's cache line between them, as a read lock's count did: some ten times a
// request.
type labelCache[K comparable, M any] struct {
	m  atomic.Pointer[map[K]M]
	mu sync.Mutex // serializes additions
}

func (c *labelCache[K, M]) get(k K, child func() M) M {
	if m := c.m.Load(); m != nil {
		if v, ok := (*m)[k]; ok {
			return v
		}
	}
	return c.add(k, child)
}

// add publishes a copy of the map with k's child, unless another call added it first.
func (c *labelCache[K, M]) add(k K, child func() M) M {
	c.mu.Lock()
	defer c.mu.Unlock()
	old := c.m.Load()
	if old != nil {
		if v, ok := (*old)[k]; ok {
			return v
		}
	}
	next := make(map[K]M, 1)
	if old != nil {
		next = maps.Clone(*old)
	}
	v := child()
	next[k] = v
	c.m.Store(&next)
	return v
}

type requestKey struct {
	model, backend, key, api string
	code                     int
	stream                   bool
}

type durationKey struct {
	model, backend, api string
	stream              bool
}

type upstreamKey struct{ backend, code string }

type tokenKey struct{ model, backend, key, typ string }

// seriesCaches are the caches of Metrics, one per vector.
type seriesCaches struct {
	requests labelCache[requestKey, prometheus.Counter]
	duration labelCache[durationKey, prometheus.Observer]
	ttft     labelCache[durationKey, prometheus.Observer]
	upstream labelCache[upstreamKey, prometheus.Observer]
	tokens   labelCache[tokenKey, prometheus.Counter]
}

// CountRequest counts one request of client API api with its outcome
// (gateway_requests_total).
func (m *Metrics) CountRequest(model, backend, key string, code int, stream bool, api string) {
	m.series.requests.get(requestKey{model, backend, key, api, code, stream}, func() prometheus.Counter {
		return m.Requests.WithLabelValues(model, backend, key, strconv.Itoa(code), strconv.FormatBool(stream), api)
	}).Inc()
}

// RequestDurationOf returns the observer of a request's duration
// (gateway_request_duration_seconds); the caller may observe with an exemplar.
func (m *Metrics) RequestDurationOf(model, backend string, stream bool, api string) prometheus.Observer {
	return m.series.duration.get(durationKey{model, backend, api, stream}, func() prometheus.Observer {
		return m.RequestDuration.WithLabelValues(model, backend, strconv.FormatBool(stream), api)
	})
}

// TTFTOf returns the observer of a request's time to its first token
// (gateway_time_to_first_token_seconds).
func (m *Metrics) TTFTOf(model, backend string) prometheus.Observer {
	return m.series.ttft.get(durationKey{model: model, backend: backend}, func() prometheus.Observer {
		return m.TTFT.WithLabelValues(model, backend)
	})
}

// UpstreamOf returns the observer of one upstream attempt's wait for response headers,
// by status ("0" for a transport error) (gateway_upstream_duration_seconds).
func (m *Metrics) UpstreamOf(backend, code string) prometheus.Observer {
	return m.series.upstream.get(upstreamKey{backend, code}, func() prometheus.Observer {
		return m.Upstream.WithLabelValues(backend, code)
	})
}
