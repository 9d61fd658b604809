package translate

// UsageReporter is implemented by stream decoders whose upstream reports usage before the
// stream ends (Anthropic's message_start and message_delta, Gemini's usageMetadata on every
// chunk). UsageSoFar returns the usage reported so far, the zero Usage if none. The proxy
// counts it when a stream ends before Close emitted the usage (the client left, the
// upstream failed), so tokens the upstream reported are never lost.
type UsageReporter interface {
	UsageSoFar() Usage
}
