package ledger

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// SpendQuery selects the spend budgets are re-seeded from: the buckets of the hour (or
// day) rollup since From, by key or by team, never the raw records.
type SpendQuery struct {
	// From is the earliest bucket's start (rounded down to the bucket).
	From time.Time
	// Team groups by team instead of key.
	Team bool
	// Daily reads the day rollup instead of the hour rollup (when the hour rollup's
	// retention is shorter than the history asked for).
	Daily bool
	// Names are the keys (or teams) to read; at most maxSpendNames, and empty means
	// none.
	Names []string
}

// Spend is one bucket's spend of one key (or team), summed over models and statuses.
type Spend struct {
	Name string
	// Bucket is the bucket's start.
	Bucket time.Time
	// Tokens are prompt plus completion tokens (what budgets count); CostUSD their cost.
	Tokens  int64
	CostUSD float64
}

// maxSpendNames bounds SpendQuery.Names: the names of one query's IN list.
const maxSpendNames = 500

// Spend returns the buckets with spend of q's names since q.From, by name then time.
func (l *Ledger) Spend(ctx context.Context, q SpendQuery) ([]Spend, error) {
	if len(q.Names) == 0 {
		return nil, nil
	}
	if len(q.Names) > maxSpendNames {
		return nil, fmt.Errorf("ledger: spend of %d names at once (at most %d)", len(q.Names), maxSpendNames)
	}
	table, width := rollupTables[1].name, rollupTables[1].width
	if q.Daily {
		table, width = rollupTables[2].name, rollupTables[2].width
	}
	col := "key_name"
	if q.Team {
		col = "team"
	}
	from := q.From.Unix()
	from -= from % width
	args := make([]any, 0, 1+len(q.Names))
	args = append(args, from)
	for _, n := range q.Names {
		args = append(args, n)
	}
	sqlq := "SELECT " + col + ", bucket, SUM(prompt_tokens + completion_tokens), SUM(cost_usd) FROM " + table +
		" WHERE bucket >= ? AND " + col + " IN (" + strings.TrimSuffix(strings.Repeat("?, ", len(q.Names)), ", ") + ")" +
		" GROUP BY " + col + ", bucket ORDER BY " + col + ", bucket"
	rows, err := l.st.db.QueryContext(ctx, l.st.d.bind(sqlq), args...)
	if err != nil {
		return nil, fmt.Errorf("ledger: reading spend: %w", err)
	}
	defer rows.Close()
	var out []Spend
	for rows.Next() {
		var s Spend
		var bucket int64
		if err := rows.Scan(&s.Name, &bucket, &s.Tokens, &s.CostUSD); err != nil {
			return nil, fmt.Errorf("ledger: reading spend: %w", err)
		}
		if s.Tokens <= 0 && s.CostUSD <= 0 {
			continue
		}
		s.Bucket = time.Unix(bucket, 0).UTC()
		out = append(out, s)
	}
	return out, rows.Err()
}
