// Package gemini is the Google Gemini generateContent upstream dialect: New returns its
// translate.Provider. It owns the request encoder (contents and parts, generationConfig,
// thinkingConfig, function declarations, thought signatures restored from carry ids), the
// decoder of streamGenerateContent chunks (alt=sse, or one JSON array) and of whole
// responses, logprobs, and the error decoder (google.rpc errors, RetryInfo).
//
// It imports translate and internal/jsonx only; it must not import another dialect, the
// proxy or anything that does I/O.
package gemini
