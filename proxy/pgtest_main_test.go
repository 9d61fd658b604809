package proxy_test

import (
	"flag"
	"os"
	"strconv"
	"testing"

	"github.com/agate-gateway/agate/internal/gatewaytest"
	"github.com/agate-gateway/agate/ledger/pgtest"
)

// postgres is the PostgreSQL cluster this test binary's tests share (pgtest.Shared).
var postgres pgtest.Shared

// sqliteLedgers makes this binary's SQLite ledger files, copies of one migrated file.
var sqliteLedgers gatewaytest.SQLiteLedgers

// parallelDefault is how many of this binary's parallel tests run at once when
// -test.parallel is not given. Go's default is GOMAXPROCS, but most of these tests wait:
// on a subprocess (the Node SDKs, Claude Code, Codex), a fake upstream's delay or a
// retry's backoff, so on two cores two at a time left the cores idle for most of the
// parallel phase. The tests whose checks hold a clock or count allocations are serial and
// run before the parallel phase, alone in this process.
const parallelDefault = 4

func TestMain(m *testing.M) {
	flag.Parse()
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if !given {
		if err := flag.Set("test.parallel", strconv.Itoa(parallelDefault)); err != nil {
			panic(err)
		}
	}
	os.Exit(postgres.Run(m))
}
