package proxy

// A passthrough forwards the client's body as it came and needs of the request only its
// top-level fields (the model, stream, max_tokens, tools) once the body is known to be
// valid: a Messages, Responses or chat body is read by a validate-only first pass
// (messagesin.ParseHead, responsesin.ParseHead, openaichat.ParseHead), which checks it
// and reads those fields, and its messages are built only when something reads them. Every reader of a request's messages that a passthrough's path reaches
// calls requestRun.fullRequest first: the response cache (planCache), the token estimate
// of limits (tokenEstimate), deployment affinity (noteAffinity), the ledger's captured
// text (toLedger), the usage estimate of an upstream that reports none (meter.charge);
// and a run that translates (or runs the tool loop, or continues a stored response, or is
// traced) completes its request when it chooses to (messagesRun.prepare,
// responsesRun.prepare, chatRun.prepare) or never defers it.

// mayPass reports whether a request for model may be passed through: its route and
// fallbacks are all backends ok accepts (allRoutes, but for the key's server tools, which
// the parse does not know yet). A request that will be translated has its messages built
// by the first pass's own walk, complete at once, rather than read by a first pass and
// again (ParseHead's passes).
func (s *Server) mayPass(model string, ok func(*route) bool) bool {
	rt := s.runtime()
	r, err := rt.resolve(model)
	if err != nil {
		return true // refused once routed, with the first pass's request
	}
	if !r.every(ok) {
		return false
	}
	for _, fb := range r.fallbacks {
		if f, found := rt.routes[fb]; !found || !f.every(ok) {
			return false
		}
	}
	return true
}

// speaksResponses accepts the backends of the Responses passthrough (responsesOnly).
func speaksResponses(r *route) bool { return r.backend.dialect == "responses" }

// deferredRequest is an endpointRun whose request a first pass read incomplete:
// buildRequest completes it in place (the readers hold its pointer).
type deferredRequest interface{ buildRequest() }

// fullRequest completes c.req when a first pass read it; a no-op otherwise, and on a nil
// run (a meter without one).
func (c *requestRun) fullRequest() {
	if c == nil || c.deferred == nil {
		return
	}
	d := c.deferred
	c.deferred, c.ownCall.meter.pending = nil, nil
	d.buildRequest()
}

// buildRequest completes the request responsesin.ParseHead read, in a recycled Stage.
// As messagesRun's.
func (x *responsesRun) buildRequest() {
	st := x.c.s.respStages.get()
	err := st.Build(x.req)
	x.c.s.respStages.put(st)
	if err != nil {
		x.c.s.logger.Error("the full parse of a Responses request refused what its first pass accepted",
			"request_id", x.c.rid)
	}
}

// buildRequest completes the request messagesin.ParseHead read from m.body. ParseHead
// vouched for the body, so the full parse accepts it (FuzzParseHead); should it not, the
// request stays as the first pass read it and the failure is logged, without the body.
// The full parse works in a recycled Stage, off the stack.
func (m *messagesRun) buildRequest() {
	st := m.c.s.msgStages.get()
	err := st.Build(m.c.req, m.body, m.c.s.maxInflated)
	m.c.s.msgStages.put(st)
	if err != nil {
		m.c.s.logger.Error("the full parse of a Messages request refused what its first pass accepted",
			"request_id", m.c.rid)
	}
}
