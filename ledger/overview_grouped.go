package ledger

import (
	"context"
	"database/sql"
	"slices"
	"time"
)

// overviewSets is the PostgreSQL overview's rollup read: one scan of the range, summed by
// the database into four groupings (GROUPING SETS), so that the answer is a row a bucket,
// key, model and status rather than a row a bucket × key × team × model × status ×
// deployment (157,000 rows for 30 days in the volume test, whose transfer was most of
// the overview's time). GROUPING(...) tells the sets apart: a bit a column, set for the
// columns the row is not grouped by, bucket the highest.
func overviewSets(table string) string {
	return "SELECT GROUPING(bucket, key_name, model, status), COALESCE(bucket, 0), COALESCE(key_name, ''), COALESCE(model, ''), COALESCE(status, 0), " +
		"SUM(requests)::bigint, SUM(errors)::bigint, SUM(prompt_tokens)::bigint, SUM(completion_tokens)::bigint, SUM(cached_read_tokens)::bigint, " +
		"SUM(reasoning_tokens)::bigint, SUM(cost_usd), SUM(total_ms)::bigint FROM " + table + " WHERE bucket >= ? AND bucket < ? " +
		"GROUP BY GROUPING SETS ((bucket), (key_name), (model), (status))"
}

// The GROUPING values of overviewSets' sets.
const (
	byBucket = 0b0111
	byKey    = 0b1011
	byModel  = 0b1101
	byStatus = 0b1110
)

// overviewGrouped fills o's series and totals, keys, models and failed (statuses of 400
// and over) from table's rows of [from, to), summed by the database: what the in-memory
// pass of overview computes, in the same form.
func (s *store) overviewGrouped(ctx context.Context, table string, from, to int64, o *Overview,
	keys, models map[string]*OverviewPoint, failed map[int]int64) error {
	err := s.each(ctx, overviewSets(table), []any{from, to}, func(rows *sql.Rows) error {
		var set int
		var bucket int64
		var key, model string
		var status int
		var p OverviewPoint
		if err := rows.Scan(&set, &bucket, &key, &model, &status, &p.Requests, &p.Errors, &p.PromptTokens, &p.CompletionTokens,
			&p.CachedReadTokens, &p.Reasoning, &p.CostUSD, &p.TotalMS); err != nil {
			return err
		}
		switch set {
		case byBucket:
			p.Time = time.Unix(bucket, 0).UTC()
			o.Series = append(o.Series, p)
			o.Totals.add(&p)
		case byKey:
			p.Name = key
			keys[key] = &p
		case byModel:
			p.Name = model
			models[model] = &p
		case byStatus:
			if status >= 400 {
				failed[status] += p.Requests
			}
		}
		return nil
	})
	slices.SortFunc(o.Series, func(a, b OverviewPoint) int { return a.Time.Compare(b.Time) })
	return err
}
