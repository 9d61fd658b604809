package ledger_test

import (
	"context"
	"fmt"
	"path/filepath"
	"reflect"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agate-gateway/agate/ledger"
	"github.com/agate-gateway/agate/ledger/pgtest"
)

// databases runs fn against a fresh SQLite file and a fresh PostgreSQL database.
// databases runs fn on a SQLite ledger at the current schema (ledger.FreshSQLite) and on
// a fresh PostgreSQL database.
func databases(t *testing.T, fn func(t *testing.T, opts ledger.Options)) {
	databasesFrom(t, ledger.FreshSQLite, fn)
}

// databasesFrom is databases with the SQLite file's path from sqlitePath.
func databasesFrom(t *testing.T, sqlitePath func(testing.TB) string, fn func(t *testing.T, opts ledger.Options)) {
	t.Run("sqlite", func(t *testing.T) {
		fn(t, ledger.Options{Type: "sqlite", DSN: sqlitePath(t)})
	})
	t.Run("postgres", func(t *testing.T) {
		fn(t, ledger.Options{Type: "postgres", DSN: ledger.Postgres.NewDatabase(t)})
	})
}

type drops struct {
	mu sync.Mutex
	n  map[string]int
}

func (d *drops) add(reason string, n int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.n == nil {
		d.n = map[string]int{}
	}
	d.n[reason] += n
}

func (d *drops) get(reason string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.n[reason]
}

func open(t *testing.T, opts ledger.Options) *ledger.Ledger {
	t.Helper()
	l, err := ledger.Open(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close(context.Background()) })
	return l
}

func flush(t *testing.T, l *ledger.Ledger) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := l.Flush(ctx); err != nil {
		t.Fatal(err)
	}
}

var day0 = time.Date(2026, 11, 2, 0, 0, 0, 0, time.UTC)

// sample are records over two days, two keys, two teams, two models, with errors.
func sample() []ledger.Record {
	return []ledger.Record{
		{Time: day0.Add(10*time.Hour + 5*time.Second), RequestID: "r1", Key: "alice", Team: "eng", API: "chat", Model: "fast", Served: "fast",
			Backend: "openai", Status: 200, PromptTokens: 100, CachedReadTokens: 40, CompletionTokens: 20, ReasoningTokens: 5,
			CostUSD: 0.001, Total: 1500 * time.Millisecond, FirstToken: 200 * time.Millisecond, Upstream: 100 * time.Millisecond, CacheHit: true},
		{Time: day0.Add(10*time.Hour + 30*time.Second), RequestID: "r2", Key: "alice", Team: "eng", API: "messages", Model: "smart", Served: "fast",
			Backend: "anthropic", Stream: true, Status: 200, PromptTokens: 10, CacheWriteTokens: 8, CompletionTokens: 2, CostUSD: 0.0002,
			Fallbacks: 1, ToolCalls: 2, Total: 300 * time.Millisecond},
		{Time: day0.Add(11 * time.Hour), RequestID: "r3", Key: "bob", Team: "ops", API: "responses", Model: "smart", Backend: "anthropic",
			Status: 429, ErrorType: "insufficient_quota", Total: time.Millisecond},
		{Time: day0.Add(26 * time.Hour), RequestID: "r4", Key: "bob", Team: "ops", API: "chat", Model: "smart", Served: "smart", Backend: "anthropic",
			Stream: true, Status: 499, PromptTokens: 7, CompletionTokens: 3, Estimated: true, CostUSD: 0.00003, Total: 2 * time.Second},
	}
}

func TestLedger_RecordsAndRollups(t *testing.T) {
	databases(t, func(t *testing.T, opts ledger.Options) {
		l := open(t, opts)
		for _, r := range sample() {
			if !l.Add(r) {
				t.Fatal("Add dropped a record")
			}
		}
		flush(t, l)
		ctx := context.Background()

		recs, next, err := l.Requests(ctx, ledger.RequestQuery{})
		if err != nil {
			t.Fatal(err)
		}
		if next != "" || len(recs) != 4 {
			t.Fatalf("got %d records, next %q; want 4 and no next page", len(recs), next)
		}
		want := sample()
		for i := range recs { // newest first
			w := want[len(want)-1-i]
			w.ID = recs[i].ID
			w.Time = w.Time.UTC()
			if diff := cmp.Diff(w, recs[i]); diff != "" {
				t.Errorf("record %d (-want +got):\n%s", i, diff)
			}
		}

		// Pagination: two pages of two, the second ends the listing.
		p1, c1, err := l.Requests(ctx, ledger.RequestQuery{Limit: 2})
		if err != nil || len(p1) != 2 || c1 == "" {
			t.Fatalf("page 1: %d records, cursor %q, %v", len(p1), c1, err)
		}
		p2, c2, err := l.Requests(ctx, ledger.RequestQuery{Limit: 2, Cursor: c1})
		if err != nil || len(p2) != 2 || c2 != "" || p2[0].RequestID != "r2" || p2[1].RequestID != "r1" {
			t.Fatalf("page 2: %+v, cursor %q, %v", p2, c2, err)
		}
		// Filters.
		for _, tc := range []struct {
			name string
			q    ledger.RequestQuery
			want []string
		}{
			{"key", ledger.RequestQuery{Key: "bob"}, []string{"r4", "r3"}},
			{"team", ledger.RequestQuery{Team: "eng"}, []string{"r2", "r1"}},
			{"model", ledger.RequestQuery{Model: "smart"}, []string{"r4", "r3", "r2"}},
			{"status", ledger.RequestQuery{Status: 429}, []string{"r3"}},
			{"range", ledger.RequestQuery{From: day0.Add(10*time.Hour + 10*time.Second), To: day0.Add(24 * time.Hour)}, []string{"r3", "r2"}},
		} {
			got, _, err := l.Requests(ctx, tc.q)
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, r := range got {
				ids = append(ids, r.RequestID)
			}
			if diff := cmp.Diff(tc.want, ids); diff != "" {
				t.Errorf("%s filter (-want +got):\n%s", tc.name, diff)
			}
		}

		// Usage reports from each rollup: day-aligned ranges read the day table, others
		// the hour or minute table; all must agree.
		for _, rng := range []struct{ from, to time.Time }{
			{day0, day0.Add(48 * time.Hour)},                              // day
			{day0.Add(time.Hour), day0.Add(27 * time.Hour)},               // hour
			{day0.Add(time.Minute), day0.Add(26*time.Hour + time.Minute)}, // minute
		} {
			got, err := l.Usage(ctx, ledger.UsageQuery{From: rng.from, To: rng.to, GroupBy: []string{"key", "day"}})
			if err != nil {
				t.Fatal(err)
			}
			want := []ledger.UsageRow{
				{Key: "alice", Day: "2026-11-02", Requests: 2, PromptTokens: 110, CachedReadTokens: 40, CacheWriteTokens: 8, CompletionTokens: 22, ReasoningTokens: 5, CostUSD: 0.0012},
				{Key: "bob", Day: "2026-11-02", Requests: 1, Errors: 1},
				{Key: "bob", Day: "2026-11-03", Requests: 1, Errors: 1, PromptTokens: 7, CompletionTokens: 3, CostUSD: 0.00003},
			}
			if diff := cmp.Diff(want, got, cmp.Comparer(func(a, b float64) bool { return fmt.Sprintf("%.9f", a) == fmt.Sprintf("%.9f", b) })); diff != "" {
				t.Errorf("usage %s..%s (-want +got):\n%s", rng.from, rng.to, diff)
			}
		}
		// By model: the model that answered, else the one requested.
		got, err := l.Usage(ctx, ledger.UsageQuery{From: day0, To: day0.Add(48 * time.Hour), GroupBy: []string{"model", "status"}})
		if err != nil {
			t.Fatal(err)
		}
		var rows []string
		for _, r := range got {
			rows = append(rows, fmt.Sprintf("%s %d %d", r.Model, r.Status, r.Requests))
		}
		if diff := cmp.Diff([]string{"fast 200 2", "smart 429 1", "smart 499 1"}, rows); diff != "" {
			t.Errorf("usage by model, status (-want +got):\n%s", diff)
		}
		if _, err := l.Usage(ctx, ledger.UsageQuery{From: day0, To: day0.Add(time.Hour), GroupBy: []string{"prompt"}}); err == nil {
			t.Error("grouping by an unknown column: no error")
		}
	})
}

func TestLedger_Prune(t *testing.T) {
	databases(t, func(t *testing.T, opts ledger.Options) {
		now := day0.Add(50 * time.Hour)
		opts.Now = func() time.Time { return now }
		opts.Retention = 30 * time.Hour       // keeps r4 only
		opts.MinuteRetention = 30 * time.Hour // keeps r4's minute
		opts.HourRetention = 48 * time.Hour   // keeps r4's hour
		opts.DayRetention = 0                 // keeps every day
		l := open(t, opts)
		for _, r := range sample() {
			l.Add(r)
		}
		flush(t, l)
		ctx := context.Background()
		n, err := l.Prune(ctx)
		if err != nil {
			t.Fatal(err)
		}
		// 3 records and 2 minute rows (r1 and r2 share theirs: same minute, key, team,
		// served model and status; r3's); every hour is younger than 48h.
		if n != 3+2 {
			t.Errorf("pruned %d rows, want 5", n)
		}
		recs, _, _ := l.Requests(ctx, ledger.RequestQuery{})
		if len(recs) != 1 || recs[0].RequestID != "r4" {
			t.Errorf("records left: %+v", recs)
		}
		// The day rollups still have everything.
		u, err := l.Usage(ctx, ledger.UsageQuery{From: day0, To: day0.Add(48 * time.Hour)})
		if err != nil || len(u) != 1 || u[0].Requests != 4 {
			t.Errorf("day usage after pruning: %+v, %v", u, err)
		}
	})
}

func TestLedger_Migrations(t *testing.T) {
	// From an empty file, not FreshSQLite's migrated copy: the migrations themselves.
	emptyFile := func(t testing.TB) string { return filepath.Join(t.TempDir(), "ledger.db") }
	databasesFrom(t, emptyFile, func(t *testing.T, opts ledger.Options) {
		for range 2 { // the second open finds the schema current
			l, err := ledger.Open(context.Background(), opts)
			if err != nil {
				t.Fatal(err)
			}
			v, err := l.SchemaVersion(context.Background())
			if err != nil || v != 9 {
				t.Errorf("schema version %d, %v; want 9", v, err)
			}
			if err := l.Close(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
	})
}

func TestLedger_CloseDrainsAndLaterAddsDrop(t *testing.T) {
	var d drops
	opts := ledger.Options{Type: "sqlite", DSN: ledger.FreshSQLite(t), OnDrop: d.add, FlushInterval: time.Hour}
	l, err := ledger.Open(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5000 {
		l.Add(ledger.Record{Time: day0, RequestID: fmt.Sprint(i), Key: "k", Status: 200})
	}
	if err := l.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if l.Add(ledger.Record{Time: day0}) {
		t.Error("Add after Close queued a record")
	}
	if d.get("queue_full") != 1 {
		t.Errorf("drops %v, want one queue_full", d.n)
	}
	l = open(t, opts)
	u, err := l.Usage(context.Background(), ledger.UsageQuery{From: day0, To: day0.Add(24 * time.Hour)})
	if err != nil || len(u) != 1 || u[0].Requests != 5000 {
		t.Errorf("after Close: %+v, %v; want the 5000 queued records written", u, err)
	}
}

func TestLedger_CaptureContent(t *testing.T) {
	for _, tc := range []struct {
		name                   string
		capture                bool
		wantPrompt, wantAnswer string
	}{
		{"off", false, "", ""},
		{"on: masked and cut", true, "my key is sk-***", "abcdefghij"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := open(t, ledger.Options{Type: "sqlite", DSN: ledger.FreshSQLite(t), CaptureContent: tc.capture, MaxContentBytes: 10 + len("my key is sk-")})
			r := ledger.Record{Time: day0, Key: "k", Status: 200, Prompt: "my key is sk-proj-abcdefghijklmnopqrstuvwxyz0123456789",
				Completion: "abcdefghij"}
			l.Add(r)
			l.AddFrom(&recordFiller{r: r})
			flush(t, l)
			recs, _, err := l.Requests(context.Background(), ledger.RequestQuery{})
			if err != nil || len(recs) != 2 {
				t.Fatal(recs, err)
			}
			for i, r := range recs { // the newest, AddFrom's, first
				if r.Prompt != tc.wantPrompt || r.Completion != tc.wantAnswer {
					t.Errorf("%s: prompt %q completion %q; want %q %q", [2]string{"AddFrom", "Add"}[i], r.Prompt, r.Completion, tc.wantPrompt, tc.wantAnswer)
				}
			}
		})
	}
}

// TestLedger_Outage: while PostgreSQL is down, records are spooled to the local file
// and Ready says why; once it is back they are written, nothing lost.
func TestLedger_Outage(t *testing.T) {
	pg := pgtest.Start(t)
	var d drops
	l := open(t, ledger.Options{Type: "postgres", DSN: pg.NewDatabase(t), SpoolPath: filepath.Join(t.TempDir(), "spool"),
		OnDrop: d.add, FlushInterval: time.Hour})
	l.Add(ledger.Record{Time: day0, RequestID: "before", Key: "k", Status: 200, PromptTokens: 1})
	flush(t, l)
	pg.Stop()
	for i := range 3 {
		l.Add(ledger.Record{Time: day0, RequestID: fmt.Sprint("during", i), Key: "k", Status: 200, PromptTokens: 10})
		flush(t, l)
	}
	if err := l.Ready(); err == nil {
		t.Fatal("Ready is nil while the database is down")
	} else {
		t.Logf("Ready while down: %v", err)
	}
	pg.Restart(t)
	flush(t, l) // the writer writes the spool back
	if err := l.Ready(); err != nil {
		t.Errorf("Ready after the database came back: %v", err)
	}
	u, err := l.Usage(context.Background(), ledger.UsageQuery{From: day0, To: day0.Add(24 * time.Hour)})
	if err != nil || len(u) != 1 || u[0].Requests != 4 || u[0].PromptTokens != 31 {
		t.Errorf("usage after the outage: %+v, %v; want 4 requests, 31 prompt tokens", u, err)
	}
	if len(d.n) != 0 {
		t.Errorf("drops %v, want none", d.n)
	}
}

// BenchmarkLedger_Add is the request path's cost of the ledger: one Add of a record,
// the writer taking the queue meanwhile (a database on SQLite in a temporary file).
func BenchmarkLedger_Add(b *testing.B) {
	l, err := ledger.Open(context.Background(), ledger.Options{Type: "sqlite", DSN: filepath.Join(b.TempDir(), "ledger.db"), QueueSize: 1 << 20})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close(context.Background())
	r := sample()[0]
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		l.Add(r)
	}
}

// recordFiller is a ledger.Filler that fills r, counting its calls and noting whether
// the record it was given held zeros.
type recordFiller struct {
	r       ledger.Record
	calls   int
	notZero bool
}

func (f *recordFiller) FillRecord(dst *ledger.Record) {
	f.calls++
	if !reflect.ValueOf(*dst).IsZero() {
		f.notZero = true
	}
	*dst = f.r
}

// TestLedger_AddFrom: AddFrom's filler is given a record of zeros in the queue (new
// blocks', and blocks the writer cleared and recycled: three rounds of 600 records in
// blocks of 256, flushed after each), its attempts are copied (the filler's array is
// rewritten after each call), and it is not called when the record is dropped (a
// closed ledger).
func TestLedger_AddFrom(t *testing.T) {
	l := open(t, ledger.Options{Type: "sqlite", DSN: ledger.FreshSQLite(t), BatchSize: 256, FlushInterval: time.Hour})
	var reused [2]ledger.Attempt
	f := &recordFiller{}
	const rounds, n = 3, 600
	for round := range rounds {
		for i := range n {
			id := strconv.Itoa(round*n + i)
			reused[0] = ledger.Attempt{Backend: "b", Deployment: "b/m", Model: "m" + id, Status: 200}
			f.r = ledger.Record{Time: day0, RequestID: id, Key: "k", API: "chat", Model: "m", Status: 200, Attempts: reused[:1],
				Tools: []ledger.ToolUse{{Name: "t", Calls: 1}}}
			if i%2 == 1 {
				f.r.Attempts, f.r.Tools = nil, nil // a slot that held attempts and tools before must be cleared
			}
			if !l.AddFrom(f) {
				t.Fatal("a record was dropped")
			}
			reused[0] = ledger.Attempt{Model: "overwritten"}
		}
		flush(t, l)
	}
	if f.calls != rounds*n || f.notZero {
		t.Errorf("filler called %d times (want %d), given a record not zero: %v", f.calls, rounds*n, f.notZero)
	}
	recs, _, err := l.Requests(context.Background(), ledger.RequestQuery{Limit: 1000, From: day0})
	if err != nil || len(recs) != 1000 {
		t.Fatalf("%d records, %v; want the newest 1000", len(recs), err)
	}
	for _, r := range recs {
		i, _ := strconv.Atoi(r.RequestID)
		want, wantTools := "", ""
		if i%n%2 == 0 {
			want = `[{"backend":"b","deployment":"b/m","model":"m` + r.RequestID +
				`","status":200,"error_type":"","duration_ms":0,"continued":false,"prompt_tokens":0,"completion_tokens":0}]`
			wantTools = `[{"name":"t","source":"","count":1,"errors":0,"duration_ms":0}]`
		}
		if r.AttemptsJSON != want || r.ToolsJSON != wantTools {
			t.Errorf("record %d: attempts %s tools %s, want %s %s", i, r.AttemptsJSON, r.ToolsJSON, want, wantTools)
		}
	}
	if err := l.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	calls := f.calls
	if l.AddFrom(f) || f.calls != calls {
		t.Errorf("AddFrom on a closed ledger: queued, or called the filler (%d calls, want %d)", f.calls, calls)
	}
}
