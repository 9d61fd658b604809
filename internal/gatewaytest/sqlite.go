package gatewaytest

import (
	"context"
	"testing"
	"time"

	"github.com/agate-gateway/agate/internal/templatefile"
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
	tp templatefile.Template
}

// Fresh returns the path of a new SQLite ledger file, named ledger.db, in t's temporary
// directory: a copy of the migrated template, which t may change at will. It fails t when
// the template cannot be made.
func (s *SQLiteLedgers) Fresh(t testing.TB) string {
	t.Helper()
	return s.tp.Copy(t, "ledger.db", MigrateSQLite)
}

// MigrateSQLite opens a ledger on an empty SQLite file at path and closes it: the file at
// the current schema version, alone (closing the last connection checkpoints the WAL into
// it and removes it): SQLiteLedgers' template.
func MigrateSQLite(path string) error {
	ctx := context.Background()
	l, err := ledger.Open(ctx, ledger.Options{Type: "sqlite", DSN: path, FlushInterval: time.Hour})
	if err != nil {
		return err
	}
	return l.Close(ctx)
}
