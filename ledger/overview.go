package ledger

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// OverviewQuery selects an overview: the traffic of [From, To).
type OverviewQuery struct {
	From, To time.Time
	// Top is how many keys, models and errors to rank; default 5, at most 50.
	Top int
}

// Overview is the traffic of a time range: a time series from the rollups, the totals,
// the top keys, models and errors, and latency percentiles from the raw records.
type Overview struct {
	// Step is the series' bucket width: a minute for ranges up to 6 hours, an hour up
	// to 14 days, else a day (the rollup read).
	Step time.Duration
	// Series has one point a bucket that had traffic, oldest first.
	Series []OverviewPoint
	// Totals sums the range.
	Totals OverviewPoint
	// TopKeys and TopModels rank keys and models by cost, then requests; their Time is
	// zero.
	TopKeys, TopModels []OverviewPoint
	// TopErrors ranks the failed answers' statuses by count (from the rollup: exact), each
	// with its most frequent error type among the latency sample ("" when the sample has
	// none of that status).
	TopErrors []ErrorCount
	// Latency and FirstToken are percentiles (p50, p95, p99) of the request durations
	// and of the times to the first token (streams that had one) of the newest
	// LatencySample records of the range.
	Latency, FirstToken [3]time.Duration
	LatencySample       int
}

// OverviewPoint is the sums of a bucket (Time) or of a key or model (Name).
type OverviewPoint struct {
	Time                                                        time.Time
	Name                                                        string
	Requests, Errors                                            int64
	PromptTokens, CompletionTokens, CachedReadTokens, Reasoning int64
	CostUSD                                                     float64
	// TotalMS sums the requests' durations (its mean is TotalMS/Requests).
	TotalMS int64
}

// ErrorCount is how many answers of one status the range had, and their error type.
type ErrorCount struct {
	Status int
	Type   string
	Count  int64
}

// maxLatencySample bounds the records read for the latency percentiles.
const maxLatencySample = 20000

// Overview reports the traffic of q's range.
func (l *Ledger) Overview(ctx context.Context, q OverviewQuery) (Overview, error) {
	return l.st.overview(ctx, q)
}

func (s *store) overview(ctx context.Context, q OverviewQuery) (Overview, error) {
	var o Overview
	span := q.To.Sub(q.From)
	if span < time.Minute {
		return o, errors.New("ledger: the overview range is empty (to must be a minute or more after from)")
	}
	top := q.Top
	if top <= 0 {
		top = 5
	}
	top = min(top, 50)
	t := rollupTables[2]
	switch {
	case span <= 6*time.Hour:
		t = rollupTables[0]
	case span <= 14*24*time.Hour:
		t = rollupTables[1]
	}
	o.Step = time.Duration(t.width) * time.Second
	from, to := q.From.Unix(), q.To.Unix()
	from -= from % t.width // the bucket holding From

	keys, models := map[string]*OverviewPoint{}, map[string]*OverviewPoint{}
	failed := map[int]int64{}
	var err error
	if s.d.dollar { // PostgreSQL sums them (overview_grouped.go)
		err = s.overviewGrouped(ctx, t.name, from, to, &o, keys, models, failed)
	} else {
		err = s.overviewPass(ctx, t.name, from, to, &o, keys, models, failed)
	}
	if err != nil {
		return o, err
	}
	o.TopKeys, o.TopModels = ranked(keys, top), ranked(models, top)
	for st, n := range failed {
		o.TopErrors = append(o.TopErrors, ErrorCount{Status: st, Count: n})
	}
	slices.SortFunc(o.TopErrors, func(a, b ErrorCount) int {
		return cmp.Or(cmp.Compare(b.Count, a.Count), cmp.Compare(a.Status, b.Status))
	})
	o.TopErrors = o.TopErrors[:min(len(o.TopErrors), top)]
	// The newest records of the range: the latencies, and each status's error types.
	total, first := make([]int64, 0, 1024), make([]int64, 0, 1024)
	types := map[ErrorCount]int64{} // {status, type}: count
	add := func(sm latencySample) {
		total = append(total, sm.totalMS)
		if sm.firstMS > 0 {
			first = append(first, sm.firstMS)
		}
		if sm.e.Status >= 400 {
			types[sm.e]++
		}
	}
	if s.d.dollar {
		err = s.each(ctx, "SELECT total_ms, first_token_ms, status, error_type FROM ledger_requests WHERE ts_us >= ? AND ts_us < ?"+
			" ORDER BY ts_us DESC LIMIT "+strconv.Itoa(maxLatencySample), []any{q.From.UnixMicro(), q.To.UnixMicro()}, func(rows *sql.Rows) error {
			var sm latencySample
			err := rows.Scan(&sm.totalMS, &sm.firstMS, &sm.e.Status, &sm.e.Type)
			add(sm)
			return err
		})
	} else { // SQLite: from the batch rows (batchread.go)
		err = s.newestBatches(ctx, q.From.UnixMicro(), q.To.UnixMicro(), maxLatencySample, add)
	}
	if err != nil {
		return o, err
	}
	for i := range o.TopErrors {
		e := &o.TopErrors[i]
		var n int64
		for k, c := range types {
			if k.Status == e.Status && (c > n || c == n && k.Type < e.Type) {
				e.Type, n = k.Type, c
			}
		}
	}
	o.LatencySample = len(total)
	o.Latency, o.FirstToken = percentiles(total), percentiles(first)
	return o, nil
}

// overviewPass fills o's series and totals, keys, models and failed from table's rows of
// [from, to) in one pass over them (in bucket order: its primary key's), summed in
// memory (SQLite: a GROUP BY a query would read them once each).
func (s *store) overviewPass(ctx context.Context, table string, from, to int64, o *Overview,
	keys, models map[string]*OverviewPoint, failed map[int]int64) error {
	return s.each(ctx, "SELECT bucket, key_name, model, status, requests, errors, prompt_tokens, completion_tokens, cached_read_tokens, reasoning_tokens, cost_usd, total_ms FROM "+
		table+" WHERE bucket >= ? AND bucket < ? ORDER BY bucket", []any{from, to}, func(rows *sql.Rows) error {
		var bucket int64
		var key, model string
		var status int
		var p OverviewPoint
		if err := rows.Scan(&bucket, &key, &model, &status, &p.Requests, &p.Errors, &p.PromptTokens, &p.CompletionTokens,
			&p.CachedReadTokens, &p.Reasoning, &p.CostUSD, &p.TotalMS); err != nil {
			return err
		}
		if n := len(o.Series); n == 0 || o.Series[n-1].Time.Unix() != bucket {
			o.Series = append(o.Series, OverviewPoint{Time: time.Unix(bucket, 0).UTC()})
		}
		o.Series[len(o.Series)-1].add(&p)
		o.Totals.add(&p)
		for _, g := range [...]struct {
			m    map[string]*OverviewPoint
			name string
		}{{keys, key}, {models, model}} {
			e := g.m[g.name]
			if e == nil {
				e = &OverviewPoint{Name: g.name}
				g.m[g.name] = e
			}
			e.add(&p)
		}
		if status >= 400 {
			failed[status] += p.Requests
		}
		return nil
	})
}

// add sums q into p.
func (p *OverviewPoint) add(q *OverviewPoint) {
	p.Requests += q.Requests
	p.Errors += q.Errors
	p.PromptTokens += q.PromptTokens
	p.CompletionTokens += q.CompletionTokens
	p.CachedReadTokens += q.CachedReadTokens
	p.Reasoning += q.Reasoning
	p.CostUSD += q.CostUSD
	p.TotalMS += q.TotalMS
}

// ranked returns the top n of m by cost, then requests, then name.
func ranked(m map[string]*OverviewPoint, n int) []OverviewPoint {
	out := make([]OverviewPoint, 0, len(m))
	for _, p := range m {
		out = append(out, *p)
	}
	slices.SortFunc(out, func(a, b OverviewPoint) int {
		return cmp.Or(cmp.Compare(b.CostUSD, a.CostUSD), cmp.Compare(b.Requests, a.Requests), strings.Compare(a.Name, b.Name))
	})
	return out[:min(len(out), n)]
}

// each runs the overview's query q and calls row for each row of its answer.
func (s *store) each(ctx context.Context, q string, args []any, row func(*sql.Rows) error) error {
	rows, err := s.db.QueryContext(ctx, s.d.bind(q), args...)
	if err != nil {
		return fmt.Errorf("ledger: overview: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		if err := row(rows); err != nil {
			return fmt.Errorf("ledger: overview: %w", err)
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("ledger: overview: %w", err)
	}
	return nil
}

// percentiles returns the nearest-rank p50, p95 and p99 of ms (sorted in place), zero
// when it is empty.
func percentiles(ms []int64) [3]time.Duration {
	var out [3]time.Duration
	if len(ms) == 0 {
		return out
	}
	slices.Sort(ms)
	for i, p := range [3]int{50, 95, 99} {
		rank := (p*len(ms) + 99) / 100 // ceil(p/100 · n), 1-based
		out[i] = time.Duration(ms[max(rank, 1)-1]) * time.Millisecond
	}
	return out
}
