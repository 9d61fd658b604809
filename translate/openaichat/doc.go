// Package openaichat is the client dialect of OpenAI chat completions
// (/v1/chat/completions): ParseRequest reads a request into a translate.Request
// (validating JSON, UTF-8 and member names, blaming the param of each error;
// ParseRequestLazy and its variants leave message strings escaped until Decode, the
// String variants building in a caller's Scratch and Stage), ChunkEncoder writes
// translate Events as chat.completion.chunk SSE frames, Assembler collects them into one
// chat.completion, and AppendError and AppendErrorEvent write OpenAI error bodies.
// ChunkEncoder and Completion (over an Assembler) are its side of the client contract,
// translate.ClientStream and translate.ClientAssembler (client.go).
//
// It imports translate, internal/jsonx, translate/internal/members and
// translate/internal/slab only; it must not import an upstream dialect, the proxy or
// anything that does I/O. The other client dialects, OpenAI Responses and Anthropic
// Messages, are translate/responsesin and translate/messagesin beside it.
package openaichat
