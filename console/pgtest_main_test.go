package console_test

import (
	"os"
	"testing"

	"github.com/agate-gateway/agate/internal/gatewaytest"
	"github.com/agate-gateway/agate/ledger/pgtest"
)

// postgres is the PostgreSQL cluster this test binary's tests share (pgtest.Shared).
var postgres pgtest.Shared

// sqliteLedgers makes this binary's SQLite ledger files, copies of one migrated file.
var sqliteLedgers gatewaytest.SQLiteLedgers

// TestMain runs the tests with the shared PostgreSQL cluster, then closes the shared
// browser (browsers) if a test started it.
func TestMain(m *testing.M) {
	code := postgres.Run(m)
	browsers.stop()
	os.Exit(code)
}
