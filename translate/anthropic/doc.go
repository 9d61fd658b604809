// Package anthropic is the Anthropic Messages upstream dialect: New returns its
// translate.Provider. It owns the request encoder (/v1/messages bodies: system blocks,
// thinking and redacted_thinking blocks restored from carry ids, prompt-cache breakpoints,
// tool_use and tool_result blocks), the stream and whole-response decoders (into
// translate Events) and the error decoder.
//
// It imports translate and internal/jsonx only; it must not import another dialect, the
// proxy or anything that does I/O.
package anthropic
