package proxy_test

import (
	"os"
	"testing"

	"github.com/agate-gateway/agate/ledger/pgtest"
)

// postgres is the PostgreSQL cluster this test binary's tests share (pgtest.Shared).
var postgres pgtest.Shared

func TestMain(m *testing.M) { os.Exit(postgres.Run(m)) }
