package ledger_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
	"time"

	"github.com/agate-gateway/agate/ledger"
)

// TestLedger_SQLiteFailedBatch: on SQLite a batch that fails part way (here a row a
// trigger refuses, added by another connection) leaves nothing behind, neither its
// records written before the refused one nor its rollups; it goes to the spool, the
// writer's connection serves the next batches, and once the refusal is gone the spool
// is written back: every record once, the rollups counting each once.
func TestLedger_SQLiteFailedBatch(t *testing.T) {
	dsn := filepath.Join(t.TempDir(), "ledger.db")
	var d drops
	l := open(t, ledger.Options{Type: "sqlite", DSN: dsn, SpoolPath: filepath.Join(t.TempDir(), "spool"),
		OnDrop: d.add, FlushInterval: time.Hour})
	db, err := sql.Open("sqlite", "file:"+dsn+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	exec := func(q string) {
		t.Helper()
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	rec := func(id string, tokens int64) ledger.Record {
		return ledger.Record{Time: day0, RequestID: id, Key: "k", API: "chat", Model: "m", Status: 200, PromptTokens: tokens}
	}
	count := func() (n int) {
		t.Helper()
		if err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM ledger_requests`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}

	l.Add(rec("first", 1))
	flush(t, l)
	exec(`CREATE TRIGGER refuse BEFORE INSERT ON ledger_requests WHEN NEW.request_id = 'refused'
		BEGIN SELECT RAISE(ABORT, 'refused by the test'); END`)
	for i, id := range []string{"a", "b", "refused", "c"} { // a 4-row statement: a and b go before the refusal
		l.Add(rec(id, int64(10<<i)))
	}
	flush(t, l)
	if err := l.Ready(); err == nil {
		t.Fatal("Ready is nil after a batch failed")
	}
	if n := count(); n != 1 {
		t.Fatalf("%d records after the failed batch, want 1 (none of the batch)", n)
	}
	l.Add(rec("after", 1000)) // the next batch fails too while the trigger is there
	flush(t, l)
	exec(`DROP TRIGGER refuse`)
	l.Add(rec("last", 10000))
	flush(t, l) // writes the new batch, then the spool back
	if err := l.Ready(); err != nil {
		t.Errorf("Ready after the refusal was dropped: %v", err)
	}
	if n := count(); n != 7 {
		t.Errorf("%d records, want 7", n)
	}
	u, err := l.Usage(ctx, ledger.UsageQuery{From: day0, To: day0.Add(time.Hour)})
	if err != nil || len(u) != 1 || u[0].Requests != 7 || u[0].PromptTokens != 1+10+20+40+80+1000+10000 {
		t.Errorf("usage %+v, %v; want 7 requests, 11151 prompt tokens", u, err)
	}
	if len(d.n) != 0 {
		t.Errorf("drops %v, want none", d.n)
	}
}

// TestLedger_SQLiteEmptyTexts: the texts most records leave empty (served model, error
// type, deployment, trace id, continued from), which the SQLite writer binds as NULL and
// coalesces, are stored as empty strings, never NULL, and set ones as they are.
func TestLedger_SQLiteEmptyTexts(t *testing.T) {
	dsn := filepath.Join(t.TempDir(), "ledger.db")
	l := open(t, ledger.Options{Type: "sqlite", DSN: dsn, FlushInterval: time.Hour})
	empty := ledger.Record{Time: day0, RequestID: "empty", Key: "k", API: "chat", Model: "m", Status: 200}
	set := empty
	set.RequestID, set.Served, set.ErrorType, set.Deployment, set.TraceID, set.ContinuedFrom, set.Status =
		"set", "m2", "rate_limit_exceeded", "up/m2", "0123456789abcdef0123456789abcdef", "m1", 429
	for _, r := range []ledger.Record{empty, set} {
		if !l.Add(r) {
			t.Fatal("a record was dropped")
		}
	}
	flush(t, l)
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var nulls int
	if err := db.QueryRow(`SELECT count(*) FROM ledger_requests WHERE served_model IS NULL OR error_type IS NULL
		OR deployment IS NULL OR trace_id IS NULL OR continued_from IS NULL`).Scan(&nulls); err != nil || nulls != 0 {
		t.Errorf("%d records with a NULL text, %v; want none", nulls, err)
	}
	recs, _, err := l.Requests(context.Background(), ledger.RequestQuery{})
	if err != nil || len(recs) != 2 {
		t.Fatalf("%d records, %v", len(recs), err)
	}
	for _, r := range recs {
		want := empty
		if r.RequestID == "set" {
			want = set
		}
		if r.Served != want.Served || r.ErrorType != want.ErrorType || r.Deployment != want.Deployment ||
			r.TraceID != want.TraceID || r.ContinuedFrom != want.ContinuedFrom {
			t.Errorf("record %s: served %q, error %q, deployment %q, trace %q, continued from %q; want %q, %q, %q, %q, %q",
				r.RequestID, r.Served, r.ErrorType, r.Deployment, r.TraceID, r.ContinuedFrom,
				want.Served, want.ErrorType, want.Deployment, want.TraceID, want.ContinuedFrom)
		}
	}
}
