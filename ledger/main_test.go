package ledger

import (
	"os"
	"testing"

	"github.com/agate-gateway/agate/ledger/pgtest"
)

// Postgres is the PostgreSQL cluster this test binary's tests share (pgtest.Shared),
// exported (from a test file: to tests only) for the external ledger_test package, which
// runs in the same binary.
var Postgres pgtest.Shared

func TestMain(m *testing.M) { os.Exit(Postgres.Run(m)) }
