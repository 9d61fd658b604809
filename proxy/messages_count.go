package proxy

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/agate-gateway/agate/internal/jsonx"
	"github.com/agate-gateway/agate/translate"
	"github.com/agate-gateway/agate/translate/messagesin"
	"github.com/agate-gateway/agate/upstream"
)

// handleCountTokens serves POST /v1/messages/count_tokens: {"input_tokens": n} for the
// request's input on its model's route. An anthropic backend counts with its own
// count_tokens (the body forwarded as for /v1/messages), a gemini backend with
// countTokens (the translated request), Claude on vertex and bedrock and Gemini on vertex
// with their clouds' count endpoints (cloudCount), a Converse model on bedrock with
// CountTokens where Bedrock counts for it (converseCount); any other backend, or the mock,
// gets messagesin.EstimateTokens. The x-agate-token-count header says whether the count is
// the upstream's ("exact") or an estimate. The upstream is asked once, without retries or
// fallbacks.
// It passes the key's and the model's limits and budget like any request (limitRun).
func (s *Server) handleCountTokens(ctx *fasthttp.RequestCtx, rid string) {
	rt := s.runtime()
	start := time.Now()
	key, err := requestKey(ctx, rt)
	if err != nil {
		s.fail(ctx, rid, err, "", "", "", "")
		return
	}
	req, err := messagesin.ParseWithin(ctx.PostBody(), true, s.maxInflated)
	if err != nil {
		s.fail(ctx, rid, err, "", "", key.name, "")
		return
	}
	r, err := rt.routeFor(key, req.Model)
	if err != nil {
		s.fail(ctx, rid, err, unknownLabel, "", key.name, "false")
		return
	}
	c := &requestRun{s: s, rt: rt, key: key, route: r, req: req, rid: rid, start: start}
	c.call = &modelCall{rt: rt, route: r, key: key, metrics: s.metrics, base: s.logger, rid: rid, body: upstream.Buffer{Pool: &s.bodies}, reads: &s.streamReads}
	// Admitted like any request (its key's and model's requests count, it holds their
	// concurrency slots while it runs) but charged no tokens: it reserves none, and its
	// usage is zero. A refusal is the Anthropic-dialect 429 (writeError by path).
	c.limits.countOnly = true
	if !c.admit(ctx) {
		return
	}
	defer c.endLimits()
	m := &messagesRun{c: c, body: ctx.PostBody(), header: &ctx.Request.Header}
	cctx, cancel := context.WithCancel(s.baseCtx)
	defer cancel()
	var n int
	exact := true // false when n is estimated (the x-agate-token-count header)
	err = m.prepare()
	switch {
	case err != nil:
	case r.backend.typ == "anthropic":
		n, err = m.countUpstream(cctx, countTokensPath, m.passBody(nil, r), "input_tokens")
	case cloudCounted(r):
		path, body, field, _, cerr := m.cloudCount(r, req)
		if err = cerr; err == nil {
			n, err = m.countUpstream(cctx, path, body, field)
		}
	case r.backend.typ == "gemini":
		var body []byte
		body, err = r.backend.provider.AppendRequest(nil, req, c.call.options(r, false))
		if err == nil {
			wrapped := append([]byte(`{"generateContentRequest":{"model":`), jsonx.AppendString(nil, "models/"+r.upstreamModel)...)
			wrapped = append(wrapped, ',')
			wrapped = append(append(wrapped, body[1:]...), '}')
			n, err = m.countUpstream(cctx, "/v1beta/models/"+url.PathEscape(r.upstreamModel)+":countTokens", wrapped, "totalTokens")
		}
	case r.backend.typ == "bedrock": // a Converse model
		n, exact, err = m.converseCount(cctx, r, req)
	default:
		n, exact = messagesin.EstimateTokens(req), false
	}
	if err != nil {
		s.fail(ctx, rid, err, r.label(), r.backend.name, key.name, "false")
		return
	}
	ctx.SetContentType("application/json")
	if exact {
		ctx.Response.Header.Set(tokenCountHeader, "exact")
	} else {
		ctx.Response.Header.Set(tokenCountHeader, "estimated")
	}
	ctx.SetBody(strconv.AppendInt([]byte(`{"input_tokens":`), int64(n), 10))
	ctx.Response.AppendBodyString("}")
	s.metrics.Requests.WithLabelValues(r.label(), r.backend.name, key.name, "200", "false", apiMessages).Inc()
}

// countUpstream posts body to path on the route's backend and returns the integer member
// field of its JSON answer.
func (m *messagesRun) countUpstream(ctx context.Context, path string, body []byte, field string) (int, error) {
	c, r := m.c.call, m.c.route
	b := r.backend
	start := time.Now()
	x, err := b.client.Send(ctx, path, c.upstreamHeaders(b), body, false, new(upstream.Exchange))
	c.metrics.UpstreamOf(b.name, r.upstreamLabel, upstream.StatusLabel(err)).Observe(time.Since(start).Seconds())
	if keyRejected(err) != nil {
		return 0, credentialFault(b.name, b.credentialKey())
	}
	if err != nil {
		return 0, err
	}
	defer x.Close()
	raw, err := upstream.ReadBody(ctx, x, b.name, nil)
	if err != nil {
		return 0, err
	}
	n, ok := messagesin.ReadTokenCount(raw, field)
	if !ok {
		return 0, &translate.UpstreamError{Status: http.StatusBadGateway, Type: "api_error",
			Message: "the upstream of backend " + b.name + " answered the token count without " + field}
	}
	return n, nil
}
