package proxy

import (
	"context"
	"slices"
	"strconv"
	"time"

	"github.com/agate-gateway/agate/breaker"
	"github.com/agate-gateway/agate/internal/jsonx"
	"github.com/agate-gateway/agate/ledger"
)

// overviewer is the ledger's overview report (*ledger.Ledger is one).
type overviewer interface {
	Overview(ctx context.Context, q ledger.OverviewQuery) (ledger.Overview, error)
}

// maxOverviewSpan bounds an overview's range.
const maxOverviewSpan = 400 * 24 * time.Hour

// adminOverview is the traffic of [from, to) (default: the last hour): a series from the
// rollups (its step chosen by the range), totals, top keys, models and errors (top, default
// 5, at most 50) and latency percentiles of the newest records.
func (s *Server) adminOverview(a *adminCall) error {
	ov, ok := s.keyStore.(overviewer)
	if !ok {
		return notFound("this ledger has no overview")
	}
	now := time.Now().UTC()
	var q ledger.OverviewQuery
	var err error
	if q.To, err = queryTime(a, "to", now); err != nil {
		return err
	}
	if q.From, err = queryTime(a, "from", q.To.Add(-time.Hour)); err != nil {
		return err
	}
	if q.To.Sub(q.From) < time.Minute {
		return badRequest("to", "must be a minute or more after from")
	}
	if q.To.Sub(q.From) > maxOverviewSpan {
		return badRequest("from", "the range is at most 400 days")
	}
	if q.Top, err = queryInt(a, "top"); err != nil {
		return err
	}
	if q.Top > 50 {
		return badRequest("top", "at most 50")
	}
	ctx, cancel := s.adminCtx()
	defer cancel()
	o, err := ov.Overview(ctx, q)
	if err != nil {
		return err
	}
	b := append(make([]byte, 0, 512+len(o.Series)*160), `{"from":`...)
	b = appendTime(b, q.From)
	b = appendTime(append(b, `,"to":`...), q.To)
	b = strconv.AppendInt(append(b, `,"step_seconds":`...), int64(o.Step/time.Second), 10)
	b = appendPoint(append(b, `,"totals":`...), &o.Totals, false)
	b = append(b, `,"series":[`...)
	for i := range o.Series {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendPoint(b, &o.Series[i], true)
	}
	b = append(b, `],"latency_ms":`...)
	b = appendPercentiles(b, o.Latency)
	b = appendPercentiles(append(b, `,"first_token_ms":`...), o.FirstToken)
	b = strconv.AppendInt(append(b, `,"latency_sample":`...), int64(o.LatencySample), 10)
	for _, top := range [...]struct {
		name string
		l    []ledger.OverviewPoint
	}{{"top_keys", o.TopKeys}, {"top_models", o.TopModels}} {
		b = append(append(append(b, `,"`...), top.name...), `":[`...)
		for i := range top.l {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendPoint(b, &top.l[i], false)
		}
		b = append(b, ']')
	}
	b = append(b, `,"top_errors":[`...)
	for i, e := range o.TopErrors {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(append(b, `{"status":`...), int64(e.Status), 10)
		b = jsonx.AppendString(append(b, `,"error_type":`...), e.Type)
		b = append(strconv.AppendInt(append(b, `,"count":`...), e.Count, 10), '}')
	}
	writeAdminJSON(a.ctx, 200, append(b, "]}"...))
	return nil
}

func appendPoint(b []byte, p *ledger.OverviewPoint, withTime bool) []byte {
	b = append(b, '{')
	if withTime {
		b = strconv.AppendInt(append(b, `"t":`...), p.Time.Unix(), 10)
		b = append(b, ',')
	} else if p.Name != "" {
		b = jsonx.AppendString(append(b, `"name":`...), p.Name)
		b = append(b, ',')
	}
	b = strconv.AppendInt(append(b, `"requests":`...), p.Requests, 10)
	b = strconv.AppendInt(append(b, `,"errors":`...), p.Errors, 10)
	b = strconv.AppendInt(append(b, `,"prompt_tokens":`...), p.PromptTokens, 10)
	b = strconv.AppendInt(append(b, `,"completion_tokens":`...), p.CompletionTokens, 10)
	b = strconv.AppendInt(append(b, `,"cached_read_tokens":`...), p.CachedReadTokens, 10)
	b = strconv.AppendInt(append(b, `,"reasoning_tokens":`...), p.Reasoning, 10)
	b = strconv.AppendFloat(append(b, `,"cost_usd":`...), p.CostUSD, 'f', -1, 64)
	b = strconv.AppendInt(append(b, `,"total_ms":`...), p.TotalMS, 10)
	return append(b, '}')
}

func appendPercentiles(b []byte, p [3]time.Duration) []byte {
	b = strconv.AppendInt(append(b, `{"p50":`...), p[0].Milliseconds(), 10)
	b = strconv.AppendInt(append(b, `,"p95":`...), p[1].Milliseconds(), 10)
	b = strconv.AppendInt(append(b, `,"p99":`...), p[2].Milliseconds(), 10)
	return append(b, '}')
}

// adminModels is the running runtime's models: where each routes (backend, upstream
// model, fallbacks), and each deployment's live state on this replica: its circuit, its
// requests in flight, its time-to-first-token EWMA, a 429 rest.
func (s *Server) adminModels(a *adminCall) error {
	rt := s.runtime()
	now := time.Now()
	if s.circuits != nil {
		now = s.circuits.now()
	}
	names := make([]string, 0, len(rt.routes))
	for n := range rt.routes {
		names = append(names, n)
	}
	slices.Sort(names)
	b := append(make([]byte, 0, 256*len(names)), `{"data":[`...)
	for i, n := range names {
		r := rt.routes[n]
		if i > 0 {
			b = append(b, ',')
		}
		mc := rt.cfg.Models[n]
		b = jsonx.AppendString(append(b, `{"name":`...), n)
		b = appendStrings(append(b, `,"fallbacks":`...), r.fallbacks)
		b = appendStrings(append(b, `,"context_fallbacks":`...), r.contextFallbacks)
		b = jsonx.AppendString(append(b, `,"balance":`...), mc.Balance)
		if p := mc.Price; p == nil {
			b = append(b, `,"price":null`...)
		} else {
			b = strconv.AppendFloat(append(b, `,"price":{"input":`...), p.Input, 'f', -1, 64)
			b = strconv.AppendFloat(append(b, `,"output":`...), p.Output, 'f', -1, 64)
			b = strconv.AppendFloat(append(b, `,"cached_input":`...), p.CachedInput, 'f', -1, 64)
			b = append(strconv.AppendFloat(append(b, `,"cache_write":`...), p.CacheWrite, 'f', -1, 64), '}')
		}
		b = append(b, `,"deployments":[`...)
		if r.deploy == nil {
			b = s.appendDeployment(b, r, r.circuit, 1, 0, nil, now)
		} else {
			for j, dr := range r.deploy.routes {
				if j > 0 {
					b = append(b, ',')
				}
				weight, prio := 1, 0
				if j < len(mc.Deployments) {
					weight, prio = mc.Deployments[j].Weight, mc.Deployments[j].Priority
				}
				b = s.appendDeployment(b, dr, dr.circuit, weight, prio, &deploymentLive{set: r.deploy, i: j}, now)
			}
		}
		b = append(b, "]}"...)
	}
	writeAdminJSON(a.ctx, 200, append(b, "]}"...))
	return nil
}

// deploymentLive is a deployment's place in its model's balance set.
type deploymentLive struct {
	set *deployments
	i   int
}

func (s *Server) appendDeployment(b []byte, r *route, circuit string, weight, priority int, live *deploymentLive, now time.Time) []byte {
	b = jsonx.AppendString(append(b, `{"backend":`...), r.backend.name)
	b = jsonx.AppendString(append(b, `,"type":`...), r.backend.typ)
	b = jsonx.AppendString(append(b, `,"upstream_model":`...), r.upstreamModel)
	b = strconv.AppendInt(append(b, `,"weight":`...), int64(weight), 10)
	b = strconv.AppendInt(append(b, `,"priority":`...), int64(priority), 10)
	state, left := breaker.Closed, time.Duration(0)
	if circuit != "" && s.circuits != nil {
		state, left = s.circuits.set.State(circuit, now)
	}
	b = jsonx.AppendString(append(b, `,"circuit":`...), state.String())
	b = strconv.AppendInt(append(b, `,"circuit_retry_ms":`...), left.Milliseconds(), 10)
	if live != nil {
		st := live.set.set.State(live.i)
		b = strconv.AppendInt(append(b, `,"in_flight":`...), st.InFlight(), 10)
		b = strconv.AppendInt(append(b, `,"ttft_ewma_ms":`...), st.EWMA().Milliseconds(), 10)
		b = strconv.AppendBool(append(b, `,"resting":`...), live.set.set.Resting(live.i, now))
	}
	return append(b, '}')
}
