package proxy

import (
	"context"
	"errors"
	"strings"

	"github.com/valyala/fasthttp"

	"github.com/agate-gateway/agate/translate"
	"github.com/agate-gateway/agate/translate/embeddingsin"
	"github.com/agate-gateway/agate/translate/openaichat"
	"github.com/agate-gateway/agate/upstream"
)

// POST /v1/embeddings: OpenAI's embeddings API on the one request path (serve: the key,
// the route and allowlist, limits and budgets, the metrics with api="embeddings", the
// access line, the spans with gen_ai.operation.name "embeddings"). A route whose backend
// and fallbacks are all openai is passed through (embeddingsin.AppendForward: only the
// model rewritten, on the way up and back); any other is translated: each backend's
// provider, a translate.Embedder, gets the inputs in batches of its limit, and the
// vectors are joined in order and written as the client asked (floats or base64). The
// mock backend answers deterministic vectors (mock.Provider.Embed). A route to a backend
// that cannot embed is a 400 naming the model.

const (
	embeddingsPath   = "/v1/embeddings"
	embeddingsPathV0 = "/embeddings"
	// apiEmbeddings is the api label of the embeddings requests.
	apiEmbeddings = "embeddings"
)

// localEmbedder is a localProvider that embeds in process (the mock).
type localEmbedder interface {
	Embed(ctx context.Context, req *translate.EmbedRequest) (*translate.Embeddings, error)
}

// answerer is an endpointRun that makes its whole answer itself, with the run's model
// call (complete asks it instead of a forwarder or an assembler): embeddings.
type answerer interface {
	// answer appends the answer's body to dst.
	answer(ctx context.Context, dst []byte) ([]byte, error)
}

func (s *Server) handleEmbeddings(ctx *fasthttp.RequestCtx, rid string) {
	s.serve(ctx, rid, "", apiEmbeddings, func(body []byte, c *requestRun) (*translate.Request, endpointRun, error) {
		// A copy: the request's strings outlive nothing but the handler, yet a tracer
		// exports the span's attributes later.
		ereq, err := embeddingsin.Parse(string(body))
		if err != nil {
			return nil, nil, err
		}
		// The request path's own request: the model, for the route, the span and limits.
		return &translate.Request{Model: ereq.Model}, &embedRun{c: c, req: ereq}, nil
	})
}

// embedRun is the embeddings API's side of the request path (endpointRun, answerer).
type embedRun struct {
	c   *requestRun
	req *translate.EmbedRequest
	// pass is set when every backend of the route is openai: the body is forwarded.
	pass bool
	// out collects the vectors of the attempt in progress (translated).
	out translate.Embeddings
}

// prepare checks that every backend the route may call embeds, picks the passthrough
// or translation, and sets the request's token reservation: its input tokens, no output.
func (e *embedRun) prepare() error {
	c := e.c
	c.call.operation = apiEmbeddings
	c.span.SetOperation(apiEmbeddings)
	for _, r := range e.routes() {
		if !embeds(r) {
			return translate.Errorf("model", "model %s is served by backend %s (type %s), which cannot embed %s", r.name, r.backend.name, r.backend.typ, r.upstreamModel)
		}
	}
	e.pass = allBackends(c, "openai")
	c.call.pathFor = e.path
	n := int64(e.req.EstimateTokens())
	c.limits.prompt, c.limits.estimate = n, n
	return nil
}

// routes returns the route and its fallbacks.
func (e *embedRun) routes() []*route {
	c := e.c
	rs := []*route{c.route}
	for _, fb := range c.route.fallbacks {
		if r, ok := c.rt.routes[fb]; ok {
			rs = append(rs, r)
		}
	}
	return rs
}

// embeds reports whether route r's backend can answer embeddings of its upstream model.
func embeds(r *route) bool {
	if _, ok := r.backend.provider.(localEmbedder); ok {
		return true
	}
	em := embedderOf(r.backend.provider)
	return em != nil && (em.EmbedLimits(r.upstreamModel) != translate.EmbedLimits{})
}

// embedSource is a provider whose embeddings are not its dialect's own but its
// backend's: a cloud's (azure, vertex, bedrock), whose embedding models speak a wire of
// their own. embedder returns nil when the backend cannot embed.
type embedSource interface {
	embedder() translate.Embedder
}

// embedderOf returns provider p's Embedder, nil when it has none.
func embedderOf(p translate.Provider) translate.Embedder {
	if s, ok := p.(embedSource); ok {
		return s.embedder()
	}
	em, _ := p.(translate.Embedder)
	return em
}

// path is the model call's upstream path on route r (modelCall.pathFor).
func (e *embedRun) path(r *route) string {
	return embedderOf(r.backend.provider).EmbedPath(r.upstreamModel)
}

func (e *embedRun) forwarder() forwarder                  { return nil }
func (e *embedRun) streamEncoder() translate.ClientStream { return nil }
func (e *embedRun) assembler() translate.ClientAssembler  { return nil }
func (e *embedRun) answered(context.Context, []byte)      {}
func (e *embedRun) finish(ctx *fasthttp.RequestCtx, code int, stream bool) {
	e.c.finish(ctx, code, stream)
}

// answer makes the answer: forwarded, or translated batch by batch.
func (e *embedRun) answer(ctx context.Context, dst []byte) ([]byte, error) {
	if e.pass {
		return e.c.forwardComplete(ctx, (*embedForward)(e), dst)
	}
	c := e.c
	call := c.call
	err := call.withRetries(ctx, func(ctx context.Context, r *route) error {
		return e.attempt(ctx, r)
	})
	if err != nil {
		return dst, err
	}
	model := c.req.Model
	if r := call.at; r != nil && r != c.route {
		model = r.name // a fallback answered
	}
	return embeddingsin.AppendBody(dst, model, &e.out, e.req.Base64, call.Usage.PromptTokens), nil
}

// attempt embeds every input on route r: in process, or in batches of its upstream's
// limit, the vectors joined in order. A batch's failure fails the attempt, and a retry
// or fallback starts over: one answer's vectors all come from one model.
func (e *embedRun) attempt(ctx context.Context, r *route) error {
	call := e.c.call
	e.out = translate.Embeddings{Vectors: e.out.Vectors[:0]}
	if le, ok := r.backend.provider.(localEmbedder); ok {
		out, err := le.Embed(ctx, e.req)
		if err != nil {
			return err
		}
		e.out = *out
		call.meter.noteUsage(translate.Usage{PromptTokens: out.PromptTokens})
		return nil
	}
	em := embedderOf(r.backend.provider)
	opts := &translate.EmbedOptions{UpstreamModel: r.upstreamModel, TaskType: e.req.TaskType}
	if mc, ok := e.c.rt.cfg.Models[r.name]; ok && opts.TaskType == "" && mc.Embeddings != nil {
		opts.TaskType = mc.Embeddings.TaskType
	}
	err := em.EmbedLimits(r.upstreamModel).Batches(e.req.Inputs, func(part []translate.EmbedInput) error {
		return call.roundTrip(ctx, r, false, func(dst []byte, _ *translate.Options) ([]byte, error) {
			return em.AppendEmbedRequest(dst, e.req, part, opts)
		}, func(x *upstream.Exchange, _ *translate.Options) error {
			body, err := call.body.Answer(ctx, x, r.backend.name)
			if err != nil {
				return err
			}
			counted := e.out.PromptTokens
			err = em.DecodeEmbeddings(body, len(part), &e.out)
			call.body.Release()
			if err != nil {
				return upstream.Fault(r.backend.name, "answered embeddings the gateway cannot read: "+strings.TrimPrefix(err.Error(), translate.ErrUpstream.Error()+": "))
			}
			if e.out.PromptTokens == counted { // a body without a count: Bedrock's header has it
				e.out.PromptTokens += headerCount(x.Header(bedrockInputTokens))
			}
			return nil
		})
	})
	if err != nil {
		return err
	}
	if e.out.PromptTokens > 0 {
		call.meter.noteUsage(translate.Usage{PromptTokens: e.out.PromptTokens})
	} else { // an upstream that counts none (Gemini's older models): the estimate
		n := e.req.EstimateTokens()
		call.meter.noteEstimate(translate.Usage{PromptTokens: n})
	}
	return nil
}

// embedForward is the embeddings passthrough to OpenAI upstreams (forwarder): the
// client's body with the upstream model, the answer with the client-facing model.
type embedForward embedRun

func (f *embedForward) errors() translate.ClientErrors { return openaichat.Errors{} }

func (f *embedForward) request(dst []byte, r *route, _ *translate.Options) ([]byte, error) {
	return embeddingsin.AppendForward(dst, f.req.Body, r.upstreamModel), nil
}

func (f *embedForward) whole(dst, body []byte, r *route, m *meter) ([]byte, error) {
	out, prompt, err := embeddingsin.RewriteAnswer(dst, body, r.name)
	if errors.Is(err, embeddingsin.ErrNotEmbeddings) {
		return dst, upstream.Fault(r.backend.name, err.Error())
	}
	if prompt > 0 {
		m.noteUsage(translate.Usage{PromptTokens: prompt})
	} else {
		n := f.req.EstimateTokens()
		m.noteEstimate(translate.Usage{PromptTokens: n})
	}
	return out, err
}

// An embeddings answer is never streamed: the stream side of forwarder is not used.
func (f *embedForward) begin(*route) {}
func (f *embedForward) event(dst, _, _ []byte, _ *meter) ([]byte, passed, error) {
	return dst, 0, nil
}
func (f *embedForward) end(err error, _ *meter) error { return err }

// bedrockInputTokens is the response header in which Bedrock's InvokeModel reports the
// input tokens it counted, the only count a Cohere embeddings answer carries (recorded in
// pydantic-ai's Bedrock embeddings cassettes).
const bedrockInputTokens = "X-Amzn-Bedrock-Input-Token-Count"

// headerCount reads a token count header: a decimal number of at most 9 digits, else 0.
func headerCount(v []byte) int {
	if len(v) == 0 || len(v) > 9 {
		return 0
	}
	n := 0
	for _, c := range v {
		if c < '0' || c > '9' {
			return 0
		}
		n = n*10 + int(c-'0')
	}
	return n
}
