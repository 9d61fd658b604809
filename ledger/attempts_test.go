package ledger

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agate-gateway/agate/internal/jsonx"
)

// beforeV5 and beforeV6 are how many of columns the schema had before versions 5 and 6.
const (
	beforeV6 = len(columns) - len(v6Columns)
	beforeV5 = beforeV6 - len(v5Columns)
)

// insertBeforeV5 writes recs (and nothing to the rollups) into a database of a schema
// version before 5, in its columns.
func insertBeforeV5(t *testing.T, st *store, recs []Record) { insertOld(t, st, beforeV5, recs) }

// insertOld writes recs (and nothing to the rollups) into a database whose records have
// the first n of columns.
func insertOld(t *testing.T, st *store, n int, recs []Record) {
	t.Helper()
	q := "INSERT INTO ledger_requests (" + strings.Join(columns[:n], ", ") + ") VALUES (" +
		strings.TrimSuffix(strings.Repeat("?, ", n), ", ") + ")"
	for i := range recs {
		if _, err := st.db.ExecContext(context.Background(), st.d.bind(q), insertArgs(nil, &recs[i])[:n]...); err != nil {
			t.Fatal(err)
		}
	}
}

// TestSchemaV5_MigratesVersion4 holds the migration to version 5 on both databases: a
// version 4 database's records and rollups are kept (deployment "", no attempts), and
// then the new columns round-trip and the rollups group by deployment.
func TestSchemaV5_MigratesVersion4(t *testing.T) {
	for _, db := range []struct {
		name string
		d    *dialect
		dsn  func(t *testing.T) (driver, open, dsn string)
	}{
		{"sqlite", &sqliteDialect, func(t *testing.T) (string, string, string) {
			p := filepath.Join(t.TempDir(), "ledger.db")
			return "sqlite", "file:" + p, p
		}},
		{"postgres", &postgresDialect, func(t *testing.T) (string, string, string) {
			dsn := Postgres.NewDatabase(t)
			return "pgx", dsn, dsn
		}},
	} {
		t.Run(db.name, func(t *testing.T) {
			ctx := context.Background()
			driver, openDSN, dsn := db.dsn(t)
			old := *db.d
			old.migrations = old.migrations[:4]
			st := &store{d: &old}
			var err error
			if st.db, err = sql.Open(driver, openDSN); err != nil {
				t.Fatal(err)
			}
			if err := st.migrate(ctx); err != nil {
				t.Fatal(err)
			}
			at := time.Now().UTC().Truncate(time.Minute).Add(-time.Hour)
			if err := st.ensureAhead(ctx, at); err != nil { // version 4's partitions
				t.Fatal(err)
			}
			insertBeforeV5(t, st, []Record{{Time: at, RequestID: "v4", Key: "k", Model: "m", Served: "m", Status: 200, PromptTokens: 5}})
			if _, err := st.db.ExecContext(ctx, st.d.bind(`INSERT INTO ledger_rollup_minute (bucket, key_name, team, model, status, `+
				strings.Join(rollupColumns[:], ", ")+`) VALUES (?, 'k', '', 'm', 200, 1, 0, 5, 0, 0, 0, 0, 0, 10)`), at.Unix()); err != nil {
				t.Fatal(err)
			}
			st.db.Close()

			typ := db.name
			l, err := Open(ctx, Options{Type: typ, DSN: dsn})
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close(ctx)
			if v, err := l.SchemaVersion(ctx); err != nil || v != len(db.d.migrations) { // 5, then 6 (schemaV6)
				t.Fatalf("schema version %d, %v; want %d", v, err, len(db.d.migrations))
			}
			recs, _, err := l.Requests(ctx, RequestQuery{})
			if err != nil || len(recs) != 1 || recs[0].RequestID != "v4" || recs[0].Deployment != "" || recs[0].AttemptsJSON != "" {
				t.Fatalf("the version 4 record after the migration: %+v, %v", recs, err)
			}

			attempts := []Attempt{
				{Backend: "east", Deployment: "east/gpt-4o", Model: "gpt", Status: 503, ErrorType: "api_error", Duration: 120 * time.Millisecond},
				{Backend: "west", Deployment: "west/gpt-4o", Model: "gpt", Status: 200, Duration: 900 * time.Millisecond},
				{Backend: "west", Deployment: "west/gpt-4o", Model: "gpt", Status: 200, Duration: 300 * time.Millisecond, Continued: true},
			}
			many := make([]Attempt, MaxAttempts+3)
			for i := range many {
				many[i] = Attempt{Backend: "b", Deployment: "b/x", Model: "m", Status: 429, ErrorType: "rate_limit_error"}
			}
			l.Add(Record{Time: at, RequestID: "v5", Key: "k", Model: "gpt", Served: "gpt", Status: 200, PromptTokens: 7,
				Deployment: "west/gpt-4o", TraceID: "4bf92f3577b34da6a3ce929d0e0e4736", ContinuedFrom: "gpt", Attempts: attempts})
			l.Add(Record{Time: at, RequestID: "many", Key: "k", Model: "m", Status: 429, Deployment: "b/x", Attempts: many})
			if err := l.Flush(ctx); err != nil {
				t.Fatal(err)
			}
			if err := l.Ready(); err != nil {
				t.Fatal(err)
			}
			recs, _, err = l.Requests(ctx, RequestQuery{})
			if err != nil || len(recs) != 3 {
				t.Fatalf("records: %+v, %v", recs, err)
			}
			bounded, v5 := recs[0], recs[1]
			if bounded.AttemptsOmitted != 3 || strings.Count(bounded.AttemptsJSON, `"backend"`) != MaxAttempts || !jsonx.Valid(bounded.AttemptsJSON) {
				t.Errorf("eleven attempts kept as %d and %d omitted: %s", strings.Count(bounded.AttemptsJSON, `"backend"`), bounded.AttemptsOmitted, bounded.AttemptsJSON)
			}
			got, ok, err := l.Request(ctx, v5.ID)
			if err != nil || !ok {
				t.Fatalf("Request(%d): %v, %v", v5.ID, ok, err)
			}
			want := `[{"backend":"east","deployment":"east/gpt-4o","model":"gpt","status":503,"error_type":"api_error","duration_ms":120,"continued":false,"prompt_tokens":0,"completion_tokens":0},` +
				`{"backend":"west","deployment":"west/gpt-4o","model":"gpt","status":200,"error_type":"","duration_ms":900,"continued":false,"prompt_tokens":0,"completion_tokens":0},` +
				`{"backend":"west","deployment":"west/gpt-4o","model":"gpt","status":200,"error_type":"","duration_ms":300,"continued":true,"prompt_tokens":0,"completion_tokens":0}]` // the tokens: version 6
			if diff := cmp.Diff(want, got.AttemptsJSON); diff != "" {
				t.Errorf("attempts (-want +got):\n%s", diff)
			}
			if got.TraceID != "4bf92f3577b34da6a3ce929d0e0e4736" || got.ContinuedFrom != "gpt" || got.Deployment != "west/gpt-4o" {
				t.Errorf("trace id %q, continued from %q, deployment %q", got.TraceID, got.ContinuedFrom, got.Deployment)
			}
			if _, ok, err := l.Request(ctx, 1<<40); ok || err != nil {
				t.Errorf("Request of a missing id: %v, %v", ok, err)
			}

			u, err := l.Usage(ctx, UsageQuery{From: at.Add(-time.Minute), To: at.Add(time.Minute), GroupBy: []string{"deployment"}})
			if err != nil {
				t.Fatal(err)
			}
			var rows []string
			for _, r := range u {
				rows = append(rows, fmt.Sprintf("%q %d %d", r.Deployment, r.Requests, r.PromptTokens))
			}
			if diff := cmp.Diff([]string{`"" 1 5`, `"b/x" 1 0`, `"west/gpt-4o" 1 7`}, rows); diff != "" {
				t.Errorf("usage by deployment (-want +got):\n%s", diff)
			}
			u, err = l.Usage(ctx, UsageQuery{From: at.Add(-time.Minute), To: at.Add(time.Minute), Deployment: "west/gpt-4o"})
			if err != nil || len(u) != 1 || u[0].Requests != 1 {
				t.Errorf("usage of one deployment: %+v, %v", u, err)
			}
		})
	}
}

func TestAppendAttempts_EscapesNames(t *testing.T) {
	got := string(appendAttempts(nil, []Attempt{{Backend: `a"b`, Deployment: "<x>", Model: "m\n"}}))
	if !jsonx.Valid(got) || !strings.Contains(got, `a\"b`) {
		t.Errorf("attempts: %s", got)
	}
	if attemptsText(nil) != nil {
		t.Error("no attempts: not NULL")
	}
}
