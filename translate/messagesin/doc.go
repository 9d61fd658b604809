// Package messagesin is Anthropic's Messages API as a client dialect: it reads a
// POST /v1/messages (or /v1/messages/count_tokens) body into the core translate.Request,
// and writes the core translate.Events back as an Anthropic Message object or as the
// Messages event stream (message_start, content_block_start/delta/stop, message_delta,
// message_stop, ping, error). It also renders errors in Anthropic's shape. Encoder and
// Message (over an Assembler) are its side of the client contract, translate.ClientStream
// and translate.ClientAssembler (client.go).
//
// Like the rest of translate it is pure: bytes or structs in, bytes or structs out. It
// imports only the core translate package, internal/jsonx, translate/internal/members and translate/internal/slab.
//
// A block's cache_control (on system, text, image and document blocks, tool_result blocks
// and tools) goes into the core (Part.CacheControl, Tool.CacheControl), which an Anthropic
// upstream gets back and the others drop; it must be an object.
//
// What has no counterpart in the core is dropped, never an error, so that the requests
// Claude Code sends are served on every backend: the top-level and tool_use blocks'
// cache_control, context_management,
// container, service_tier, inference_geo, metadata other than user_id, Anthropic-defined
// tools (web_search, bash, text_editor, tool search...) and server-tool blocks in the
// history. Deferred tools (defer_loading) are offered to the model like any other tool.
// A role "system" message in the middle of messages becomes a core system message at that
// position.
package messagesin
