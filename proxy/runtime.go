package proxy

import (
	"cmp"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"log/slog"
	"math"
	"net/url"
	"path"
	"sort"
	"strings"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/agate-gateway/agate/config"
	"github.com/agate-gateway/agate/limits"
	"github.com/agate-gateway/agate/translate/mock"
)

// runtime is the request-serving state built from one validated config. It is immutable:
// a reload builds a new runtime and swaps the pointer, so in-flight requests finish on
// the one they started with.
type runtime struct {
	cfg      *config.Config
	backends map[string]*backend
	routes   map[string]*route
	keys     []*apiKey
	// open is true when no keys are configured: every request is accepted.
	open bool
	// noCredential holds the backends that need an upstream credential and have none
	// (see missingCredential): their models are not listed, and requests for them are
	// refused without reaching the upstream.
	noCredential map[string]bool
	// circuits are the Server's circuit breakers (configureCircuits); nil: none.
	circuits *circuits
	// balancing is what models' deployments share (deployments.go).
	balancing *balancing
	// caches are the response caches (responsecache.go), shared with the runtimes before.
	caches *responseCaches
}

// route is a resolved client-facing model.
type route struct {
	name string
	// logName is name as the access line and the ledger's served model show it
	// (clip(name, maxLoggedString)), clipped once when the route is made.
	logName string
	// metricLabel is the bounded metric label: the configured name, or "<backend>/*" for
	// a direct route, whose upstream model the client chose.
	metricLabel   string
	backend       *backend
	upstreamModel string
	maxTokens     int
	promptCache   bool
	fallbacks     []string
	// contextFallbacks are tried only when an attempt says the request is over the
	// model's context window (translate.ContextExceeded).
	contextFallbacks []string
	// circuit is the key of the deployment's circuit breaker; "" for none (breaker.go).
	circuit string
	// requestTimeout bounds a request to this route, its retries and fallbacks included
	// (timeouts.request: the model's, else its backend's); firstToken bounds the wait for
	// a stream's first event (zero: none).
	requestTimeout, firstToken time.Duration
	// continuation is what a streamed answer that failed midway becomes (continuation.go).
	continuation contMode
	// limited is set when the route is a configured model, whose limits are rate
	// (limitRequest).
	limited bool
	rate    limits.Rate
	// scripted answers instead of the backend's provider: a mock model's script
	// (models.<name>.script); nil for none.
	scripted localProvider
	// deploy is the model's deployments; nil for one backend. A deployment's own route
	// (deploy.routes) names it in deployment ("<backend>/<upstream_model>") and its
	// model's route in model.
	deploy     *deployments
	deployment string
	model      *route
	// upstreamLabel is the deployment label of the upstream metrics: "<backend>/<upstream
	// model>" of a configured model or deployment, "<backend>/*" for a model the client
	// named (bounded either way).
	upstreamLabel string
	// price is the configured model name's price (models.<name>.price), nil when it has
	// none: the ledger prices a record by the route that answered without a lookup by
	// name on each request.
	price *config.Price
	// logMembers is the access line's model and backend members, `,"model":<label>,
	// "backend":<backend name>` (routeLogMembers), written once when the runtime is built;
	// "" for a route made for one request (resolve), whose line writes them one by one.
	logMembers string
	// cache is the model's response cache; nil for none.
	cache *respCache
	// kept are the route's metric handles (route_series.go); nil on a route made per
	// request.
	kept *routeSeries
}

// local returns the in-process provider that answers r, or nil when an upstream does:
// the model's script, else a mock backend.
func (r *route) local() localProvider {
	if r.scripted != nil {
		return r.scripted
	}
	lp, _ := r.backend.provider.(localProvider)
	return lp
}

// apiKey is a configured client key, stored as its SHA-256 digest only.
type apiKey struct {
	name          string
	digest        [sha256.Size]byte
	models        []string
	tools         []string
	maxIterations int
	// Per-turn tool bounds (config defaults them).
	maxCallsPerTurn, maxConcurrentCalls int
	// limited is set for a configured key, whose limits are rate and budget
	// (limitRequest); not for anonymousKey.
	limited bool
	rate    limits.Rate
	budget  limits.Budget
	// team is the key's team, for the ledger ("" when none); teamRate, teamBudget and
	// teamModels are the configured team's limits, budget and models (zero, nil: none).
	team       string
	teamRate   limits.Rate
	teamBudget limits.Budget
	teamModels []string
	// cache is the key's response cache; nil for none.
	cache *respCache
	// logMembers is the access line's key member, `,"key":<name>` (keyLogMembers), written
	// once when the key is made; "" for none (the line then writes it from name).
	logMembers string
}

// newRuntime builds the runtime of cfg, a config as config.Parse returns it: defaulted and
// valid. It runs config's Validate again, so that a config edited in code cannot bypass
// config's rules; nothing here restates them.
func newRuntime(cfg *config.Config, prev *runtime, logger *slog.Logger) (*runtime, error) {
	return buildRuntime(cfg, prev, logger, cloudEnv{})
}

// buildRuntime is newRuntime with the environment of the cloud credentials.
func buildRuntime(cfg *config.Config, prev *runtime, logger *slog.Logger, env cloudEnv) (*runtime, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	rt := &runtime{cfg: cfg, backends: map[string]*backend{}, routes: map[string]*route{}, open: len(cfg.Keys) == 0,
		noCredential: map[string]bool{}}
	for name, bc := range cfg.Backends {
		if missingCredential(bc) {
			rt.noCredential[name] = true
		}
		if prev != nil {
			if old, ok := prev.backends[name]; ok && old.sameConfig(bc) {
				rt.backends[name] = old // keep its warm connection pool
				continue
			}
		}
		b, err := buildBackend(name, bc, env)
		if err != nil {
			return nil, err
		}
		rt.backends[name] = b
	}
	var prevBalancing *balancing
	if prev != nil {
		prevBalancing = prev.balancing
	}
	var err error
	if rt.balancing, err = newBalancing(cfg, prevBalancing); err != nil {
		return nil, err
	}
	for name, mc := range cfg.Models {
		b := rt.backends[mc.Backend] // config validated that it exists
		var fallbacks, contextFallbacks []string
		for _, fb := range mc.Fallbacks {
			if rt.hasCredential(cfg.Models[fb]) {
				fallbacks = append(fallbacks, fb)
			}
		}
		for _, fb := range mc.ContextFallbacks {
			if !rt.noCredential[cfg.Models[fb].Backend] {
				contextFallbacks = append(contextFallbacks, fb)
			}
		}
		rt.routes[name] = &route{name: name, logName: clip(name, maxLoggedString), metricLabel: name, backend: b, upstreamModel: mc.UpstreamModel, maxTokens: mc.MaxTokens,
			promptCache: mc.PromptCache == "auto", fallbacks: fallbacks, limited: true, rate: rate(mc.Limits),
			requestTimeout: cmp.Or(mc.Timeouts.Request, b.cfg.Timeouts.Request), firstToken: mc.Timeouts.FirstToken,
			continuation: continuationOf(b, mc.UpstreamModel, mc.Continuation), contextFallbacks: contextFallbacks, circuit: circuitKey(cfg, name, b, mc.UpstreamModel),
			upstreamLabel: b.name + "/" + mc.UpstreamModel, price: mc.Price, kept: new(routeSeries)}
		if len(mc.Script) > 0 {
			rt.routes[name].scripted = mockScript(mc.Script)
		}
		rt.routes[name].deploy = rt.newDeployments(name, mc, rt.routes[name], prev)
	}
	names := make([]string, 0, len(cfg.Keys))
	for n := range cfg.Keys {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		kc := cfg.Keys[n]
		k := &apiKey{name: n, models: kc.Models, tools: kc.Tools, maxIterations: kc.MaxToolIterations,
			maxCallsPerTurn: kc.MaxToolCallsPerTurn, maxConcurrentCalls: kc.MaxConcurrentToolCalls,
			limited: true, rate: rate(kc.Limits), budget: budget(kc.Budget), team: kc.Team, logMembers: keyLogMembers(n)}
		if tc, ok := cfg.Teams[kc.Team]; ok && kc.Team != "" {
			k.teamRate, k.teamBudget, k.teamModels = rate(tc.Limits), budget(tc.Budget), tc.Models
		}
		if kc.KeySHA256 != "" {
			hex.Decode(k.digest[:], []byte(kc.KeySHA256)) // 64 hex digits: config validated it
		} else {
			k.digest = sha256.Sum256([]byte(kc.Key))
		}
		rt.keys = append(rt.keys, k)
	}
	rt.warnNoCredential(prev, logger)
	rt.configureResponseCaches(prev)
	// Last, once every route's label and backend are final (a model with deployments has
	// its first deployment's backend): a route is not changed after this.
	for _, r := range rt.routes {
		r.logMembers = routeLogMembers(r.label(), r.backend.name)
		if r.deploy != nil {
			for _, dr := range r.deploy.routes {
				dr.logMembers = routeLogMembers(dr.label(), dr.backend.name)
			}
		}
	}
	return rt, nil
}

// mockScript is the mock provider that answers with script (config validated it).
func mockScript(script []config.ScriptTurn) localProvider {
	turns := make([]mock.Turn, len(script))
	for i, t := range script {
		turns[i].Text = t.Text
		for _, c := range t.ToolCalls {
			call := mock.ToolCall{Name: c.Name}
			if c.Arguments != nil {
				args, _ := json.Marshal(c.Arguments) // decoded from YAML: always encodable
				call.Arguments = string(args)
			}
			turns[i].ToolCalls = append(turns[i].ToolCalls, call)
		}
	}
	return mock.Scripted(turns)
}

// missingCredential reports whether the upstream of bc cannot be used because it needs a
// credential and has none, neither in api_key nor in a credential header of headers.
// Anthropic, Gemini and the Responses API always need one; an openai backend needs one
// only on OpenAI's own API, since an OpenAI-compatible server of one's own (vLLM, Ollama,
// LM Studio) may take none. Mock backends need none. A cloud backend lacks one only when
// it is certainly absent (cloud.lacksCredential).
func missingCredential(bc config.Backend) bool {
	if c, ok := cloudOf(bc.Type); ok {
		return c.lacksCredential(bc)
	}
	switch bc.Type {
	case "anthropic", "gemini", "responses":
	case "openai":
		u, err := url.Parse(bc.BaseURL)
		if err != nil || !strings.EqualFold(u.Hostname(), "api.openai.com") {
			return false
		}
	default:
		return false
	}
	if strings.TrimSpace(bc.APIKey) != "" {
		return false
	}
	for name, value := range bc.Headers {
		switch strings.ToLower(name) {
		case "authorization", "x-api-key", "api-key", "x-goog-api-key":
			if strings.TrimSpace(value) != "" {
				return false
			}
		}
	}
	return true
}

// warnNoCredential logs one warning per backend without a needed credential, unless prev
// (the runtime this one replaces) already lacked it, so that each is reported once.
func (rt *runtime) warnNoCredential(prev *runtime, logger *slog.Logger) {
	names := make([]string, 0, len(rt.noCredential))
	for name := range rt.noCredential {
		if prev == nil || !prev.noCredential[name] {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	for _, name := range names {
		var models []string
		for m, r := range rt.routes {
			if r.backend.name == name {
				models = append(models, m)
			}
		}
		sort.Strings(models)
		logger.Warn("backend has no api_key: its models are left out of /v1/models and requests for them are refused",
			"backend", name, "type", rt.backends[name].typ, "models", models)
	}
}

// authenticate returns the key presented as "Authorization: Bearer <key>" (header is the
// Authorization value). In open mode it returns the anonymous key. Every configured key
// is compared, in constant time, so timing does not reveal which key nearly matched.
func (rt *runtime) authenticate(header []byte) (*apiKey, error) {
	if rt.open {
		return anonymousKey, nil
	}
	token, ok := bearer(header)
	if !ok {
		return nil, errorf(ErrUnauthorized, "missing API key: send Authorization: Bearer <key>")
	}
	return rt.keyFor(token)
}

// authenticateHeader is authenticate for a request's headers: the key is taken from
// Authorization or, when that is absent, from x-api-key (as Anthropic-style clients send it).
func (rt *runtime) authenticateHeader(h *fasthttp.RequestHeader) (*apiKey, error) {
	if auth := h.Peek("Authorization"); len(auth) > 0 || rt.open {
		return rt.authenticate(auth)
	}
	if token := h.Peek("X-Api-Key"); len(token) > 0 {
		return rt.keyFor(token)
	}
	return rt.authenticate(nil)
}

// keyFor returns the configured key whose token is token.
func (rt *runtime) keyFor(token []byte) (*apiKey, error) {
	sum := sha256.Sum256(token)
	var found *apiKey
	for _, k := range rt.keys {
		if subtle.ConstantTimeCompare(sum[:], k.digest[:]) == 1 {
			found = k
		}
	}
	if found == nil {
		return nil, errorf(ErrUnauthorized, "incorrect API key provided")
	}
	return found, nil
}

// anonymousKey is the key of open mode (no keys configured), with config's defaults.
var anonymousKey = &apiKey{name: "anonymous", models: []string{"*"}, maxIterations: config.DefaultMaxToolIterations,
	maxCallsPerTurn: config.DefaultMaxToolCallsPerTurn, maxConcurrentCalls: config.DefaultMaxConcurrentToolCalls,
	logMembers: keyLogMembers("anonymous")}

func bearer(h []byte) ([]byte, bool) {
	const prefix = "bearer "
	if len(h) <= len(prefix) || !strings.EqualFold(string(h[:len(prefix)]), prefix) {
		return nil, false
	}
	t := h[len(prefix):]
	for len(t) > 0 && t[0] == ' ' {
		t = t[1:]
	}
	return t, len(t) > 0
}

// allows reports whether the key may use model (a client-facing or backend/model name):
// its models and, when its team has models, the team's allow it.
func (k *apiKey) allows(model string) bool {
	return matchesAny(k.models, model) && (len(k.teamModels) == 0 || matchesAny(k.teamModels, model))
}

// matchesAny reports whether one of globs (path.Match; "*" is every name) matches model.
func matchesAny(globs []string, model string) bool {
	for _, p := range globs {
		if p == "*" || p == model {
			return true
		}
		if ok, _ := path.Match(p, model); ok {
			return true
		}
	}
	return false
}

// resolve finds the route for a requested model name: a configured model, or
// "<backend>/<upstream model>". A model whose backend lacks its credential is not found
// either, with a message that says why.
func (rt *runtime) resolve(model string) (*route, error) {
	if r, ok := rt.routes[model]; ok {
		return rt.usable(model, r)
	}
	if i := strings.IndexByte(model, '/'); i > 0 && i < len(model)-1 {
		if b, ok := rt.backends[model[:i]]; ok {
			r := &route{name: model, logName: clip(model, maxLoggedString), metricLabel: b.name + "/*", backend: b, upstreamModel: model[i+1:], requestTimeout: b.cfg.Timeouts.Request,
				continuation: continuationOf(b, model[i+1:], ""), upstreamLabel: b.name + "/*"}
			if mc, ok := rt.cfg.Models[model]; ok { // a configured model left out of routes
				r.limited, r.rate, r.price = true, rate(mc.Limits), mc.Price
				r.continuation = continuationOf(b, r.upstreamModel, mc.Continuation)
				r.requestTimeout = cmp.Or(mc.Timeouts.Request, b.cfg.Timeouts.Request)
			}
			return rt.usable(model, r)
		}
	}
	return nil, modelNotFound(model)
}

// usable returns r unless its backend lacks the credential it needs: such a model is
// refused with a 404 that says why, and the upstream is never contacted.
func (rt *runtime) usable(model string, r *route) (*route, error) {
	if rt.noCredential[r.backend.name] {
		return nil, errorf(ErrModelNotFound, "the model %q is not available: the gateway has no api_key for its backend %q", clip(model, maxLoggedString), r.backend.name)
	}
	return r, nil
}

// routeFor resolves model for key. A model the key may not use is answered exactly like
// an unknown one (404 model_not_found, as OpenAI does), so a restricted key cannot probe
// which models are configured.
func (rt *runtime) routeFor(k *apiKey, model string) (*route, error) {
	r, err := rt.resolve(model)
	if err != nil {
		return nil, err
	}
	if !k.allows(model) {
		return nil, modelNotFound(model)
	}
	return r, nil
}

// unknownLabel is the metric label of requests whose model did not route.
const unknownLabel = "unknown"

func modelNotFound(model string) error {
	return errorf(ErrModelNotFound, "the model %q does not exist or you do not have access to it", clip(model, maxLoggedString))
}

// modelNames returns the models a key may use, sorted, leaving out those whose backend
// lacks its credential.
func (rt *runtime) modelNames(k *apiKey) []string {
	var out []string
	for name, r := range rt.routes {
		if k.allows(name) && !rt.noCredential[r.backend.name] {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// label is the bounded metric label of the route (see route.metricLabel).
func (r *route) label() string { return r.metricLabel }

// budget is the limits.Budget of a key's configured budget.
func budget(b config.Budget) limits.Budget {
	return limits.Budget{Tokens: int64(b.Tokens), MicroUSD: int64(math.Round(b.USD * 1e6)), Period: b.Period}
}

func rate(l config.Limits) limits.Rate {
	return limits.Rate{RequestsPerMinute: int64(l.RequestsPerMinute), TokensPerMinute: int64(l.TokensPerMinute), Concurrent: int64(l.Concurrent)}
}
