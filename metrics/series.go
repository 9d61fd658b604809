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
// lookup on a comparable key costs a fraction of that, and a scan of a Series' few
// children less again. The keys are bounded as the labels are (configured names, status
// codes); a name removed by a reload keeps its entry, as it keeps its series.

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

// seriesKey names a Series.
type seriesKey struct{ model, backend, key string }

// upstreamKey names the upstream observers of one deployment.
type upstreamKey struct{ backend, deployment string }

// seriesCaches are the caches of Metrics: the Series of each model label, backend and
// key, and the upstream observers of each deployment.
type seriesCaches struct {
	series   labelCache[seriesKey, *Series]
	upstream labelCache[upstreamKey, *UpstreamSeries]
}

// Series records the per-request series of one model label, backend and key. A request
// finds it with one lookup (SeriesOf) and records through it: each of its children is
// found by a scan of the few this Series has made (status codes, stream or not, api),
// where a lookup per series hashed every label value again (some fifteen strings a
// request). Safe for concurrent use.
type Series struct {
	m                   *Metrics
	model, backend, key string
	requests            smallCache[requestSub, prometheus.Counter]
	duration            smallCache[durationSub, prometheus.Observer]
	ttft                lazy[prometheus.Observer]
	tokens              [len(tokenTypes)]lazy[prometheus.Counter]
	estimated           lazy[prometheus.Counter]
}

type requestSub struct {
	code   int
	stream bool
	api    string
}

type durationSub struct {
	stream bool
	api    string
}

// tokenTypes are the type label values of gateway_tokens_total, in TokenCounts' order.
var tokenTypes = [...]string{"prompt", "completion", "cached", "cache_creation", "reasoning"}

// SeriesOf returns the Series of model, backend and key.
func (m *Metrics) SeriesOf(model, backend, key string) *Series {
	return m.series.series.get(seriesKey{model, backend, key}, func() *Series {
		return &Series{m: m, model: model, backend: backend, key: key}
	})
}

// CountRequest counts one request of client API api with its outcome
// (gateway_requests_total).
func (s *Series) CountRequest(code int, stream bool, api string) {
	s.requests.get(requestSub{code, stream, api}, func() prometheus.Counter {
		return s.m.Requests.WithLabelValues(s.model, s.backend, s.key, strconv.Itoa(code), strconv.FormatBool(stream), api)
	}).Inc()
}

// RequestDuration returns the observer of a request's duration
// (gateway_request_duration_seconds); the caller may observe with an exemplar.
func (s *Series) RequestDuration(stream bool, api string) prometheus.Observer {
	return s.duration.get(durationSub{stream, api}, func() prometheus.Observer {
		return s.m.RequestDuration.WithLabelValues(s.model, s.backend, strconv.FormatBool(stream), api)
	})
}

// TTFT returns the observer of a request's time to its first token
// (gateway_time_to_first_token_seconds, which has no key label).
func (s *Series) TTFT() prometheus.Observer {
	return s.ttft.get(func() prometheus.Observer { return s.m.TTFT.WithLabelValues(s.model, s.backend) })
}

// AddTokens adds one response's tokens (gateway_tokens_total); a type with no tokens is
// not counted, so its series appears only once some are.
func (s *Series) AddTokens(t TokenCounts) {
	for i, n := range [len(tokenTypes)]int{t.Prompt, t.Completion, t.Cached, t.CacheCreation, t.Reasoning} {
		if n > 0 {
			s.tokens[i].get(func() prometheus.Counter {
				return s.m.Tokens.WithLabelValues(s.model, s.backend, s.key, tokenTypes[i])
			}).Add(float64(n))
		}
	}
}

// CountEstimated counts one upstream answer whose tokens were estimated
// (gateway_usage_estimated_total).
func (s *Series) CountEstimated() {
	s.estimated.get(func() prometheus.Counter {
		return s.m.UsageEstimated.WithLabelValues(s.model, s.backend, s.key)
	}).Inc()
}

// Is reports whether s is the Series of model, backend and key in m: a caller that kept a
// Series (per route) checks it so before recording through it instead of asking SeriesOf.
func (s *Series) Is(m *Metrics, model, backend, key string) bool {
	return s.m == m && s.key == key && s.model == model && s.backend == backend
}

// UpstreamOf returns the observer of one upstream attempt's wait for response headers
// on a deployment of backend, by status ("0" for a transport error)
// (gateway_upstream_duration_seconds). deployment must be a bounded, configured value.
func (m *Metrics) UpstreamOf(backend, deployment, code string) prometheus.Observer {
	return m.UpstreamSeriesOf(backend, deployment).Of(code)
}

// UpstreamSeries are the upstream observers of one deployment of a backend, one per
// status (UpstreamOf); a caller may keep it (per route) and skip the lookup by names.
// Safe for concurrent use.
type UpstreamSeries struct {
	m                   *Metrics
	backend, deployment string
	codes               smallCache[string, prometheus.Observer]
}

// UpstreamSeriesOf returns the upstream observers of deployment of backend; the same
// *UpstreamSeries for the same names.
func (m *Metrics) UpstreamSeriesOf(backend, deployment string) *UpstreamSeries {
	return m.series.upstream.get(upstreamKey{backend, deployment}, func() *UpstreamSeries {
		return &UpstreamSeries{m: m, backend: backend, deployment: deployment}
	})
}

// Is reports whether u is the observers of deployment of backend in m.
func (u *UpstreamSeries) Is(m *Metrics, backend, deployment string) bool {
	return u.m == m && u.deployment == deployment && u.backend == backend
}

// Of returns the observer of an attempt that ended with status code ("0" for a transport
// error), as UpstreamOf does.
func (u *UpstreamSeries) Of(code string) prometheus.Observer {
	return u.codes.get(code, func() prometheus.Observer {
		return u.m.Upstream.WithLabelValues(u.backend, u.deployment, code)
	})
}

// smallCache memoizes children by a key from a small set (a series' status codes): a
// lookup scans the entries in the order they were added, comparing keys, which for a
// few entries costs less than hashing the key. Safe for concurrent use, as labelCache.
type smallCache[K comparable, M any] struct {
	s  atomic.Pointer[[]smallEntry[K, M]]
	mu sync.Mutex // serializes additions
}

type smallEntry[K comparable, M any] struct {
	k K
	v M
}

func (c *smallCache[K, M]) get(k K, child func() M) M {
	if s := c.s.Load(); s != nil {
		for i := range *s {
			if (*s)[i].k == k {
				return (*s)[i].v
			}
		}
	}
	return c.add(k, child)
}

// add publishes a copy of the entries with k's child, unless another call added it first.
func (c *smallCache[K, M]) add(k K, child func() M) M {
	c.mu.Lock()
	defer c.mu.Unlock()
	var next []smallEntry[K, M]
	if old := c.s.Load(); old != nil {
		for _, e := range *old {
			if e.k == k {
				return e.v
			}
		}
		next = append(make([]smallEntry[K, M], 0, len(*old)+1), *old...)
	}
	v := child()
	next = append(next, smallEntry[K, M]{k, v})
	c.s.Store(&next)
	return v
}

// lazy is a child made on its first use. Safe for concurrent use: first uses at once
// may each make it, and each gets the same child (WithLabelValues returns one child per
// label values); one is kept.
type lazy[M any] struct{ p atomic.Pointer[M] }

func (l *lazy[M]) get(child func() M) M {
	if p := l.p.Load(); p != nil {
		return *p
	}
	v := child()
	l.p.Store(&v)
	return v
}
