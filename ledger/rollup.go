package ledger

import "time"

// rollupRow is one row of a rollup table: a bucket's sums for one key, team, model,
// status and deployment.
type rollupRow struct {
	rollupKey
	requests, errors                                      int64
	prompt, cachedRead, cacheWrite, completion, reasoning int64
	costUSD                                               float64
	totalMS                                               int64
}

// rollupRows are one table's rows.
type rollupRows []rollupRow

type rollupKey struct {
	bucket                       int64
	key, team, model, deployment string
	status                       int
}

// rollup sums recs into the rows of each rollup table (rollupTables' order). A record's
// model is the model that answered, else the one requested.
func rollup(recs []Record) []rollupRows { return rollupWith(recs, nil, anonymous{}) }

// anonymous are requests refused before a key was known (401): n of them, counted in
// the rollups only (key, team and model "", status 401), in the buckets of at.
type anonymous struct {
	n  int64
	at time.Time
}

// rollupWith is rollup with the anonymous refusals added; same are sameRoutes' answers
// for recs (nil: the records' keys compared here). The records are summed into the
// finest table's rows, and each coarser table's rows are summed from the finer one's
// (far fewer than the records).
func rollupWith(recs []Record, same []bool, anon anonymous) []rollupRows {
	out := make([]rollupRows, len(rollupTables))
	var rows rollupRows
	index := make(map[rollupKey]int, 8)
	width := rollupTables[0].width
	if anon.n > 0 {
		sec := anon.at.Unix()
		k := rollupKey{bucket: sec - sec%width, status: 401}
		index[k] = 0
		rows = append(rows, rollupRow{rollupKey: k, requests: anon.n, errors: anon.n})
	}
	// last is the row of the record before: a gateway's records come in runs of the same
	// key, model and status, and comparing keys costs less than hashing one.
	last := -1
	for i := range recs {
		r := &recs[i]
		sec := r.Time.Unix()
		bucket := sec - sec%width
		j := last
		// The row before is the record before's: with its route's texts (same), the
		// record's key is the row's when its status and bucket are.
		if j < 0 || same == nil || !same[i] || rows[j].status != r.Status || rows[j].bucket != bucket {
			model := r.Served
			if model == "" {
				model = r.Model
			}
			k := rollupKey{bucket, r.Key, r.Team, model, r.Deployment, r.Status}
			if j < 0 || rows[j].rollupKey != k {
				var ok bool
				if j, ok = index[k]; !ok {
					j = len(rows)
					index[k] = j
					rows = append(rows, rollupRow{rollupKey: k})
				}
				last = j
			}
		}
		// Added field by field: a rollupRow of the record's, built to be added, was
		// most of this loop's cost.
		o := &rows[j]
		o.requests++
		o.errors += errorCount(r.Status)
		o.prompt += r.PromptTokens
		o.cachedRead += r.CachedReadTokens
		o.cacheWrite += r.CacheWriteTokens
		o.completion += r.CompletionTokens
		o.reasoning += r.ReasoningTokens
		o.costUSD += r.CostUSD
		o.totalMS += r.Total.Milliseconds()
	}
	out[0] = rows
	for ti := 1; ti < len(rollupTables); ti++ {
		out[ti] = coarsen(out[ti-1], rollupTables[ti].width)
	}
	return out
}

// coarsen sums rows into buckets of width seconds (a multiple of theirs).
func coarsen(rows rollupRows, width int64) rollupRows {
	var out rollupRows
	index := make(map[rollupKey]int, len(rows))
	for i := range rows {
		k := rows[i].rollupKey
		k.bucket -= k.bucket % width
		j, ok := index[k]
		if !ok {
			j = len(out)
			index[k] = j
			out = append(out, rollupRow{rollupKey: k})
		}
		out[j].add(&rows[i])
	}
	return out
}

// add adds r's sums to o's.
func (o *rollupRow) add(r *rollupRow) {
	o.requests += r.requests
	o.errors += r.errors
	o.prompt += r.prompt
	o.cachedRead += r.cachedRead
	o.cacheWrite += r.cacheWrite
	o.completion += r.completion
	o.reasoning += r.reasoning
	o.costUSD += r.costUSD
	o.totalMS += r.totalMS
}

// errorCount is 1 for an error status (400 and over), else 0.
func errorCount(status int) int64 {
	if status >= 400 {
		return 1
	}
	return 0
}
