package translate

// UsageReporter is implemented by stream decoders whose upstream reports usage before the
// stream ends (Anthropic's message_start and message_delta, Gemini's usageMetadata on every
// chunk). UsageSoFar returns the usage reported so far, the zero Usage if none, and
// whether its completion figure counts every event emitted so far (current): Gemini's
// cumulative usageMetadata and Anthropic's message_delta do; Anthropic's message_start,
// sent before any content, does not. The proxy counts it when a stream ends before Close
// emitted the usage (the client left, the upstream failed), so tokens the upstream
// reported are never lost, and estimates what it relayed past a figure that is not
// current.
type UsageReporter interface {
	UsageSoFar() (u Usage, current bool)
}
