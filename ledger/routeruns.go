package ledger

import "github.com/agate-gateway/agate/internal/jsonx"

// A gateway's records come in runs of one route: the same key, team, client API,
// requested and served model, backend and deployment. The SQLite writer's three passes
// over a write's records each asked whether a record's texts were the record before's:
// the batch encoder (all seven, and the status, stream and error type: to name the route before), the rollups (key,
// team, model, deployment: to add to the row before) and the keys' ranges (the key).
// sameRoutes asks it once a record; each pass reads the answer, and compares texts only
// when given none (nil: the PostgreSQL writer's rollups, the pruner's rewrite).

// sameRoutes returns, in same's storage, whether each record's route texts — Key, Team,
// API, Model, Served, Backend and Deployment — are those of the record before it
// (same[0] is false).
func sameRoutes(recs []Record, same []bool) []bool {
	same = same[:0]
	for i := range recs {
		same = append(same, i > 0 && sameRouteTexts(&recs[i], &recs[i-1]))
	}
	return same
}

// sameRouteTexts reports whether r's route texts are prev's.
func sameRouteTexts(r, prev *Record) bool {
	return sameText(r.Key, prev.Key) && sameText(r.Team, prev.Team) && sameText(r.API, prev.API) &&
		sameText(r.Model, prev.Model) && sameText(r.Served, prev.Served) && sameText(r.Backend, prev.Backend) &&
		sameText(r.Deployment, prev.Deployment)
}

// sameText is a == b, without the call comparing their bytes when both are empty (the
// texts most records leave empty) or both are the same memory (a configured name, which
// every record of its route holds: jsonx.Equal).
func sameText(a, b string) bool { return jsonx.Equal(a, b) }
