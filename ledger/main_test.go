package ledger

import (
	"os"
	"testing"

	"github.com/agate-gateway/agate/ledger/pgtest"
)

// Postgres is the PostgreSQL cluster this test binary's tests share, each test on a
// database of its own (Postgres.NewDatabase). It is exported (from a test file, so only
// to tests) for the external ledger_test package, which runs in the same binary.
var Postgres pgtest.Shared

// TestMain stops the shared cluster once the tests have run.
func TestMain(m *testing.M) {
	code := m.Run()
	Postgres.Close()
	os.Exit(code)
}
