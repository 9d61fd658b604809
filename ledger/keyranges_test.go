package ledger

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

var rangesDay = time.Date(2026, 11, 2, 0, 0, 0, 0, time.UTC)

// TestKeyRanges_Listing: on SQLite a key's records are listed through its ranges
// (ledger_request_keys, schema version 7) exactly as a scan would list them: newest
// first, every filter applied, page after page by cursor, across more ranges than one
// page of ranges (256) holds. 260 batches of three records: a rare key once a batch, a
// busy key twice (one of the two failed), one batch in ten out of time order.
func TestKeyRanges_Listing(t *testing.T) {
	ctx := context.Background()
	l, err := Open(ctx, Options{Type: "sqlite", DSN: FreshSQLite(t), FlushInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close(ctx)
	var all []Record // in id order
	for b := range 260 {
		at := rangesDay.Add(time.Duration(b) * time.Minute)
		if b%10 == 3 {
			at = rangesDay.Add(-time.Hour) // a spooled batch, written late
		}
		for i, key := range []string{"busy", "rare", "busy"} {
			r := Record{Time: at.Add(time.Duration(i) * time.Second), RequestID: fmt.Sprintf("r%d-%d", b, i), Key: key, Model: "m", Status: 200}
			if i == 2 {
				r.Status, r.ErrorType = 429, "rate_limit_exceeded"
			}
			if !l.Add(r) {
				t.Fatal("a record was dropped")
			}
			all = append(all, r)
		}
		if err := l.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name  string
		q     RequestQuery
		match func(r *Record) bool
	}{
		{"rare", RequestQuery{Key: "rare"}, func(r *Record) bool { return r.Key == "rare" }},
		{"busy, errors only", RequestQuery{Key: "busy", ErrorsOnly: true}, func(r *Record) bool { return r.Key == "busy" && r.Status >= 400 }},
		{"rare, in an hour", RequestQuery{Key: "rare", From: rangesDay.Add(30 * time.Minute), To: rangesDay.Add(90 * time.Minute)},
			func(r *Record) bool {
				return r.Key == "rare" && !r.Time.Before(rangesDay.Add(30*time.Minute)) && r.Time.Before(rangesDay.Add(90*time.Minute))
			}},
		{"rare, late batches", RequestQuery{Key: "rare", To: rangesDay}, func(r *Record) bool { return r.Key == "rare" && r.Time.Before(rangesDay) }},
		{"unknown key", RequestQuery{Key: "nobody"}, func(*Record) bool { return false }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var want []string
			for i := len(all) - 1; i >= 0; i-- {
				if tc.match(&all[i]) {
					want = append(want, all[i].RequestID)
				}
			}
			for _, limit := range []int{1000, 23} {
				var got []string
				q := tc.q
				q.Limit = limit
				for pages := 0; ; pages++ {
					recs, next, err := l.Requests(ctx, q)
					if err != nil {
						t.Fatal(err)
					}
					for _, r := range recs {
						got = append(got, r.RequestID)
					}
					if next == "" || pages > 200 {
						break
					}
					q.Cursor = next
				}
				if !slices.Equal(got, want) {
					t.Errorf("limit %d: %d records %v…, want %d %v…", limit, len(got), got[:min(5, len(got))], len(want), want[:min(5, len(want))])
				}
			}
		})
	}
}

// TestSchemaV7_MigratesVersion6: a version 6 SQLite database's records are listed by
// key after the migration (their ranges made from the records, a range per key and
// 1,024 ids), together with those written after it; the key index is gone and every
// query of a key's listing uses an index (EXPLAIN QUERY PLAN); pruning the records
// prunes the ranges left without records.
func TestSchemaV7_MigratesVersion6(t *testing.T) {
	ctx := context.Background()
	st, dsn := sqliteAtVersion(t, ctx, 6)
	var v6 []Record
	for i := range 2100 { // three ranges of ids (1,024) for each key
		v6 = append(v6, Record{Time: rangesDay.Add(time.Duration(i) * time.Second), RequestID: fmt.Sprintf("v6-%d", i),
			Key: []string{"a", "b", "c"}[i%3], Model: "m", Status: 200})
	}
	tx, err := st.db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	q := "INSERT INTO ledger_requests (" + strings.Join(columns[:], ", ") + ") VALUES (" +
		strings.TrimSuffix(strings.Repeat("?, ", len(columns)), ", ") + ")"
	// One prepared statement for every row: SQLite compiles the insert once, not once
	// a row (under -race that compile was most of this setup, #54).
	ins, err := tx.PrepareContext(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	for i := range v6 {
		if _, err := ins.ExecContext(ctx, insertArgs(nil, &v6[i])...); err != nil {
			t.Fatal(err)
		}
	}
	if err := ins.Close(); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	st.db.Close()

	now := rangesDay.Add(48 * time.Hour)
	l, err := Open(ctx, Options{Type: "sqlite", DSN: dsn, FlushInterval: time.Hour, Now: func() time.Time { return now }, Retention: 24 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close(ctx)
	if v, err := l.SchemaVersion(ctx); err != nil || v != len(sqliteDialect.migrations) { // 7, then 8 (batches.go)
		t.Fatalf("schema version %d, %v; want %d", v, err, len(sqliteDialect.migrations))
	}
	l.Add(Record{Time: now, RequestID: "v7", Key: "b", Model: "m", Status: 200})
	if err := l.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	recs, _, err := l.Requests(ctx, RequestQuery{Key: "b", Limit: 1000})
	if err != nil || len(recs) != 701 || recs[0].RequestID != "v7" || recs[1].RequestID != "v6-2098" || recs[700].RequestID != "v6-1" {
		t.Fatalf("key b's records after the migration: %d, %v", len(recs), err)
	}
	var ranges, index int
	db := l.st.db
	if err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM ledger_request_keys`).Scan(&ranges); err != nil || ranges != 3*3+1 {
		t.Errorf("%d ranges, %v; want 10", ranges, err)
	}
	if err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM sqlite_master WHERE name = 'ledger_requests_key'`).Scan(&index); err != nil || index != 0 {
		t.Errorf("the key index is still there (%d, %v)", index, err)
	}
	for _, p := range []struct{ q, want string }{
		{`SELECT first_id, last_id FROM ledger_request_keys WHERE key_name = ? AND first_id < ? AND last_id < ? AND last_us >= ? ORDER BY last_id DESC LIMIT 256`,
			"USING INDEX ledger_request_keys_key (key_name=? AND last_id<?)"},
		// Version 8: a key's range read from its batch rows by id (listRange), a listing
		// below a cursor (listBatches), the overview's newest records (newestBatches), the
		// pruner's straddling rows (trimBatches).
		{`SELECT first_id, last_us, data FROM ledger_request_batches WHERE last_id >= ? AND first_id <= ? AND last_id < ? ORDER BY last_id`,
			"USING INTEGER PRIMARY KEY (rowid>? AND rowid<?)"},
		{`SELECT first_id, last_us, data FROM ledger_request_batches WHERE first_id < ? AND last_id < ? ORDER BY last_id DESC`,
			"USING INTEGER PRIMARY KEY (rowid<?)"},
		{`SELECT first_id, last_us, data FROM ledger_request_batches WHERE last_us >= ? AND first_us < ? ORDER BY last_us DESC`,
			"USING INDEX ledger_request_batches_last_us (last_us>?)"},
		{`SELECT last_id, first_id, data FROM ledger_request_batches WHERE first_us < ? LIMIT 64`,
			"USING INDEX ledger_request_batches_first_us (first_us<?)"},
	} {
		plan := queryPlan(t, db, p.q)
		if !strings.Contains(plan, p.want) {
			t.Errorf("plan of %s:\n%s\nwant %q", p.q, plan, p.want)
		}
	}

	if _, err := l.Prune(ctx); err != nil { // every version 6 record is older than a day
		t.Fatal(err)
	}
	if err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM ledger_request_keys`).Scan(&ranges); err != nil || ranges != 1 {
		t.Errorf("%d ranges after pruning, %v; want 1 (v7's)", ranges, err)
	}
	if recs, _, err := l.Requests(ctx, RequestQuery{Key: "b"}); err != nil || len(recs) != 1 || recs[0].RequestID != "v7" {
		t.Errorf("key b's records after pruning: %+v, %v", recs, err)
	}
}

// queryPlan is SQLite's EXPLAIN QUERY PLAN of q (its ? bound to 0), one line a step.
func queryPlan(t *testing.T, db *sql.DB, q string) string {
	t.Helper()
	args := make([]any, strings.Count(q, "?"))
	for i := range args {
		args[i] = 0
	}
	rows, err := db.Query("EXPLAIN QUERY PLAN "+q, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var b strings.Builder
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatal(err)
		}
		b.WriteString(detail + "\n")
	}
	return b.String()
}

// sqliteAtVersion opens a new SQLite ledger database migrated to schema version n and no
// further, for the migration tests; it returns the store and the database's path.
func sqliteAtVersion(t *testing.T, ctx context.Context, n int) (*store, string) {
	t.Helper()
	dsn := filepath.Join(t.TempDir(), "ledger.db")
	d := sqliteDialect
	d.migrations = d.migrations[:n]
	st := &store{d: &d}
	var err error
	if st.db, err = sql.Open("sqlite", "file:"+dsn); err != nil {
		t.Fatal(err)
	}
	if err := st.migrate(ctx); err != nil {
		t.Fatal(err)
	}
	return st, dsn
}

// TestKeyRanges: each key's range is its first and last record in the batch and the
// bounds of their times, in order of first appearance, whether the keys come in runs,
// interleaved or back to one seen before.
func TestKeyRanges(t *testing.T) {
	at := time.Date(2026, 12, 7, 11, 0, 0, 0, time.UTC)
	for _, keys := range []string{"", "a", "aaaa", "ab", "aab", "abab", "aabba", "abcba", "a_a", "_"} {
		recs := make([]Record, len(keys))
		for i := range recs {
			// Times out of order: the bounds are the least and the greatest, not the ends.
			recs[i] = Record{Key: strings.TrimPrefix(string(keys[i]), "_"), Time: at.Add(time.Duration((i*7)%5) * time.Second)}
		}
		var want []keyRange
		place := map[string]int{}
		for i := range recs {
			us := recs[i].Time.UnixMicro()
			j, ok := place[recs[i].Key]
			if !ok {
				place[recs[i].Key] = len(want)
				want = append(want, keyRange{first: i, last: i, firstUS: us, lastUS: us})
				continue
			}
			want[j].last, want[j].firstUS, want[j].lastUS = i, min(want[j].firstUS, us), max(want[j].lastUS, us)
		}
		for _, same := range [][]bool{nil, sameRoutes(recs, nil)} { // the keys compared, or the runs given
			got := keyRanges(recs, unixMicros(recs), same, map[string]int{"stale": 9}, []keyRange{{first: 5}})
			if !reflect.DeepEqual(got, want) && (len(got) > 0 || len(want) > 0) {
				t.Errorf("keys %q (runs given %t): ranges %+v, want %+v", keys, same != nil, got, want)
			}
		}
	}
}
