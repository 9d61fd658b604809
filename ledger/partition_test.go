package ledger

import (
	"context"
	"database/sql"
	"sort"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestPartitions_MigrationAndRetention, on a real PostgreSQL: an existing install's
// records (schema version 3, one table) are moved into monthly partitions by the
// migration, ids kept and continued; a record of a month without a partition makes
// one; retention drops the months wholly older than it and deletes the rest of the
// boundary month in batches.
func TestPartitions_MigrationAndRetention(t *testing.T) {
	dsn := Postgres.NewDatabase(t)
	ctx := context.Background()
	at := func(s string) time.Time {
		tm, err := time.Parse(time.DateTime, s)
		if err != nil {
			t.Fatal(err)
		}
		return tm.UTC()
	}

	// An install of schema version 3, its records in one table.
	old := postgresDialect
	old.migrations = old.migrations[:3]
	st := &store{d: &old}
	var err error
	if st.db, err = sql.Open("pgx", dsn); err != nil {
		t.Fatal(err)
	}
	if err := st.migrate(ctx); err != nil {
		t.Fatal(err)
	}
	before := []Record{
		{Time: at("2026-09-15 10:00:00"), RequestID: "sep", Key: "k", Status: 200, PromptTokens: 1},
		{Time: at("2026-10-20 10:00:00"), RequestID: "oct", Key: "k", Status: 200, PromptTokens: 2},
		{Time: at("2026-11-30 23:59:59"), RequestID: "nov", Key: "k", Status: 200, PromptTokens: 3},
	}
	insertBeforeV5(t, st, before) // the writer of today writes version 5's columns
	st.db.Close()

	now := at("2026-12-06 12:00:00")
	l, err := Open(ctx, Options{Type: "postgres", DSN: dsn, Retention: 40 * 24 * time.Hour, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close(ctx)
	if v, _ := l.SchemaVersion(ctx); v != len(postgresDialect.migrations) {
		t.Fatalf("schema version %d after the migration, want %d", v, len(postgresDialect.migrations))
	}
	months := func() []string {
		t.Helper()
		parts, err := l.st.partitions(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, m := range parts {
			out = append(out, m.Format("2006-01"))
		}
		return out
	}
	ahead := monthStart(time.Now())
	wantAhead := []string{ahead.Format("2006-01"), ahead.AddDate(0, 1, 0).Format("2006-01"), ahead.AddDate(0, 2, 0).Format("2006-01")}
	want := append([]string{"2026-09", "2026-10", "2026-11"}, wantAhead...)
	if diff := cmp.Diff(dedupe(want), months()); diff != "" {
		t.Errorf("partitions after the migration (-want +got):\n%s", diff)
	}
	recs, _, err := l.Requests(ctx, RequestQuery{})
	if err != nil || len(recs) != 3 || recs[0].RequestID != "nov" || recs[0].ID != 3 {
		t.Fatalf("records after the migration: %+v, %v", recs, err)
	}

	// A record of a month long gone (a spooled batch, say) makes its partition; a new
	// record continues the ids.
	l.Add(Record{Time: at("2025-01-02 00:00:00"), RequestID: "jan25", Key: "k", Status: 200})
	l.Add(Record{Time: now, RequestID: "dec", Key: "k", Status: 200})
	if err := l.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if err := l.Ready(); err != nil {
		t.Fatalf("writing records of a month without a partition: %v", err)
	}
	recs, _, _ = l.Requests(ctx, RequestQuery{})
	if len(recs) != 5 || recs[0].ID <= 3 {
		t.Fatalf("records after writing two more: %+v", recs)
	}

	// Retention 40 days before 2026-12-06 12:00 is 2026-10-27 12:00: January 2025 and
	// September go whole, October's record by a delete; November and December stay.
	if _, err := l.Prune(ctx); err != nil {
		t.Fatal(err)
	}
	want = append([]string{"2026-10", "2026-11"}, wantAhead...)
	if diff := cmp.Diff(dedupe(want), months()); diff != "" {
		t.Errorf("partitions after pruning (-want +got):\n%s", diff)
	}
	recs, _, _ = l.Requests(ctx, RequestQuery{})
	var ids []string
	for _, r := range recs {
		ids = append(ids, r.RequestID)
	}
	if diff := cmp.Diff([]string{"dec", "nov"}, ids); diff != "" {
		t.Errorf("records after pruning (-want +got):\n%s", diff)
	}
}

// dedupe sorts s and drops repeats.
func dedupe(s []string) []string {
	sort.Strings(s)
	var out []string
	for _, v := range s {
		if len(out) == 0 || out[len(out)-1] != v {
			out = append(out, v)
		}
	}
	return out
}
