// Package tools runs the server-side tools that the gateway's tool loop offers to models.
//
// A [Registry] is built by [New] from its own options: a [SourceOptions] per source,
// with per-tool [Override]s, and the result cache's [CacheOptions]; what a field left zero
// means is the package's default ([DefaultTimeout], [DefaultMaxResultBytes],
// [DefaultCacheMaxEntries], [DefaultCacheTTL]). The package reads no configuration: the
// gateway maps its `tools:` and `cache:` sections to these options.
//
// New connects every source at start (MCP servers over stdio or streamable HTTP, HTTP webhooks, and a few built-ins),
// validates every tool definition up front ([Registry.Update] does the same for the
// sources a configuration reload adds or changes, and stops those it removes; an MCP
// server that cannot be reached is retried in the background unless its source is
// Required), and then serves two things to the loop: the
// definitions a key may use ([Registry.Resolve]) and the execution of a model's tool call
// ([Registry.Call]). Every failure of a tool call (unknown tool, arguments that are not JSON
// or fail the tool's JSON Schema, a tool error, a timeout, an oversize result) comes back as a
// [Result] marked IsError with a message written for the model; only the caller's context
// ends a call early. Results of cacheable tools are kept in a [Cache] keyed by the caller
// (the API key named by [WithCaller], unless [CacheOptions].Shared), the tool name and
// the canonical JSON of the arguments, and concurrent identical calls of such tools by the
// same caller share one execution.
//
// The package keeps no package-level mutable state: caches, clients and metrics hooks
// ([Observer]) are values owned by one Registry.
package tools
