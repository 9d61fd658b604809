package translate

// ContextLimit is implemented by a Provider whose error answers can say that a request is
// over the model's context window (a larger model may take it): each upstream says it its
// own way, and only its provider knows how.
type ContextLimit interface {
	// ContextExceeded reports whether e, an error the provider's DecodeError returned,
	// says the request is over the model's context window.
	ContextExceeded(e *UpstreamError) bool
}

// ContextExceeded reports whether e, an error p's DecodeError returned, says the request
// is over the model's context window: false for a provider that cannot tell
// (ContextLimit).
func ContextExceeded(p Provider, e *UpstreamError) bool {
	cl, ok := p.(ContextLimit)
	return ok && e != nil && cl.ContextExceeded(e)
}
