// Package clients holds the end-to-end tests that drive the real external clients of the
// gateway as their users run them, each a process of its own: Claude Code headless, Codex
// CLI (`codex exec`, over HTTP and over the Responses WebSocket), and the Node SDKs (the
// Anthropic SDK, the openai SDK's Responses client, the Vercel AI SDK, the OpenAI Agents
// SDK), against gateways started with internal/gatewaytest. Without the executables or npm
// packages a test skips, saying what to install; under CI=true it fails (.ci/run installs
// them).
//
// It has no code beside its tests. Its tests are here, not in proxy's, because they are
// the longest chains of the warm `go test ./...` run and this package's binary links and
// runs early in the go command's order (its import path sorts before proxy), beside the
// packages that wait, instead of at the end of proxy's parallel phase (#54; docs/development.md,
// "Test time, fifteenth session"). Tests of a gateway feature that run a client once for
// it (the MCP endpoint's Claude Code and Node client, the response cache's and the
// embeddings' Node SDK runs, Codex's reasoning round trip) stay with their feature in proxy.
package clients
