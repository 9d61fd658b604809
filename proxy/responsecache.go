package proxy

import (
	"bytes"
	"cmp"
	"context"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/valyala/fasthttp"

	"github.com/agate-gateway/agate/config"
	"github.com/agate-gateway/agate/limits"
	"github.com/agate-gateway/agate/loop"
	"github.com/agate-gateway/agate/respcache"
	"github.com/agate-gateway/agate/translate"
)

// The response cache (models.<m>.cache.responses, keys.<k>.cache.responses;
// docs/response-cache.md). A request its key's or model's cache applies to is planned
// before its run is prepared (planCache: the client's directives, determinism), so that a
// chat request to OpenAI-compatible backends takes the translated path, whose events can
// be recorded; looked up once prepared, before admission (lookupCache: its key is the
// hash of its route and canonical form, respcache.Canonical); a hit is admitted against the
// request limits only (hitOnly) and replayed into the client's encoder or assembler; a
// miss is recorded as its events reach the client and stored when it ended well
// (cachedRun). Identical concurrent misses wait for the first (respcache.Flights).

// The response header that says whether the answer came from the cache (hit) or not
// (miss), and that a client sets to skip or refresh the cache.
const headerCache = "X-Agate-Cache"

// The results of gateway_response_cache_total.
const (
	cacheHit     = "hit"
	cacheMiss    = "miss"
	cacheSkip    = "skip"
	cacheRefresh = "refresh"
	cacheStore   = "store"
)

// respCache is one configured response cache: a model's or a key's block.
type respCache struct {
	owner  string // "model:<name>" or "key:<name>": part of every key
	cfg    config.ResponseCache
	store  respcache.Store
	always bool
}

// responseCaches are the configured response caches of a server, kept by every runtime
// built after the first (buildRuntime's prev) so that a reload keeps a cache whose block
// did not change, with its entries; and the single flights they share.
type responseCaches struct {
	now     func() time.Time
	flights respcache.Flights
	mu      sync.Mutex
	byOwner map[string]*respCache
	redis   *redis.Client
	// redisURL is the URL redis was opened with.
	redisURL string
}

// newResponseCaches returns the response caches of a new server, on clock now (nil:
// time.Now): their entries' TTL.
func newResponseCaches(now func() time.Time) *responseCaches {
	if now == nil {
		now = time.Now
	}
	return &responseCaches{now: now}
}

// configureResponseCaches gives rt its response caches, those of prev kept where their
// block is unchanged, and points its routes and keys at them.
func (rt *runtime) configureResponseCaches(prev *runtime) {
	cs := (*responseCaches)(nil)
	if prev != nil {
		cs = prev.caches
	}
	if cs == nil {
		cs = newResponseCaches(nil)
	}
	rt.caches = cs
	for name, r := range rt.routes {
		if mc, ok := rt.cfg.Models[name]; ok && mc.Cache != nil && mc.Cache.Responses != nil {
			r.cache = cs.get("model:"+name, *mc.Cache.Responses, rt.cfg.State)
		}
	}
	for _, k := range rt.keys {
		if kc, ok := rt.cfg.Keys[k.name]; ok && kc.Cache != nil && kc.Cache.Responses != nil {
			k.cache = cs.get("key:"+k.name, *kc.Cache.Responses, rt.cfg.State)
		}
	}
}

// get returns owner's cache for block b, the one it had when b is unchanged.
func (cs *responseCaches) get(owner string, b config.ResponseCache, st config.State) *respCache {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if c, ok := cs.byOwner[owner]; ok && c.cfg == b {
		return c
	}
	c := &respCache{owner: owner, cfg: b, always: b.When == config.ResponseCacheAlways}
	if b.Store == config.ResponseCacheRedis {
		if cs.redis == nil || cs.redisURL != st.URL {
			opts, err := redis.ParseURL(st.URL) // config validated it
			if err == nil {
				timeout := max(st.Timeout, time.Second)
				opts.DialTimeout, opts.ReadTimeout, opts.WriteTimeout, opts.PoolTimeout = timeout, timeout, timeout, timeout
				opts.ContextTimeoutEnabled, opts.DisableIdentity = true, true
				cs.redis, cs.redisURL = redis.NewClient(opts), st.URL
			}
		}
		if cs.redis != nil {
			c.store = &respcache.Redis{Client: cs.redis, Prefix: st.KeyPrefix, MaxEntry: b.MaxEntryBytes, Timeout: max(st.Timeout, 250*time.Millisecond)}
		}
	}
	if c.store == nil {
		c.store = respcache.NewMemory(b.MaxBytes, cs.now)
	}
	if cs.byOwner == nil {
		cs.byOwner = map[string]*respCache{}
	}
	cs.byOwner[owner] = c
	return c
}

// close closes the caches' Redis client, if any (Server.Shutdown).
func (cs *responseCaches) close() {
	if cs == nil {
		return
	}
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.redis != nil {
		_ = cs.redis.Close()
		cs.redis = nil
	}
}

// cachePlan is one request's use of the response cache: made by planCache, nil when no
// cache applies.
type cachePlan struct {
	rc *respCache
	// result is the request's gateway_response_cache_total result: hit, miss or refresh
	// (skip is counted and planned no further).
	result string
	key    string
	// entry is the cached answer on a hit.
	entry []byte
	// record is set when the answer is to be stored; rec records it, next is the output
	// it goes on to.
	record bool
	rec    respcache.Recorder
	next   loop.Output
	// flight is the single flight this request leads; nil when none.
	flight *respcache.Flight
}

// planCache decides whether the response cache applies to the request (called by serve
// when its key or model has one): not with server tools or an API other than chat,
// Responses and Messages; not when the client says skip (x-agate-cache: skip,
// Cache-Control: no-store), counted; not for a request that does not ask for a
// deterministic answer unless the cache's when is always. Refresh (x-agate-cache:
// refresh, Cache-Control: no-cache) asks upstream and stores the answer.
func (c *requestRun) planCache(ctx *fasthttp.RequestCtx) {
	c.fullRequest() // request_head.go
	rc := c.key.cache
	if rc == nil {
		rc = c.route.cache
	}
	switch c.api {
	case apiChat, "", apiResponses, apiMessages:
	default:
		return
	}
	if rc == nil || len(c.key.tools) > 0 {
		return
	}
	result := cacheMiss
	switch cacheDirective(&ctx.Request.Header) {
	case cacheSkip:
		c.s.metrics.ResponseCache.Results.WithLabelValues(cacheSkip).Inc()
		return
	case cacheRefresh:
		result = cacheRefresh
	}
	if !rc.always && !deterministic(c.req) {
		return
	}
	c.cache = &cachePlan{rc: rc, result: result}
}

// cacheDirective reads the client's wish: skip, refresh or "" (none). x-agate-cache wins
// over Cache-Control.
func cacheDirective(h *fasthttp.RequestHeader) string {
	switch v := h.Peek(headerCache); {
	case bytes.EqualFold(v, []byte(cacheSkip)):
		return cacheSkip
	case bytes.EqualFold(v, []byte(cacheRefresh)):
		return cacheRefresh
	}
	cc := h.Peek("Cache-Control")
	if len(cc) == 0 {
		return ""
	}
	cc = bytes.ToLower(cc)
	switch {
	case bytes.Contains(cc, []byte("no-store")):
		return cacheSkip
	case bytes.Contains(cc, []byte("no-cache")):
		return cacheRefresh
	}
	return ""
}

// deterministic reports whether req asks for a deterministic answer: temperature 0 or a
// seed.
func deterministic(req *translate.Request) bool {
	return req.Seed != nil || (req.Temperature != nil && *req.Temperature == 0)
}

// caching reports whether the request's answer comes from, or goes to, the response
// cache: a chat request then takes the translated path.
func (c *requestRun) caching() bool { return c.cache != nil }

// lookupCache computes the request's cache key and looks it up, once the run is prepared
// (serve): a hit keeps the entry; a miss either leads the key's single flight or waits
// for the request leading it and looks again. A forwarded run (a Responses or Messages
// passthrough), or a request without a canonical form, is not cached.
func (c *requestRun) lookupCache(run endpointRun) {
	p := c.cache
	if run.forwarder() != nil {
		c.cache = nil
		return
	}
	key, ok := c.cacheKey()
	if !ok {
		c.cache = nil
		return
	}
	p.key = key
	m := &c.s.metrics.ResponseCache
	defer func() { m.Results.WithLabelValues(p.result).Inc() }()
	if p.result == cacheRefresh {
		p.record = true
		return
	}
	ctx := c.s.baseCtx
	if p.entry = c.cacheGet(ctx, key); p.entry != nil {
		p.result = cacheHit
		return
	}
	fl, lead := c.rt.caches.flights.Join(key)
	if lead {
		p.flight, p.record = fl, true
		return
	}
	wctx, cancel := context.WithTimeout(ctx, cmp.Or(c.route.requestTimeout, 10*time.Minute))
	ended := fl.Wait(wctx)
	cancel()
	if ended {
		if p.entry = c.cacheGet(ctx, key); p.entry != nil {
			p.result = cacheHit
			return
		}
	}
	p.record = true // the leader failed or took too long: ask and store it too
}

// cacheGet reads key from the cache's store: nil on a miss, a store error (counted) or
// an entry that is not one.
func (c *requestRun) cacheGet(ctx context.Context, key string) []byte {
	e, err := c.cache.rc.store.Get(ctx, key)
	if err != nil {
		c.s.metrics.ResponseCache.Errors.WithLabelValues("get").Inc()
		c.call.log().Warn("response cache: get failed", "error", err.Error())
		return nil
	}
	if e != nil && respcache.Check(e) != nil {
		return nil
	}
	return e
}

// cacheKey returns the request's cache key: the hash of the cache's owner, the API key,
// the route, its (first) backend and upstream model, and the request's canonical form
// (respcache.Canonical: messages, tools, every sampling parameter, whichever client API
// it came in, streamed or not).
func (c *requestRun) cacheKey() (string, bool) {
	r := c.route
	body, err := respcache.Canonical(nil, c.req)
	if err != nil {
		return "", false
	}
	return respcache.Key([]byte(c.cache.rc.owner), []byte(c.key.name), []byte(r.name),
		[]byte(r.backend.name), []byte(r.upstreamModel), body), true
}

// hitOnly makes a cache hit's limits its request limits only: a hit is counted against
// requests per minute and concurrency, and reserves and is charged no tokens.
func (c *requestRun) hitOnly(req *limits.Request) {
	if c.cache == nil || c.cache.entry == nil {
		return
	}
	req.KeyRate.TokensPerMinute, req.ModelRate.TokensPerMinute = 0, 0
	req.Budget = limits.Budget{}
}

// cachedRun is execute with the response cache: a hit replayed into out; else the model
// called (produce) with its events recorded on their way to out, and the answer stored
// when it ended well and whole and the routed model (not a fallback) gave it. The single
// flight this request leads ends with it.
func (c *requestRun) cachedRun(ctx context.Context, out loop.Output, stream bool) error {
	p := c.cache
	if p.entry != nil {
		return respcache.Replay(p.entry, out.Event)
	}
	defer c.endFlight()
	if !p.record {
		return c.produce(ctx, out, stream)
	}
	p.next, p.rec.Max = out, int(p.rc.cfg.MaxEntryBytes)
	err := c.produce(ctx, p, stream)
	if err != nil {
		return err
	}
	if r := c.call.at; r != nil && r.of() != c.route {
		return nil // a fallback answered: not the routed model's answer
	}
	if entry, ok := p.rec.Entry(); ok {
		if serr := p.rc.store.Set(c.s.baseCtx, p.key, entry, p.rc.cfg.TTL); serr != nil {
			c.s.metrics.ResponseCache.Errors.WithLabelValues("set").Inc()
			c.call.log().Warn("response cache: set failed", "error", serr.Error())
		} else {
			c.s.metrics.ResponseCache.Results.WithLabelValues(cacheStore).Inc()
		}
	}
	return nil
}

// endFlight ends the single flight the request leads, if any: its waiting requests go on.
func (c *requestRun) endFlight() {
	if c.cache != nil && c.cache.flight != nil {
		c.cache.flight.Done()
		c.cache.flight = nil
	}
}

// Event records ev and passes it on (cachePlan is the recording loop.Output).
func (p *cachePlan) Event(ev *translate.Event) error {
	p.rec.Add(ev)
	return p.next.Event(ev)
}

func (p *cachePlan) KeepAlive() error { return p.next.KeepAlive() }

// cacheHeader sets x-agate-cache on an answer the cache applied to: hit, or miss.
func (c *requestRun) cacheHeader(h *fasthttp.ResponseHeader) {
	if c.cache == nil {
		return
	}
	if c.cache.entry != nil {
		h.Set(headerCache, cacheHit)
	} else {
		h.Set(headerCache, cacheMiss)
	}
}

// cacheResult is the request's cache result for its access line ("" when none applied).
func (c *requestRun) cacheResult() string {
	if c.cache == nil {
		return ""
	}
	return c.cache.result
}

// fromCache reports whether the answer came from the response cache.
func (c *requestRun) fromCache() bool { return c.cache != nil && c.cache.entry != nil }
