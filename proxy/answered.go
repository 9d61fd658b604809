package proxy

import "github.com/valyala/fasthttp"

// The model that answered: when the route's model failed before answering and one of its
// fallbacks answered, the client is told so. The answer's model field names the fallback by
// its configured name (as OpenAI names the snapshot that served), on every client API,
// translated and passed through; the response headers x-agate-model (always, on an answer)
// and x-agate-fallback: 1 say so too; the access line carries answered_model and fallback,
// and gateway_fallback_answers_total counts it. Without a fallback, the answer is what it
// was before, the x-agate-model header aside.

// Headers of an answer: the configured name of the model that answered, and whether it was
// a fallback. They are spelled as fasthttp writes a header it normalizes (x-agate-model
// is sent as X-Agate-Model), and set with SetCanonical: Set would copy and normalize the
// name again for every answer.
const (
	headerModel    = "X-Agate-Model"
	headerFallback = "X-Agate-Fallback"
)

// modelSetter is a client dialect's stream encoder or assembler whose client-facing model
// can be replaced before it writes anything: each of the three client APIs' is
// (openaichat.ChunkEncoder and Completion, responsesin.Answer, messagesin.Encoder and
// Message).
type modelSetter interface{ SetModel(model string) }

// noteAnswered records, once the answer was accepted, the route that answered it (the
// model call's last attempt's); when it is a fallback, a translated answer's writer w (nil
// for a passthrough, whose forwarder names the route itself) names it. A stream calls it
// when it commits, before its first event is written; a whole answer before its body is
// appended.
func (c *requestRun) noteAnswered(w any) {
	r := c.call.at
	if r == nil { // nothing was called (a stream committed by a keep-alive alone)
		r = c.route
	}
	c.answeredBy = r
	if r.of() == c.route {
		return
	}
	if m, ok := w.(modelSetter); ok {
		m.SetModel(r.name)
	}
}

// answerHeaders sets the headers of a 200 answer that name the model that answered
// (noteAnswered), and counts an answer of a fallback (gateway_fallback_answers_total).
func (c *requestRun) answerHeaders(h *fasthttp.ResponseHeader) {
	c.cacheHeader(h)
	r := c.answeredBy
	if r == nil {
		return
	}
	if headerSafe(r.name) { // a direct route's name is the client's: it may hold anything
		h.SetCanonical([]byte(headerModel), []byte(r.name))
	}
	if r.of() != c.route {
		h.SetCanonical([]byte(headerFallback), []byte("1"))
		c.s.metrics.FallbackAnswers.WithLabelValues(c.route.label(), r.name).Inc()
	}
}

// headerSafe reports whether s can be a header value as it is: no control characters (a
// line break would end the header).
func headerSafe(s string) bool {
	for i := 0; i < len(s); i++ {
		if b := s[i]; b < ' ' || b == 0x7f {
			return false
		}
	}
	return true
}

// answeredModel returns the configured name of the model that answered ("" when none did;
// a direct route's, the client's name, clipped) and whether it was a fallback, for the
// request's record.
func (c *requestRun) answeredModel() (string, bool) {
	if c.answeredBy == nil {
		return "", false
	}
	r := c.answeredBy
	name := r.logName
	if name == "" { // a route made without it
		name = clip(r.name, maxLoggedString)
	}
	return name, r.of() != c.route
}
