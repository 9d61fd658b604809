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
// off for mock (whose answers are made in-process and never fail mid-stream). The cloud
// types vertex and bedrock serve more than one dialect: their models take the default of
// the dialect that serves them (ContinuationDialect), and the type alone is off.
//
// The dialects of the clouds:
//   - anthropic (Claude on Vertex AI's rawPredict, publisher anthropic, and on Bedrock's
//     InvokeModel): prefill. Both take the Messages API's body, whose final assistant
//     message Claude continues as on Anthropic's API (or refuses with a 400, which falls
//     to restart).
//   - gemini (Gemini on Vertex AI, publisher google): prefill, as gemini (a final model
//     turn).
//   - converse (Bedrock's Converse, every model but Claude): restart. Converse takes a
//     final assistant message, but what it means is each model's: Bedrock hands it to
//     the model (Claude continues it or refuses it), and for Mistral AI and Meta models
//     Converse embeds the messages in the model's prompt template, where a final
//     assistant turn may be closed as a finished turn and answered anew. That answer
//     would repeat the text the client has with nothing to tell it apart, where a
//     restart checks the repeat; set prefill on a model known to continue one.
func DefaultContinuation(backendType string) string {
	switch backendType {
	case "anthropic", "gemini":
		return ContinuationPrefill
	case "openai", "responses", "azure", "converse":
		return ContinuationRestart
	}
	return ContinuationOff
}

// ContinuationDialect is the dialect whose default continuation (DefaultContinuation) a
// model on a backend of type backendType takes: the type itself, but for vertex
// (anthropic under publisher anthropic, else gemini) and bedrock (anthropic for a Claude
// model, claude set, which InvokeModel serves; else converse).
func ContinuationDialect(backendType, publisher string, claude bool) string {
	switch {
	case backendType == "vertex" && publisher == "anthropic":
		return "anthropic"
	case backendType == "vertex":
		return "gemini"
	case backendType == "bedrock" && claude:
		return "anthropic"
	case backendType == "bedrock":
		return "converse"
	}
	return backendType
}

// ContinuationOf is the continuation of a model whose continuation is set (set: "" when
// the model sets none, or for a route not configured as a model) on a backend of type
// backendType (for the clouds, the dialect that serves the model: ContinuationDialect).
// Load leaves an unset continuation empty: it depends on the backend's type.
func ContinuationOf(backendType, set string) string {
	if set == "" {
		return DefaultContinuation(backendType)
	}
	return set
}

// validateContinuation checks models.<name>.continuation: one of the values, and not
// prefill on a backend whose API never continues a partial assistant message (noPrefill).
func (c *Config) validateContinuation(v *validator, p string, m Model) {
	v.oneOf(p+".continuation", m.Continuation, continuations)
	if m.Continuation != ContinuationPrefill {
		return
	}
	names := []string{m.Backend}
	for _, d := range m.Deployments {
		names = append(names, d.Backend)
	}
	for _, name := range names {
		if b, ok := c.Backends[name]; ok {
			if why := noPrefill(b.Type); why != "" {
				v.addf(p+".continuation", "prefill is not possible on backend %q of type %s: %s; use restart", name, b.Type, why)
				return
			}
		}
	}
}

// noPrefill is why a backend of type typ cannot take a prefill, "" when it may: OpenAI's
// Responses API, and Azure OpenAI's chat completions and Responses APIs (OpenAI's, which
// refuse a member they do not know, continue_final_message included), take a final
// assistant message as history and answer anew, which a prefill would show after the
// text the client has. An openai backend may be a server that continues one (vLLM,
// SGLang, llama.cpp): prefill is the operator's choice there.
func noPrefill(typ string) string {
	switch typ {
	case "responses":
		return "the Responses API does not continue a partial assistant message"
	case "azure":
		return "Azure OpenAI's APIs do not continue a partial assistant message"
	}
	return ""
}
