// Package responses is the OpenAI Responses upstream dialect (/v1/responses): New returns
// its translate.Provider. It owns the request encoder (input items, instructions,
// reasoning items with encrypted content restored from carry ids, function tools), the
// decoders of the response.* stream events and of whole Response objects, and the error
// decoder.
//
// It imports translate and internal/jsonx only; it must not import another dialect, the
// proxy or anything that does I/O. Serving /v1/responses to clients is the client
// dialect translate/responsesin.
package responses
