package ledger

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// oddRecords are records with every field set somewhere, and the texts and numbers a
// batch row must keep byte for byte: quotes, backslashes, control characters, invalid
// UTF-8, U+2028, '<', a NaN cost (stored null, read 0), times before 1970 and far
// apart, captured content, attempts and tools, defaults left out at the end.
func oddRecords() []Record {
	at := time.Date(2026, 11, 2, 10, 0, 0, 123456000, time.UTC)
	return []Record{
		{Time: at, RequestID: "plain", Key: "k", Team: "t", API: "chat", Model: "m", Served: "m", Backend: "b", Status: 200,
			PromptTokens: 10, CompletionTokens: 2, CostUSD: 0.25, Total: time.Second, Deployment: "b/x"},
		{Time: at.Add(time.Millisecond), RequestID: "q\"u\\o\x00te\x1f\n\t\r", Key: "k\xff\xfe", Team: "<team>&", API: "responses",
			Model: "m\u2028", Served: "", Backend: "b", Stream: true, Status: 499, ErrorType: "client_closed",
			PromptTokens: math.MaxInt64, CachedReadTokens: 1, CacheWriteTokens: 2, CompletionTokens: 3, ReasoningTokens: 4,
			CostUSD: math.NaN(), Estimated: true, Total: 3 * time.Millisecond, FirstToken: 2 * time.Millisecond,
			Upstream: time.Millisecond, ToolCalls: 7, Fallbacks: 2, CacheHit: true, Prompt: "what is \"x\"?\n",
			Completion: "x\x01", Deployment: "b/y", TraceID: "0af7651916cd43dd8448eb211c80319c", ContinuedFrom: "m",
			Attempts:        []Attempt{{Backend: "b", Deployment: "b/y", Model: "m", Status: 503, ErrorType: "server_error", Duration: time.Second}},
			AttemptsOmitted: 3, Tools: []ToolUse{{Name: "search", Source: "web", Calls: 2, Errors: 1, Duration: time.Second}}, ToolsOmitted: 1},
		{Time: time.UnixMicro(-1).UTC(), RequestID: "", Status: 1e6, CostUSD: 1e300},
		{Time: at.Add(-240 * time.Hour), RequestID: "old", Key: "k", Model: "m", Status: 429, ErrorType: "rate_limit_exceeded", CostUSD: -1},
	}
}

// storedAs is r as a reader returns it after a write with id (stored, pgcopy_test.go),
// a cost that is not finite as 0.
func storedAs(r Record, id int64) Record {
	cost := r.CostUSD
	r = stored(r)
	r.ID, r.Time = id, r.Time.UTC()
	if math.IsNaN(cost) || math.IsInf(cost, 0) {
		r.CostUSD = 0
	}
	return r
}

// TestBatch_RoundTrip: a batch row reads back as it was written, every field, in every
// place, in form 9 (the writer's) and form 8 (the rows a version 8 database holds); a
// pruned place is skipped and keeps the others' ids.
func TestBatch_RoundTrip(t *testing.T) {
	recs := oddRecords()
	// A record whose one attempt is its route's (stored as its duration), and one whose
	// attempt differs from its route in each way in turn (stored whole).
	at := recs[0].Time
	own := Record{Time: at, RequestID: "own", Key: "k", API: "chat", Model: "m", Served: "s", Backend: "b", Deployment: "b/x",
		Status: 200, PromptTokens: 7, CompletionTokens: 3, Attempts: []Attempt{{Backend: "b", Deployment: "b/x", Model: "s",
			Status: 200, Duration: 5 * time.Millisecond, PromptTokens: 7, CompletionTokens: 3}}}
	recs = append(recs, own)
	for _, change := range []func(a *Attempt){
		func(a *Attempt) { a.Backend = "c" }, func(a *Attempt) { a.Deployment = "" }, func(a *Attempt) { a.Model = "m" },
		func(a *Attempt) { a.Status = 0 }, func(a *Attempt) { a.ErrorType = "e" }, func(a *Attempt) { a.Continued = true },
		func(a *Attempt) { a.PromptTokens = 6 }, func(a *Attempt) { a.CompletionTokens = 0 },
	} {
		r := own
		r.Attempts = []Attempt{own.Attempts[0]}
		change(&r.Attempts[0])
		recs = append(recs, r)
	}
	base := int64(math.MaxInt64)
	for i := range recs {
		base = min(base, recs[i].Time.UnixMicro())
	}
	var e batchEncoder
	var v8 v8Encoder
	for _, form := range []struct {
		name   string
		encode func(recs []Record, pruned func(int) bool, base int64) []byte
		decode func(data string, first int64, out []Record) ([]Record, error)
	}{
		{"form 9", func(recs []Record, pruned func(int) bool, base int64) []byte {
			return e.appendBatch(nil, recs, pruned, base)
		}, decodeBatchV9},
		{"form 8", func(recs []Record, pruned func(int) bool, base int64) []byte {
			return v8.refAppendBatch(nil, recs, pruned, base)
		}, decodeBatch},
	} {
		for _, pruned := range []func(int) bool{nil, func(i int) bool { return i == 1 }} {
			data := form.encode(recs, pruned, base)
			got, err := form.decode(string(data), 100, nil)
			if err != nil {
				t.Fatalf("%s: %s: %v", form.name, data, err)
			}
			var want []Record
			for i := range recs {
				if pruned == nil || !pruned(i) {
					want = append(want, storedAs(recs[i], 100+int64(i)))
				}
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("%s: round trip of %s (-want +got):\n%s", form.name, data, diff)
			}
		}
	}
	// The routes, their texts through the dictionary: the second record's is the
	// first's, defaults left out; the attempt that is its route's is its duration.
	data := string(e.appendBatch(nil, []Record{{Time: time.UnixMicro(0), Key: "k", Model: "m"}, {Time: time.UnixMicro(0), Key: "k", Model: "m"},
		{Time: time.UnixMicro(3), Key: "k", Model: "m", Status: 200, PromptTokens: 5, Attempts: []Attempt{{Status: 200, PromptTokens: 5, Duration: time.Millisecond}}}}, nil, 0))
	if want := `[0,["k","m"],[[0,"","",1,"","","",0,0,""],[0,"","",1,"","","",0,200,""]],[0,"",0],[0,"",0],[3,"",1,5,0,0.0,0,0,0,1]]`; data != want {
		t.Errorf("batch %s, want %s", data, want)
	}
}

// TestBatch_DecodeErrors: a malformed batch row is an error naming what is wrong, never
// a panic, and never more than maxBatchRecords records or maxBatchTexts texts.
func TestBatch_DecodeErrors(t *testing.T) {
	many := func(n int, el string) string { return strings.TrimSuffix(strings.Repeat(el+",", n), ",") }
	for _, tc := range []struct{ data, want string }{
		{``, "not an array"},
		{`{}`, "not an array"},
		{`[]`, "no base_us"},
		{`[1]`, "no base_us"},
		{`["1",[]]`, "base_us is not a number"},
		{`[1.5,[]]`, "base_us is not an integer"},
		{`[0,{}]`, "texts are not an array"},
		{`[0,[1]]`, "text 0 is not a string"},
		{`[0,[` + many(maxBatchTexts+1, `"a"`) + `]]`, "more than 1024 texts"},
		{`[0,[],` + many(maxBatchRecords+1, `[0]`) + `]`, "more than 256 records"},
		{`[0,[],[]]`, "record 0: no time"},
		{`[0,[],[-1]]`, "ts_us: out of range"},
		{`[9223372036854775807,[],[1]]`, "ts_us: out of range"},
		{`[0,[],[0,1]]`, "request_id: not a string"},
		{`[0,[],[0,"",0]]`, "key_name: text 0 of 0"},
		{`[0,["k"],[0,"",1]]`, "key_name: text 1 of 1"},
		{`[0,["k"],[0,"",-1]]`, "key_name: text -1 of 1"},
		{`[0,[],[0,"","","","","","","","",2]]`, "stream: not 0 or 1"},
		{`[0,[],[0,"","","","","","","","",0,1.5]]`, "status: not an integer"},
		{`[0,[],[0,"","","","","","","","",0,0,0,0,"x"]]`, "cost_usd: not a number"},
		{`[0,[],[0,"","","","","","","","",0,0,0,0,1e999]]`, "cost_usd"},
		{`[0,[],[0,` + many(len(batchFields), `0`) + `]]`, "request_id"},
		{`[0,[],[0,"","","","","","","","",0,0,0,0,0.0,0,0,0,"",0,"",0,0,0,0,0,0,{}]]`, "attempts: not an array"},
		{`[0,[],[0,"","","","","","","","",0,0,0,0,0.0,0,0,0,"",0,"",0,0,0,0,0,0,null,0,null,0,"","",null,null]]`, "more than 33 fields"},
		{`[0,[],[0,"","","","","","","","",0,0,0,0,0.0,0,0,0,"",0,"",0,0,0,0,0,0,[[1]]]]`, "attempts: attempt 0, field 0: text 1 of 0"},
		{`[0,[],[0,"","","","","","","","",0,0,0,0,0.0,0,0,0,"",0,"",0,0,0,0,0,0,[["b","d","m",200,"",1,2,0,0]]]]`, "attempts: attempt 0, field 6: not 0 or 1"},
		{`[0,[],[0,"","","","","","","","",0,0,0,0,0.0,0,0,0,"",0,"",0,0,0,0,0,0,[["b","d","m",200,""]]]]`, "attempts: attempt 0: 5 fields, want 9"},
		{`[0,[],[0,"","","","","","","","",0,0,0,0,0.0,0,0,0,"",0,"",0,0,0,0,0,0,[1]]]`, "attempts: attempt 0 is not an array"},
		{`[0,[],[0],`, "record 1: not an array"},
		{`[0,[],[0]] x`, "bad JSON"},
		{`[0,[],nul]`, "bad JSON"},
	} {
		_, err := decodeBatchRow(8, tc.data, 1, nil)
		if err == nil || !errors.Is(err, errBatch) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("decodeBatch(%.60q): %v; want an error with %q", tc.data, err, tc.want)
		}
	}
	route := `["k","t","chat","m","m","b","b/x",0,200,""]`
	for _, tc := range []struct{ data, want string }{
		{``, "not an array"},
		{`[]`, "no base_us, texts and routes"},
		{`[0,[]]`, "no base_us, texts and routes"},
		{`["1",[],[]]`, "base_us is not a number"},
		{`[0,{},[]]`, "texts are not an array"},
		{`[0,[],{}]`, "routes are not an array"},
		{`[0,[],[` + many(maxBatchRecords+1, route) + `]]`, "more than 256 routes"},
		{`[0,[],[1]]`, "route 0: not an array"},
		{`[0,[],[["k"]]]`, "route 0: 1 fields, want 10"},
		{`[0,[],[` + strings.Replace(route, `""]`, `"",1]`, 1) + `]]`, "route 0: more than 10 fields"},
		{`[0,[],[` + strings.Replace(route, `200`, `"200"`, 1) + `]]`, "route 0: status: not a number"},
		{`[0,[],[` + strings.Replace(route, `,0,`, `,2,`, 1) + `]]`, "route 0: stream: not 0 or 1"},
		{`[0,[],[` + strings.Replace(route, `"k"`, `0`, 1) + `]]`, "route 0: key_name: text 0 of 0"},
		{`[0,[],[` + strings.Replace(route, `"k"`, `null`, 1) + `]]`, "route 0: key_name: not a string"},
		{`[0,[],[` + route + `],` + many(maxBatchRecords+1, `[0,"",0]`) + `]`, "more than 256 records"},
		{`[0,[],[],[0,""]]`, "record 0: no route"},
		{`[0,[],[],[0,"",0]]`, "record 0: route: route 0 of 0"},
		{`[0,[],[` + route + `],[0,"",-1]]`, "record 0: route: route -1 of 1"},
		{`[0,[],[` + route + `],[0,"","0"]]`, "record 0: route: not a number"},
		{`[0,[],[` + route + `],[0,"",0,0,0,0.0,0,0,0,1.5]]`, "record 0: attempts: not an integer"},
		{`[0,[],[` + route + `],[0,"",0,0,0,0.0,0,0,0,{}]]`, "record 0: attempts: not an array"},
		{`[0,[],[` + route + `],[0,"",0,0,0,0.0,0,0,0,[[1]]]]`, "attempts: attempt 0, field 0: text 1 of 0"},
		{`[0,[],[` + route + `],[0,"",0,0,0,0.0,0,0,0,null,"",0,0,0,0,0,0,0,0,null,0,"",null,null,0]]`, "more than 24 fields"},
		{`[0,[],[` + route + `],[0,"",0,0,0,"x"]]`, "record 0: cost_usd: not a number"},
		{`[0,[],[` + route + `],[0,"",0,0,0,0.0,0,0,0,null,"",0,0,0,0,0,0,0,0,null,0,3]]`, "continued_from: text 3 of 0"},
		{`[0,[],[` + route + `],[0,"",0]] x`, "bad JSON"},
	} {
		_, err := decodeBatchRow(9, tc.data, 1, nil)
		if err == nil || !errors.Is(err, errBatch) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("decodeBatchV9(%.60q): %v; want an error with %q", tc.data, err, tc.want)
		}
	}
	if _, err := decodeBatchRow(7, `[0,[],[]]`, 1, nil); err == nil || !errors.Is(err, errBatch) || !strings.Contains(err.Error(), "format 7") {
		t.Errorf("a row of format 7: %v", err)
	}
}

// FuzzDecodeBatch: decodeBatch (form 8, the rows a version 8 database holds) never
// panics, reads at most maxBatchRecords records, and what it reads encodes in form 9 to
// a batch that reads back the same.
//
//	go test -run '^$' -fuzz FuzzDecodeBatch -fuzztime 60s ./ledger
func FuzzDecodeBatch(f *testing.F) {
	var v8 v8Encoder
	f.Add(string(v8.refAppendBatch(nil, oddRecords(), nil, -1)))
	f.Add(string(v8.refAppendBatch(nil, oddRecords(), func(i int) bool { return i%2 == 0 }, -1)))
	f.Add(string(v8.refAppendBatch(nil, gatewayRun(8, time.Date(2026, 12, 7, 11, 0, 0, 0, time.UTC)), nil, 1796641200000000)))
	f.Add(`[0,[],[0,"","","","","","","","",0,0,0,0,0.0,0,0,0,"",0,"",0,0,0,0,0,0,null,0,null,0,"",null,null]]`)
	f.Add(`[1733500000000000,["k","m"],[0,"a",0,"",0,0],null,[5,"b",0,"","",1,"",1]]`)
	f.Fuzz(func(t *testing.T, data string) { fuzzReadBack(t, data, decodeBatch) })
}

// FuzzDecodeBatchV9: decodeBatchV9 never panics, reads at most maxBatchRecords records,
// and what it reads encodes to a batch that reads back the same. Seeded from a gateway's
// records (gatewayRun), the odd ones and the encoder's cases.
//
//	go test -run '^$' -fuzz FuzzDecodeBatchV9 -fuzztime 60s ./ledger
func FuzzDecodeBatchV9(f *testing.F) {
	var e batchEncoder
	f.Add(string(e.appendBatch(nil, gatewayRun(8, time.Date(2026, 12, 7, 11, 0, 0, 0, time.UTC)), nil, 1796641200000000)))
	f.Add(string(e.appendBatch(nil, oddRecords(), nil, -1)))
	f.Add(string(e.appendBatch(nil, oddRecords(), func(i int) bool { return i%2 == 0 }, -1)))
	for _, name := range []string{"cut segments", "change 17", "change 26", "change 27"} {
		recs := encoderCases()[name]
		f.Add(string(e.appendBatch(nil, recs[:min(len(recs), 12)], nil, -1)))
	}
	f.Add(`[0,[],[["k","","","m","","","",0,0,""]],[0,"",0],null,[3,"",0,5,0,0.0,0,0,0,1]]`)
	f.Fuzz(func(t *testing.T, data string) { fuzzReadBack(t, data, decodeBatchV9) })
}

// fuzzReadBack decodes data with decode and, when it reads, checks its records and
// their form 9 encoding's reading.
func fuzzReadBack(t *testing.T, data string, decode func(string, int64, []Record) ([]Record, error)) {
	recs, err := decode(data, 1, nil)
	if err != nil {
		return
	}
	if len(recs) > maxBatchRecords {
		t.Fatalf("%d records", len(recs))
	}
	base := int64(math.MaxInt64)
	for i := range recs {
		base = min(base, recs[i].Time.UnixMicro())
	}
	var e batchEncoder
	again, err := decodeBatchV9(string(e.appendBatch(nil, recs, nil, base)), 1, nil)
	if err != nil {
		t.Fatalf("the records of %q do not read back: %v", data, err)
	}
	for i := range again {
		again[i].ID = recs[i].ID // appendBatch packs them: the places' ids differ
	}
	if diff := cmp.Diff(recs, again); diff != "" {
		t.Fatalf("the records of %q read back differently (-first +again):\n%s", data, diff)
	}
}

// v7Record reads the v7 columns of ledger_requests (a table, or the version 8 view) by
// scanRecord, with the SQLite type of each column.
func v7Records(t *testing.T, db *sql.DB) ([]Record, []string) {
	t.Helper()
	var types []string
	for _, c := range columns {
		types = append(types, "typeof("+c+")")
	}
	// The values are read once into a materialized CTE and the types taken of what it
	// holds: selecting each column and its typeof from the view itself evaluated every
	// column's JSON extraction twice (half this read's CPU under -race, #54). A CTE's
	// columns have no affinity, so it keeps each value and its type as the view gave them.
	cols := strings.Join(columns[:], ", ")
	rows, err := db.Query("WITH v AS MATERIALIZED (SELECT id, " + cols + " FROM ledger_requests) SELECT id, " + cols + ", " +
		strings.Join(types, " || ',' || ") + " FROM v ORDER BY id")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var recs []Record
	var typ []string
	for rows.Next() {
		var r Record
		var tt string
		scan := scanner(rowFunc(func(dest ...any) error { return rows.Scan(append(dest, &tt)...) }))
		if r, err = scanRecord(scan); err != nil {
			t.Fatal(err)
		}
		recs, typ = append(recs, r), append(typ, tt)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return recs, typ
}

// rowFunc is a scanner of a function.
type rowFunc func(dest ...any) error

func (f rowFunc) Scan(dest ...any) error { return f(dest...) }

// TestSchemaV8_MigratesVersion7: a version 7 database's records, migrated to version 9, (runs of ids with gaps,
// more than a batch row's worth, every field set in some) become batch rows that read
// back exactly as version 7 read them, through the listings and through the view
// (values and SQLite types); ids continue the version 7 sequence (its newest record
// deleted before the migration); the plans use the rows' key and time indexes; the
// pruner keeps retention exact on a row that straddles it (writing it again in form 9).
func TestSchemaV8_MigratesVersion7(t *testing.T) {
	ctx := context.Background()
	st, dsn := sqliteAtVersion(t, ctx, 7)
	var v7 []Record
	for i := range 600 {
		r := oddRecords()[i%4]
		r.CostUSD = float64(i%7) / 8 // v7 cannot hold NaN
		r.Time = rangesDay.Add(time.Duration(i) * time.Second)
		r.RequestID = fmt.Sprintf("v7-%d-%s", i, r.RequestID)
		v7 = append(v7, r)
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
	for i := range v7 {
		if _, err := ins.ExecContext(ctx, insertArgs(nil, &v7[i])...); err != nil {
			t.Fatal(err)
		}
	}
	if err := ins.Close(); err != nil {
		t.Fatal(err)
	}
	// Gaps: ids 100-149 and the newest (600) deleted.
	if _, err := tx.ExecContext(ctx, `DELETE FROM ledger_requests WHERE id BETWEEN 100 AND 149 OR id = 600`); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	before, beforeTypes := v7Records(t, st.db)
	st.db.Close()

	now := rangesDay.Add(24*time.Hour + 300*time.Second)
	l, err := Open(ctx, Options{Type: "sqlite", DSN: dsn, FlushInterval: time.Hour, Now: func() time.Time { return now }, Retention: 24 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close(ctx)
	if v, err := l.SchemaVersion(ctx); err != nil || v != 9 {
		t.Fatalf("schema version %d, %v; want 9", v, err)
	}
	db := l.st.db
	var rows, records int
	if err := db.QueryRowContext(ctx, `SELECT COUNT(*), SUM(n) FROM ledger_request_batches`).Scan(&rows, &records); err != nil ||
		rows != 4 || records != len(before) { // ids 1-99, 150-256, 257-512, 513-599
		t.Errorf("%d batch rows of %d records, %v; want 4 of %d", rows, records, err, len(before))
	}
	view, viewTypes := v7Records(t, db)
	if diff := cmp.Diff(before, view); diff != "" {
		t.Errorf("the view's records (-version 7 +view):\n%s", diff)
	}
	if diff := cmp.Diff(beforeTypes, viewTypes); diff != "" {
		t.Errorf("the view's column types (-version 7 +view):\n%s", diff)
	}
	listed, _, err := l.Requests(ctx, RequestQuery{Limit: 1000})
	if err != nil || len(listed) != len(before) {
		t.Fatalf("%d records listed, %v; want %d", len(listed), err, len(before))
	}
	for i := range listed {
		if diff := cmp.Diff(before[len(before)-1-i], listed[i]); diff != "" {
			t.Fatalf("listed record %d (-version 7 +listed):\n%s", i, diff)
		}
	}
	if r, ok, err := l.Request(ctx, 150); err != nil || !ok || r.RequestID != before[99].RequestID {
		t.Errorf("record 150: %+v, %v, %v", r, ok, err)
	}
	if _, ok, err := l.Request(ctx, 120); err != nil || ok {
		t.Errorf("record 120 (deleted in version 7): %v, %v", ok, err)
	}

	l.Add(Record{Time: now, RequestID: "v8", Key: "k", Model: "m", Status: 200})
	if err := l.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if r, ok, err := l.Request(ctx, 601); err != nil || !ok || r.RequestID != "v8" {
		t.Errorf("the first version 8 record is not id 601 (version 7's sequence continued): %+v, %v, %v", r, ok, err)
	}

	// Retention: the cutoff (a day before now: rangesDay + 300 s) falls inside the row
	// of ids 257-512: it is written again without its records older than the cutoff.
	n, err := l.Prune(ctx)
	if err != nil {
		t.Fatal(err)
	}
	left, _, err := l.Requests(ctx, RequestQuery{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	var want []int64
	for _, r := range append(before, Record{ID: 601, Time: now}) {
		if !r.Time.Before(now.Add(-24 * time.Hour)) {
			want = append([]int64{r.ID}, want...)
		}
	}
	var got []int64
	for _, r := range left {
		got = append(got, r.ID)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ids left after pruning (-want +got):\n%s", diff)
	}
	if n < int64(len(before)+1-len(want)) {
		t.Errorf("pruned %d rows, want at least %d records", n, len(before)+1-len(want))
	}
	// The view's count and first id only: its whole records were compared above, and
	// reading every column again cost seconds under -race (#54).
	var viewed, firstID int64
	if err := db.QueryRowContext(ctx, `SELECT COUNT(*), MIN(id) FROM ledger_requests`).Scan(&viewed, &firstID); err != nil ||
		viewed != int64(len(want)) || firstID != want[len(want)-1] {
		t.Errorf("the view after pruning: %d records from id %d, %v; want %d from %d", viewed, firstID, err, len(want), want[len(want)-1])
	}
	if err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM ledger_request_batches WHERE first_us < ?`,
		now.Add(-24*time.Hour).UnixMicro()).Scan(&rows); err != nil || rows != 0 {
		t.Errorf("%d rows still hold a record past retention, %v", rows, err)
	}
}

// TestBatch_View: the records the writer stores (attempts in their compact form, texts
// through the dictionary, defaults left out) read the same through the view
// ledger_requests as through the gateway's readers, and the view's SQLite types are
// version 7's (integers, texts, a real cost, NULL for what a record lacks).
func TestBatch_View(t *testing.T) {
	ctx := context.Background()
	l, err := Open(ctx, Options{Type: "sqlite", DSN: FreshSQLite(t), FlushInterval: time.Hour,
		CaptureContent: true})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close(ctx)
	recs := oddRecords()
	recs[1].CostUSD = 0.5        // a NaN fails the rollups' NOT NULL (as in version 7)
	recs = append(recs, recs[1]) // the dictionary's texts and the attempts' again
	recs[4].Attempts = append(recs[4].Attempts, Attempt{Backend: "c", Deployment: "c/z", Model: "m2", Status: 200,
		Duration: 1500 * time.Millisecond, Continued: true, PromptTokens: 5, CompletionTokens: 6})
	for _, r := range recs {
		if !l.Add(r) {
			t.Fatal("a record was dropped")
		}
	}
	if err := l.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if err := l.Ready(); err != nil {
		t.Fatal(err)
	}
	listed, _, err := l.Requests(ctx, RequestQuery{})
	if err != nil || len(listed) != len(recs) {
		t.Fatalf("%d records listed, %v", len(listed), err)
	}
	var want []Record
	for i := range listed {
		want = append(want, listed[len(listed)-1-i])
	}
	for i := range recs {
		if diff := cmp.Diff(storedAs(recs[i], want[i].ID), want[i]); diff != "" {
			t.Errorf("record %d as listed (-written +listed):\n%s", i, diff)
		}
	}
	view, types := v7Records(t, l.st.db)
	if diff := cmp.Diff(want, view); diff != "" {
		t.Errorf("the view's records (-listed +view):\n%s", diff)
	}
	if want := "integer,text,text,text,text,text,text,text,integer,integer,text,integer,integer,integer,integer,integer,real," +
		"integer,integer,integer,integer,integer,integer,integer,null,null,text,text,text,null,integer,null,integer"; types[0] != want {
		t.Errorf("the view's types of a plain record:\n%s\nwant\n%s", types[0], want)
	}
	if want := "integer,text,text,text,text,text,text,text,integer,integer,text,integer,integer,integer,integer,integer,real," +
		"integer,integer,integer,integer,integer,integer,integer,text,text,text,text,text,text,integer,text,integer"; types[1] != want {
		t.Errorf("the view's types of a record with every field:\n%s\nwant\n%s", types[1], want)
	}
}

// TestSchemaV9_MigratesVersion8: a version 8 database's batch rows (form 8, written by
// v8Encoder as version 8's writer wrote them) read the same after the migration to
// version 9, through the view (values and SQLite types) and the readers; the records
// written after it (form 9) read through both the same as the listing, beside the old.
func TestSchemaV9_MigratesVersion8(t *testing.T) {
	ctx := context.Background()
	st, dsn := sqliteAtVersion(t, ctx, 8)
	recs := oddRecords()
	recs[1].CostUSD = 0.5 // a NaN fails the rollups' NOT NULL
	recs[1].Attempts = append(recs[1].Attempts, Attempt{Backend: "c", Deployment: "c/z", Model: "m2", Status: 200,
		Duration: 1500 * time.Millisecond, Continued: true, PromptTokens: 5, CompletionTokens: 6})
	recs = append(recs, gatewayRun(20, rangesDay)...)
	var v8 v8Encoder
	for _, part := range [][2]int{{0, 4}, {4, len(recs)}} {
		batch := recs[part[0]:part[1]]
		lo, hi := int64(math.MaxInt64), int64(math.MinInt64)
		for i := range batch {
			lo, hi = min(lo, batch[i].Time.UnixMicro()), max(hi, batch[i].Time.UnixMicro())
		}
		if _, err := st.db.ExecContext(ctx, `INSERT INTO ledger_request_batches (last_id, first_id, first_us, last_us, n, data) VALUES (?, ?, ?, ?, ?, ?)`,
			part[1], part[0]+1, lo, hi, len(batch), string(v8.refAppendBatch(nil, batch, nil, lo))); err != nil {
			t.Fatal(err)
		}
	}
	before, beforeTypes := v7Records(t, st.db)
	if len(before) != len(recs) {
		t.Fatalf("%d records in the version 8 view, want %d", len(before), len(recs))
	}
	st.db.Close()

	l, err := Open(ctx, Options{Type: "sqlite", DSN: dsn, FlushInterval: time.Hour, CaptureContent: true})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close(ctx)
	if v, err := l.SchemaVersion(ctx); err != nil || v != 9 {
		t.Fatalf("schema version %d, %v; want 9", v, err)
	}
	view, viewTypes := v7Records(t, l.st.db)
	if diff := cmp.Diff(before, view); diff != "" {
		t.Errorf("the view's records (-version 8 +version 9):\n%s", diff)
	}
	if diff := cmp.Diff(beforeTypes, viewTypes); diff != "" {
		t.Errorf("the view's column types (-version 8 +version 9):\n%s", diff)
	}
	for _, r := range recs {
		if !l.Add(r) {
			t.Fatal("a record was dropped")
		}
	}
	if err := l.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	var forms string
	if err := l.st.db.QueryRowContext(ctx, `SELECT group_concat(format, ',') FROM (SELECT format FROM ledger_request_batches ORDER BY last_id)`).Scan(&forms); err != nil || forms != "8,8,9" {
		t.Errorf("the rows' formats %q, %v; want 8,8,9", forms, err)
	}
	listed, _, err := l.Requests(ctx, RequestQuery{Limit: 1000})
	if err != nil || len(listed) != 2*len(recs) {
		t.Fatalf("%d records listed, %v; want %d", len(listed), err, 2*len(recs))
	}
	slices.Reverse(listed)
	for i := range recs { // the old rows and the new read the same
		old, now := listed[i], listed[len(recs)+i]
		if diff := cmp.Diff(storedAs(recs[i], old.ID), old); diff != "" {
			t.Errorf("version 8 record %d (-written +listed):\n%s", i, diff)
		}
		if diff := cmp.Diff(storedAs(recs[i], now.ID), now); diff != "" {
			t.Errorf("version 9 record %d (-written +listed):\n%s", i, diff)
		}
	}
	view, viewTypes = v7Records(t, l.st.db)
	if diff := cmp.Diff(listed, view); diff != "" {
		t.Errorf("the view's records (-listed +view):\n%s", diff)
	}
	if diff := cmp.Diff(viewTypes[:len(recs)], viewTypes[len(recs):]); diff != "" {
		t.Errorf("the view's column types (-form 8 +form 9):\n%s", diff)
	}
	if r, ok, err := l.Request(ctx, int64(len(recs)+2)); err != nil || !ok || r.RequestID != recs[1].RequestID {
		t.Errorf("record %d: %+v, %v, %v", len(recs)+2, r, ok, err)
	}
}
