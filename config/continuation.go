package config

// The values of Model.Continuation: what the gateway does when a streamed, translated
// answer fails after part of it reached the client (the upstream cut the stream, stalled
// past timeouts.stream_idle, or sent an error event).
const (
	// ContinuationPrefill sends the request again with the text the client already has
	// appended as a partial assistant message (a prefill), and relays what the model
	// adds. For backends that accept a trailing assistant turn: Anthropic (a final
	// assistant message is continued, "prefilling Claude's response"; its trailing
	// whitespace must be trimmed, which the gateway does), Gemini (a final model turn),
	// and OpenAI-compatible servers that continue a partial assistant message
	// (vLLM, llama.cpp and others; set it on the model explicitly). A backend that
	// refuses the prefill with a 400 (newer Claude models do) is asked again once with
	// restart; the client never sees that 400.
	ContinuationPrefill = "prefill"
	// ContinuationRestart sends the original request again and relays only what follows
	// the text the client already has, when the new answer starts with that text; when it
	// does not, the stream ends with an in-band error saying the answer could not be
	// continued. For backends that do not continue a partial assistant message: OpenAI's
	// chat completions and Responses APIs treat a final assistant message as history,
	// not as a prefix to extend.
	ContinuationRestart = "restart"
	// ContinuationOff ends the stream with an in-band error, as before continuation
	// existed.
	ContinuationOff = "off"
)

var continuations = []string{"", ContinuationPrefill, ContinuationRestart, ContinuationOff}

// DefaultContinuation is the continuation of a model on a backend of type backendType
// when the model sets none: prefill for anthropic and gemini, restart for openai,
// responses and azure (Azure OpenAI's chat completions and Responses APIs are OpenAI's),
// off for mock (whose answers are made in-process and never fail mid-stream) and the
// other cloud types.
func DefaultContinuation(backendType string) string {
	switch backendType {
	case "anthropic", "gemini":
		return ContinuationPrefill
	case "openai", "responses", "azure":
		return ContinuationRestart
	}
	return ContinuationOff
}

// ContinuationOf is the continuation of a model whose continuation is set (set: "" when
// the model sets none, or for a route not configured as a model) on a backend of type
// backendType. Load leaves an unset continuation empty: it depends on the backend's type.
func ContinuationOf(backendType, set string) string {
	if set == "" {
		return DefaultContinuation(backendType)
	}
	return set
}

// validateContinuation checks models.<name>.continuation.
func validateContinuation(v *validator, p string, m Model) {
	v.oneOf(p+".continuation", m.Continuation, continuations)
}
