package ledger

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/agate-gateway/agate/ledger/pgtest"
)

// Postgres is the PostgreSQL cluster this test binary's tests share (pgtest.Shared),
// exported (from a test file: to tests only) for the external ledger_test package, which
// runs in the same binary.
var Postgres pgtest.Shared

func TestMain(m *testing.M) { os.Exit(Postgres.Run(m)) }

// sqliteTemplate is the bytes of a SQLite ledger this test binary migrated from an empty
// file once, which FreshSQLite copies.
var sqliteTemplate struct {
	once sync.Once
	db   []byte
	err  error
}

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
	sqliteTemplate.once.Do(func() { sqliteTemplate.db, sqliteTemplate.err = migratedSQLite() })
	if sqliteTemplate.err != nil {
		t.Fatal(sqliteTemplate.err)
	}
	p := filepath.Join(t.TempDir(), "ledger.db")
	if err := os.WriteFile(p, sqliteTemplate.db, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// migratedSQLite opens a ledger on an empty file, closes it, and returns the file: one
// file, since closing the last connection checkpoints the WAL into it and removes it.
func migratedSQLite() ([]byte, error) {
	dir, err := os.MkdirTemp("", "ledger-template-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	p := filepath.Join(dir, "ledger.db")
	ctx := context.Background()
	l, err := Open(ctx, Options{Type: "sqlite", DSN: p, FlushInterval: time.Hour})
	if err != nil {
		return nil, err
	}
	if err := l.Close(ctx); err != nil {
		return nil, err
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	if len(ents) != 1 {
		return nil, errors.New("the migrated SQLite template left more than its database file (a WAL not checkpointed?)")
	}
	return os.ReadFile(p)
}
