// Package loop runs server-side tool loops: it calls the model, executes the server tools
// the model asks for, feeds the results back, and repeats until the model answers, while
// the client sees one seamless response: one id, server tool calls never shown as
// tool_calls, one finish reason at the end, usage summed over the turns. A tool failure
// goes back to the model as an error result; only infrastructure failures (the upstream,
// the client leaving) end the request.
//
// A [Loop] is its own options: the model, the tool executor, the definitions offered and
// the bounds, each zero bound replaced by the package's default ([DefaultMaxIterations],
// [DefaultMaxCallsPerTurn], [DefaultMaxConcurrentCalls], [DefaultKeepAliveInterval]). The
// loop reads no configuration: the proxy fills a Loop from a key's configuration. A model
// turn is collected with the core's dialect-neutral [translate.Turn], so the loop imports
// no dialect. ARCHITECTURE.md places it among the packages.
package loop
