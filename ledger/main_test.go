package ledger

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/agate-gateway/agate/internal/templatefile"
	"github.com/agate-gateway/agate/ledger/pgtest"
)

// Postgres is the PostgreSQL cluster this test binary's tests share (pgtest.Shared),
// exported (from a test file: to tests only) for the external ledger_test package, which
// runs in the same binary.
var Postgres pgtest.Shared

func TestMain(m *testing.M) { os.Exit(Postgres.Run(m)) }

// sqliteTemplate is a SQLite ledger this test binary migrates from an empty file once,
// which FreshSQLite copies.
var sqliteTemplate templatefile.Template

// FreshSQLite returns the path of a new SQLite ledger in t's temporary directory at the
// current schema version: a copy of a database this test binary migrated from an empty
// file (once, on first use), which Open finds current. A test that opens a ledger to
// check something else starts from the very database a migration from empty gives,
// without paying that migration: about 0.15 s of CPU each under -race, where checkptr
// checks every memory access of modernc's SQLite (#54). The migrations themselves are
// held by the tests that start from an empty file (TestLedger_Migrations) or from an
// older version (TestSchemaV*, sqliteAtVersion).
func FreshSQLite(t testing.TB) string {
	t.Helper()
	return sqliteTemplate.Copy(t, "ledger.db", migrateSQLite)
}

// migrateSQLite opens a ledger on an empty file at path and closes it: one file, since
// closing the last connection checkpoints the WAL into it and removes it.
func migrateSQLite(path string) error {
	ctx := context.Background()
	l, err := Open(ctx, Options{Type: "sqlite", DSN: path, FlushInterval: time.Hour})
	if err != nil {
		return err
	}
	return l.Close(ctx)
}
