package proxy

import "github.com/agate-gateway/agate/metrics"

// testRuntime are the Go and process collectors every gateway of this test binary
// registers (metrics.Options.Runtime), built once: building the Go collector costs a few
// milliseconds under the race detector and the tests start hundreds of gateways.
var testRuntime = metrics.NewRuntime()

// TestRuntime is testRuntime for the external tests (gatewaytest.Options.Runtime).
var TestRuntime = testRuntime
