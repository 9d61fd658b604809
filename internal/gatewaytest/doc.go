// Package gatewaytest starts real gateways for end-to-end tests: a configuration from YAML,
// a file or a struct, the tool registry when asked for, proxy.New, a loopback listener and
// Serve, with Shutdown (and the registry's Close) in t.Cleanup. Beside the gateway it holds
// what the external tests of proxy, cmd/gateway and deploy shared by copy: fake upstreams
// that speak each provider's wire from a script of turns (Fake, Fleet), the goroutine-safe
// log sink (Buffer), the lookup of the npm and Debian tools the tests run for real (Require:
// skipped when missing, fatal under CI=true, where .ci/run installs them), the SDK
// clients pointed at a gateway (OpenAI, Anthropic), and SQLite ledger files copied from one
// migrated per test binary (SQLiteLedgers).
//
// It imports proxy, so it is importable only by tests in practice: by the external test
// packages (package proxy_test) and by the tests of packages above proxy. The internal
// tests of proxy (package proxy) cannot import it (the cycle proxy → gatewaytest → proxy)
// and keep their own harness. Nothing in the gateway imports it.
package gatewaytest
