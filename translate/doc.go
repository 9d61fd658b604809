// Package translate is the gateway's own model of a completion and the contract between
// client dialects and upstream dialects (ARCHITECTURE.md has the picture).
//
// It owns the Request (what a client asked for: messages, tools, sampling, reasoning and
// cache settings), the Event vocabulary every upstream answer decodes into, Usage, the
// error types and their OpenAI mapping (UpstreamError, ParamError, ErrBadRequest...),
// carry ids (CarryID, SplitID: state an upstream needs back, riding in a tool call id),
// sealed blocks (SealBlock, OpenBlock: the same state as a dialect-tagged string for client
// wires that have a place for it), the Allowance under which a client parser opens both
// (what one request's compressed state may inflate to in all; Request.Carried keeps what
// it opened, Request.SplitID reads it), the one rule for tool names (CheckToolName),
// the Provider and StreamDecoder interfaces an upstream dialect implements, and the
// ClientStream and ClientAssembler interfaces a client dialect implements (client.go).
//
// Client dialects (translate/openaichat, responsesin and messagesin: OpenAI chat
// completions, OpenAI Responses, Anthropic Messages) parse their wire into a Request and
// encode Events back; upstream dialects (translate/anthropic, gemini, responses, openai,
// converse) encode a Request for their upstream and decode its answers into Events.
//
// It is pure: bytes or structs in, bytes or structs out, no network, no clock and no
// randomness a test cannot inject. It must not import a dialect package, the proxy, the
// loop or any server.
//
// [Turn] collects one model turn's events into what a server-side tool loop continues
// with (the assistant message and its tool calls, the usage, the finish reason), whatever
// the dialects on either side, so the loop needs none.
package translate
