// Package translate converts between the OpenAI chat completions API, which Agate serves,
// and the upstream dialects it speaks (Anthropic Messages, Gemini generateContent, OpenAI
// Responses, OpenAI chat). It is pure: bytes or structs in, bytes or structs out, no network,
// no clock and no randomness a test cannot inject.
//
// Every upstream response, streamed or not, is decoded into the same small vocabulary of
// Events. One ChunkEncoder turns events into OpenAI chat.completion.chunk SSE frames, and one
// Assembler turns them into a complete chat.completion. Each provider contributes a Provider:
// a request encoder, a stream decoder, a whole-response decoder and an error decoder.
package translate
