// Package translate is the gateway's own model of a completion and the contract between
// client dialects and upstream dialects (ARCHITECTURE.md has the picture).
//
// It owns the Request (what a client asked for: messages, tools, sampling, reasoning and
// cache settings), the Event vocabulary every upstream answer decodes into, Usage, the
// error types and their OpenAI mapping (UpstreamError, ParamError, ErrBadRequest...),
// carry ids (CarryID, SplitID: state an upstream needs back, riding in a tool call id),
// and the Provider and StreamDecoder interfaces an upstream dialect implements.
//
// It also holds, for now, the one client dialect the gateway serves, OpenAI chat
// completions: ParseRequest reads a request, ChunkEncoder writes events as
// chat.completion.chunk SSE frames, Assembler writes them as one chat.completion.
//
// It is pure: bytes or structs in, bytes or structs out, no network, no clock and no
// randomness a test cannot inject. It must not import an upstream dialect
// (translate/anthropic, gemini, responses, openai), the proxy, the loop or any server.
package translate
