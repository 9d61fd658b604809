// Package mcpserve is the gateway's own MCP endpoint: the tool sources of a tool registry
// served to MCP clients over MCP streamable HTTP (the official MCP Go SDK's server and
// handler), each API key seeing and calling exactly the tools of its tool list.
//
// A [Handler] serves one path. The gateway authenticates each HTTP request with its key
// (as the chat routes do) and hands it to [Handler.Serve] with that key's [Key]; the
// handler never sees the credential: it replaces the request's Authorization and
// x-api-key headers before the SDK reads them, and binds each session to the key name
// that created it (a request of another key for that session is refused with 403).
//
// What a session offers:
//   - tools/list: the definitions [Registry].Resolve gives for the key's tool list, named
//     as the tool loop names them ("<source>__<tool>", or the source's name for webhooks
//     and built-ins), sorted by name, with their input schemas and hints (readOnlyHint from
//     the source, and MCP sources' own annotations). A key whose tool list is empty is
//     refused at initialize with a JSON-RPC error that says so.
//   - tools/call: a tool of the key's list only (any other name, even one another key was
//     given, is the JSON-RPC error of an unknown tool), admitted against the key's
//     request limits ([Key].Admit), within the key's concurrency cap, run by
//     [Registry].Call (schema validation, timeouts, the result cache scoped by key,
//     masking, is_error results) under an "execute_tool" span, reported to the registry's
//     observer with via "mcp", progress notifications passed on to the client, and the
//     client's notifications/cancelled cancelling the call's context.
//   - resources/list, resources/templates/list, resources/read, prompts/list and
//     prompts/get of the MCP sources the key's list names whole (an entry "source", not
//     "source/tool"): resource and prompt names are "<source>__<name>" as tools are;
//     resource URIs are the source's.
//
// Every failure is a clean JSON-RPC error or an is_error tool result; nothing panics.
package mcpserve
