package gatewaytest

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/agate-gateway/agate/ledger"
)

// SQLiteLedgers makes SQLite ledger files at the current schema version for a test binary's
// gateways: each is a copy of one file it migrated from empty on first use. A test
// package declares one (var sqliteLedgers gatewaytest.SQLiteLedgers) and its tests call
// Fresh. A gateway started on such a file opens it, finds it current and runs no
// migration: a migration from empty costs about 0.15 s of CPU under -race, where checkptr
// checks every memory access of modernc's SQLite (#54). The migrations themselves are the
// ledger package's tests; a test that is about the gateway's own first start on an empty
// file must not use it. The zero value is ready; it is safe for concurrent use.
type SQLiteLedgers struct {
	once sync.Once
	db   []byte
	err  error
}

// Fresh returns the path of a new SQLite ledger file, named ledger.db, in t's temporary
// directory: a copy of the migrated template, which t may change at will. It fails t when
// the template cannot be made.
func (s *SQLiteLedgers) Fresh(t testing.TB) string {
	t.Helper()
	s.once.Do(func() { s.db, s.err = migratedSQLite() })
	if s.err != nil {
		t.Fatalf("the migrated SQLite ledger template: %v", s.err)
	}
	p := filepath.Join(t.TempDir(), "ledger.db")
	if err := os.WriteFile(p, s.db, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// migratedSQLite opens a ledger on an empty file, closes it, and returns the file: one
// file, since closing the last connection checkpoints the WAL into it and removes it.
func migratedSQLite() ([]byte, error) {
	dir, err := os.MkdirTemp("", "gatewaytest-ledger-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	p := filepath.Join(dir, "ledger.db")
	ctx := context.Background()
	l, err := ledger.Open(ctx, ledger.Options{Type: "sqlite", DSN: p, FlushInterval: time.Hour})
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
