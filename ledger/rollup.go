package ledger

import "time"

// rollupRow is one row of a rollup table: a bucket's sums for one key, team, model,
// status and deployment.
type rollupRow struct {
	bucket                                                int64
	key, team, model, deployment                          string
	status                                                int
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
func rollup(recs []Record) []rollupRows { return rollupWith(recs, anonymous{}) }

// anonymous are requests refused before a key was known (401): n of them, counted in
// the rollups only (key, team and model "", status 401), in the buckets of at.
type anonymous struct {
	n  int64
	at time.Time
}

// rollupWith is rollup with the anonymous refusals added.
func rollupWith(recs []Record, anon anonymous) []rollupRows {
	out := make([]rollupRows, len(rollupTables))
	for ti, t := range rollupTables {
		index := make(map[rollupKey]int, 8)
		if anon.n > 0 {
			sec := anon.at.Unix()
			index[rollupKey{bucket: sec - sec%t.width, status: 401}] = 0
			out[ti] = append(out[ti], rollupRow{bucket: sec - sec%t.width, status: 401, requests: anon.n, errors: anon.n})
		}
		for i := range recs {
			r := &recs[i]
			model := r.Served
			if model == "" {
				model = r.Model
			}
			sec := r.Time.Unix()
			k := rollupKey{sec - sec%t.width, r.Key, r.Team, model, r.Deployment, r.Status}
			j, ok := index[k]
			if !ok {
				j = len(out[ti])
				index[k] = j
				out[ti] = append(out[ti], rollupRow{bucket: k.bucket, key: k.key, team: k.team, model: k.model, deployment: k.deployment, status: k.status})
			}
			row := &out[ti][j]
			row.requests++
			if r.Status >= 400 {
				row.errors++
			}
			row.prompt += r.PromptTokens
			row.cachedRead += r.CachedReadTokens
			row.cacheWrite += r.CacheWriteTokens
			row.completion += r.CompletionTokens
			row.reasoning += r.ReasoningTokens
			row.costUSD += r.CostUSD
			row.totalMS += r.Total.Milliseconds()
		}
	}
	return out
}
