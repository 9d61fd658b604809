package ledger_test

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agate-gateway/agate/ledger"
)

// TestLedger_SQLiteFailedBatch: on SQLite a batch that fails part way (here a row a
// trigger refuses, added by another connection) leaves nothing behind, neither its
// records written before the refused one nor its rollups; it goes to the spool, the
// writer's connection serves the next batches, and once the refusal is gone the spool
// is written back: every record once, the rollups counting each once.
func TestLedger_SQLiteFailedBatch(t *testing.T) {
	dsn := ledger.FreshSQLite(t)
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
	exec(`CREATE TRIGGER refuse BEFORE INSERT ON ledger_request_batches WHEN NEW.data LIKE '%"refused"%'
		BEGIN SELECT RAISE(ABORT, 'refused by the test'); END`)
	for i, id := range []string{"a", "b", "refused", "c"} { // one batch row; then its keys' ranges and rollups
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
// type, deployment, trace id, continued from) are stored as empty strings, never NULL,
// and set ones as they are.
func TestLedger_SQLiteEmptyTexts(t *testing.T) {
	dsn := ledger.FreshSQLite(t)
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

// TestLedger_SQLiteWriterValues: every value the SQLite writer binds itself (integers,
// floats, booleans, texts from its C buffer, NULLs) reads back as it was written, in
// batches whose texts are several times the buffer's first size (64 KB), cut into
// statements of every size (300 = 256 + 16 + 4 × 7), and in a batch after them whose
// texts are short again.
func TestLedger_SQLiteWriterValues(t *testing.T) {
	l := open(t, ledger.Options{Type: "sqlite", DSN: ledger.FreshSQLite(t), FlushInterval: time.Hour,
		CaptureContent: true, MaxContentBytes: 2048})
	var want []ledger.Record
	add := func(n int, long bool) {
		for i := range n {
			k := len(want)
			r := ledger.Record{Time: day0.Add(time.Duration(k) * time.Millisecond), RequestID: fmt.Sprintf("req-%d", k),
				Key: fmt.Sprintf("key-%d", k%7), Team: "team", API: "responses", Model: "m", Served: "m", Backend: "b",
				Stream: k%2 == 0, Status: 200 + k%3, PromptTokens: int64(k) << 33, CachedReadTokens: 1, CacheWriteTokens: 2,
				CompletionTokens: 3, ReasoningTokens: 4, CostUSD: float64(k) / 3, Estimated: k%3 == 0,
				Total: time.Duration(k) * time.Millisecond, FirstToken: time.Millisecond, Upstream: 2 * time.Millisecond,
				ToolCalls: k % 4, Fallbacks: k % 2, CacheHit: k%5 == 0, Deployment: "b/m", TraceID: "0123456789abcdef0123456789abcdef",
				ContinuedFrom: "", AttemptsOmitted: k % 3, ToolsOmitted: k % 2}
			if long {
				r.Prompt = strings.Repeat("the cat sat on the mat ", 89)[:2040-i%9] // words: not masked
				r.Completion = "é" + strings.Repeat("z", i)
			}
			if i%5 == 1 {
				r.Attempts = []ledger.Attempt{{Backend: "b", Deployment: "b/m", Model: "m", Status: 429, ErrorType: "rate_limit_exceeded"}}
			}
			if i%7 == 2 {
				r.Tools = []ledger.ToolUse{{Name: "search", Source: "web", Calls: 2, Errors: 1}}
			}
			if !l.Add(r) {
				t.Fatal("a record was dropped")
			}
			want = append(want, r)
		}
		flush(t, l)
	}
	add(300, true)
	add(300, true)
	add(21, false)
	got, _, err := l.Requests(context.Background(), ledger.RequestQuery{Limit: 1000})
	if err != nil || len(got) != len(want) {
		t.Fatalf("%d records, %v; want %d", len(got), err, len(want))
	}
	for i, g := range got {
		w := want[len(want)-1-i] // newest first
		if (g.AttemptsJSON != "") != (len(w.Attempts) > 0) || (g.ToolsJSON != "") != (len(w.Tools) > 0) {
			t.Errorf("record %s: attempts %q, tools %q; want %d attempts, %d tools", w.RequestID, g.AttemptsJSON, g.ToolsJSON, len(w.Attempts), len(w.Tools))
		}
		g.ID, g.AttemptsJSON, g.ToolsJSON, w.Attempts, w.Tools = 0, "", "", nil, nil
		w.Time = w.Time.UTC()
		if diff := cmp.Diff(w, g); diff != "" {
			t.Fatalf("record %s read back (-written +read):\n%s", w.RequestID, diff)
		}
	}
}
