// Package openai is the upstream dialect of OpenAI-compatible chat completions servers
// (/chat/completions): New returns its translate.Provider, which re-encodes a Request
// (the passthrough forwards the client's body instead when it can) and decodes chunks,
// whole completions and OpenAI error bodies into translate Events. ParseUsage reads an
// OpenAI usage object.
//
// It imports translate and internal/jsonx only; it must not import another dialect, the
// proxy or anything that does I/O.
package openai
