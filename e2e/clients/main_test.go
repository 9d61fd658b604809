package clients

import (
	"flag"
	"os"
	"testing"

	"github.com/agate-gateway/agate/internal/gatewaytest"
)

// parallelDefault is how many of this binary's parallel tests run at once when
// -test.parallel is not given, as in proxy's binary where these tests ran before: each is
// a chain of client processes it waits on, and with Go's default (GOMAXPROCS, two here)
// the chains would run two at a time, each leaving its core idle between its processes.
const parallelDefault = 4

func TestMain(m *testing.M) {
	flag.Parse()
	gatewaytest.SetParallel(parallelDefault)
	os.Exit(m.Run())
}
