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

// TestSchemaV6_MigratesVersion5 holds the migration to version 6 on both databases: a
// version 5 database's records are kept (no tools, their attempts without tokens), and
// then a record's server tool summary (bounded to MaxTools, the rest's calls counted)
// and its attempts' tokens round-trip.
func TestSchemaV6_MigratesVersion5(t *testing.T) {
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
			old.migrations = old.migrations[:5]
			st := &store{d: &old}
			var err error
			if st.db, err = sql.Open(driver, openDSN); err != nil {
				t.Fatal(err)
			}
			if err := st.migrate(ctx); err != nil {
				t.Fatal(err)
			}
			at := time.Now().UTC().Truncate(time.Minute).Add(-time.Hour)
			if err := st.ensureAhead(ctx, at); err != nil {
				t.Fatal(err)
			}
			// Version 5 stored attempts without their tokens.
			insertOld(t, st, beforeV6, []Record{{Time: at, RequestID: "v5", Key: "k", Model: "m", Served: "m", Status: 200, PromptTokens: 5,
				ToolCalls: 2, Attempts: []Attempt{{Backend: "b", Deployment: "b/x", Model: "m", Status: 200}}}})
			if _, err := st.db.ExecContext(ctx, st.d.bind(`UPDATE ledger_requests SET attempts = ? WHERE request_id = 'v5'`),
				`[{"backend":"b","deployment":"b/x","model":"m","status":200,"error_type":"","duration_ms":3,"continued":false}]`); err != nil {
				t.Fatal(err)
			}
			st.db.Close()

			l, err := Open(ctx, Options{Type: db.name, DSN: dsn})
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close(ctx)
			if v, err := l.SchemaVersion(ctx); err != nil || v != len(db.d.migrations) { // 6, then 7 (keyranges.go)
				t.Fatalf("schema version %d, %v; want %d", v, err, len(db.d.migrations))
			}
			recs, _, err := l.Requests(ctx, RequestQuery{})
			if err != nil || len(recs) != 1 || recs[0].RequestID != "v5" || recs[0].ToolsJSON != "" || recs[0].ToolsOmitted != 0 ||
				recs[0].ToolCalls != 2 || !strings.Contains(recs[0].AttemptsJSON, `"continued":false}`) {
				t.Fatalf("the version 5 record after the migration: %+v, %v", recs, err)
			}

			// A tool loop over 18 tools: 16 itemized, the 5 calls of the other two counted.
			tools := []ToolUse{
				{Name: "search__web", Source: "search", Calls: 3, Errors: 1, Duration: 1500 * time.Millisecond},
				{Name: "clock", Source: "clock", Calls: 1, Duration: 2 * time.Millisecond},
			}
			for i := len(tools); i < MaxTools+2; i++ {
				tools = append(tools, ToolUse{Name: fmt.Sprintf("t%d", i), Source: "s", Calls: 2 + i%2})
			}
			attempts := []Attempt{
				{Backend: "east", Deployment: "east/gpt-4o", Model: "gpt", Status: 503, ErrorType: "server_error", Duration: 40 * time.Millisecond},
				{Backend: "west", Deployment: "west/gpt-4o", Model: "gpt", Status: 200, Duration: 900 * time.Millisecond, PromptTokens: 120, CompletionTokens: 30},
				{Backend: "west", Deployment: "west/gpt-4o", Model: "gpt", Status: 200, Duration: 700 * time.Millisecond, PromptTokens: 180, CompletionTokens: 12},
			}
			l.Add(Record{Time: at, RequestID: "v6", Key: "k", Model: "gpt", Served: "gpt", Status: 200,
				PromptTokens: 300, CompletionTokens: 42, ToolCalls: 4, Attempts: attempts, Tools: tools})
			if err := l.Flush(ctx); err != nil {
				t.Fatal(err)
			}
			recs, _, err = l.Requests(ctx, RequestQuery{Limit: 1})
			if err != nil || len(recs) != 1 {
				t.Fatalf("records: %+v, %v", recs, err)
			}
			got, ok, err := l.Request(ctx, recs[0].ID)
			if err != nil || !ok {
				t.Fatalf("Request(%d): %v, %v", recs[0].ID, ok, err)
			}
			if !jsonx.Valid(got.ToolsJSON) || strings.Count(got.ToolsJSON, `"name"`) != MaxTools || got.ToolsOmitted != 2+3 {
				t.Errorf("18 tools kept as %d, %d calls omitted: %s", strings.Count(got.ToolsJSON, `"name"`), got.ToolsOmitted, got.ToolsJSON)
			}
			wantTools := `[{"name":"search__web","source":"search","count":3,"errors":1,"duration_ms":1500},` +
				`{"name":"clock","source":"clock","count":1,"errors":0,"duration_ms":2},{"name":"t2","source":"s","count":2,"errors":0,"duration_ms":0},`
			if !strings.HasPrefix(got.ToolsJSON, wantTools) {
				t.Errorf("tools %s, want them to start %s", got.ToolsJSON, wantTools)
			}
			wantAttempts := `[{"backend":"east","deployment":"east/gpt-4o","model":"gpt","status":503,"error_type":"server_error","duration_ms":40,"continued":false,"prompt_tokens":0,"completion_tokens":0},` +
				`{"backend":"west","deployment":"west/gpt-4o","model":"gpt","status":200,"error_type":"","duration_ms":900,"continued":false,"prompt_tokens":120,"completion_tokens":30},` +
				`{"backend":"west","deployment":"west/gpt-4o","model":"gpt","status":200,"error_type":"","duration_ms":700,"continued":false,"prompt_tokens":180,"completion_tokens":12}]`
			if diff := cmp.Diff(wantAttempts, got.AttemptsJSON); diff != "" {
				t.Errorf("attempts (-want +got):\n%s", diff)
			}
		})
	}
}

// TestAppendTools: the stored summary is JSON whatever a name holds, and none is NULL.
func TestAppendTools(t *testing.T) {
	got := string(appendTools(nil, []ToolUse{{Name: `a"b`, Source: "<s>\n", Calls: 1}}))
	if !jsonx.Valid(got) || !strings.Contains(got, `"name":"a\"b"`) || !strings.Contains(got, `"count":1,"errors":0,"duration_ms":0}`) {
		t.Errorf("tools: %s", got)
	}
	if toolsText(nil) != nil {
		t.Error("no tools: not NULL")
	}
}
