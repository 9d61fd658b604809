package proxy_test

import (
	"os"
	"testing"

	"github.com/agate-gateway/agate/ledger/pgtest"
)

// postgres is the PostgreSQL cluster this test binary's tests share, each test on a
// database of its own (postgres.NewDatabase).
var postgres pgtest.Shared

// TestMain stops the shared cluster once the tests have run.
func TestMain(m *testing.M) {
	code := m.Run()
	postgres.Close()
	os.Exit(code)
}
