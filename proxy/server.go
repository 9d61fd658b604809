package proxy

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"math/bits"
	"math/rand/v2"
	"net"
	"net/http"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/fasthttpadaptor"

	"github.com/agate-gateway/agate/balance"
	"github.com/agate-gateway/agate/config"
	"github.com/agate-gateway/agate/console"
	"github.com/agate-gateway/agate/internal/jsonx"
	"github.com/agate-gateway/agate/ledger"
	"github.com/agate-gateway/agate/limits"
	"github.com/agate-gateway/agate/loop"
	"github.com/agate-gateway/agate/metrics"
	"github.com/agate-gateway/agate/responsestore"
	"github.com/agate-gateway/agate/telemetry"
	"github.com/agate-gateway/agate/tools"
	"github.com/agate-gateway/agate/translate"
	"github.com/agate-gateway/agate/translate/messagesin"
	"github.com/agate-gateway/agate/translate/openaichat"
	"github.com/agate-gateway/agate/translate/responsesin"
	"github.com/agate-gateway/agate/upstream"
)

// ToolSet is what the server needs from the tool registry.
type ToolSet interface {
	loop.Executor
	Resolve(names []string) ([]tools.Definition, error)
	// Ready is nil while every required tool source can take calls; Degraded names the
	// other sources that cannot (their tools fail, chat does not).
	Ready() error
	Degraded() error
}

// Options are the dependencies of a Server, built by main.
type Options struct {
	// Config is the initial, validated configuration.
	Config *config.Config
	// Metrics are the collectors to record into; Gatherer serves /metrics.
	Metrics  *metrics.Metrics
	Gatherer prometheus.Gatherer
	// Logger receives structured logs; secrets are never logged.
	Logger *slog.Logger
	// Tools runs server-side tools; nil means no key gets a tool loop.
	Tools ToolSet
	// Limiter keeps rate limits, budgets and concurrency slots; the caller closes it. Nil
	// means one built from Config.State, which the server closes at Shutdown.
	Limiter limits.Limiter
	// Tracer records spans (telemetry.New); nil means tracing off. The caller shuts it down.
	Tracer *telemetry.Tracer
	// Ledger receives each request's record; the caller closes it. Nil means the one
	// Config.Ledger describes (none when it is off), which the server drains and closes
	// at Shutdown.
	Ledger Ledger
	// CredentialClient is the HTTP client the cloud backends' credentials fetch their
	// tokens with (the Entra ID authority, Google's token endpoint, AWS STS and metadata
	// endpoints); nil means each library's default.
	CredentialClient *http.Client
	// AWSCredentials, when set, are the credentials every bedrock backend that signs with
	// SigV4 (one without an api_key) signs with, in place of the AWS SDK's default
	// credential chain and the backend's bedrock.profile; they are wrapped in the SDK's
	// CredentialsCache. Nil (what the gateway binary passes) is the default chain:
	// environment, shared config and credentials files, web identity, SSO, process, ECS
	// container and EC2 instance roles. Tests pass static credentials here, so that they
	// need not set the process's environment and can run in parallel.
	AWSCredentials aws.CredentialsProvider
	// Clock is the circuit breakers' time (theirs as the deployments' Health too) and the
	// response cache's (its TTL); nil means time.Now (tests inject one).
	Clock func() time.Time
	// Health says which deployments of models with deployments may be called, keyed
	// "<backend>/<upstream_model>", and is told each attempt's outcome; nil means the
	// Server's circuit breakers (the same circuits that guard models of one backend:
	// one mechanism). Kept across Apply.
	Health balance.Health
}

// Server is the gateway's HTTP server. Its configuration can be replaced at run time with
// Apply; requests in flight finish with the configuration they started with.
type Server struct {
	rt             atomic.Pointer[runtime]
	cloud          cloudEnv // the cloud credentials' environment (Options.CredentialClient, AWSCredentials)
	metrics        *metrics.Metrics
	logger         *slog.Logger
	tools          ToolSet
	srv            *fasthttp.Server
	metricsHandler fasthttp.RequestHandler
	// maxBody is server.max_body_bytes; maxConns and maxConnsPerIP the connection caps.
	maxBody, maxConns, maxConnsPerIP int
	// maxInflated is server.max_inflated_bytes: each request's translate.Allowance.
	maxInflated int
	// passesOpenAI, passesMessages and passesResponses are mayPass for the chat, Messages
	// and Responses passthroughs, made once (New): the first passes keep the func value
	// they are given in their Stage, so a closure made in the handler was an allocation
	// a request.
	passesOpenAI, passesMessages, passesResponses func(model string) bool
	// writeTimeout bounds each write to a client (server.write_timeout).
	writeTimeout time.Duration
	// bodies holds scratch buffers for reading request bodies.
	bodies sync.Pool
	// assemblers recycles the Assemblers of non-streamed answers (requestRun.complete).
	assemblers recycler[openaichat.Assembler, *openaichat.Assembler]
	// scratches recycles the memory chat requests are parsed into (handleChat).
	scratches recycler[openaichat.Scratch, *openaichat.Scratch]
	// stages recycles the memory a chat request's parse works in, off the stack.
	stages recycler[openaichat.Stage, *openaichat.Stage]
	// msgStages and respStages recycle the memory a Messages or Responses request's parse
	// works in (handleMessages, handleResponses, buildRequest), off the stack.
	msgStages  recycler[messagesin.Stage, *messagesin.Stage]
	respStages recycler[responsesin.Stage, *responsesin.Stage]
	// runs recycles the chatRuns of non-streamed answers (serve); a stream's run is left
	// to the GC, its writer outliving the handler.
	runs recycler[requestRun, *requestRun]
	// streamReads holds the read buffers of upstream streams (upstream.Pump).
	streamReads sync.Pool
	// streamOuts holds the stream writers' buffers (*[]byte) between two writes to a
	// client (sseOut.take, sseOut.sync).
	streamOuts sync.Pool
	// metricsSrv serves /metrics on metrics.listen; nil when /metrics is on the main
	// listener. metricsToken is the SHA-256 of metrics.bearer, hasMetricsToken whether
	// one is required.
	metricsSrv      *fasthttp.Server
	metricsToken    [sha256.Size]byte
	hasMetricsToken bool
	// listeners are the client listeners Serve runs, for Shutdown's closeSilent.
	listenersMu sync.Mutex
	listeners   []*clientListener
	// silentAge is how old a connection that has sent nothing gets once Shutdown starts
	// before closeSilent closes it: the constant silentAge, which New sets; a test may
	// set it shorter before Shutdown, the only seam for not waiting 5 s (#54).
	silentAge time.Duration
	// stopping is set by Shutdown: a Serve that starts after it returns at once.
	stopping bool
	// serving counts the Serve calls in fasthttp's accept loop (drainIdle).
	serving atomic.Int32
	// baseCtx parents every upstream call; cancelAll ends them at a forced shutdown.
	baseCtx   context.Context
	cancelAll context.CancelFunc
	// limiter admits and charges requests; it outlives reloads, so usage
	// counted stays counted. ownLimiter: opened by New, closed by Shutdown.
	limiter     limits.Limiter
	ownLimiter  bool
	onErrorDeny bool // state.on_error deny, fixed at start like the rest of state
	// responses keeps the stored responses of /v1/responses; nil when responses.store is
	// off. It is built once: a reload does not change it.
	responses responsestore.Store
	// websockets are the open connections of the Responses WebSocket mode (websocket.go).
	websockets websockets
	// closeResponses closes the store's own Redis client (responses.url) at Shutdown;
	// nil when the store has none of its own.
	closeResponses func() error
	// maxStored is responses.max_stored_bytes: the bound on a stored response and on the
	// input a continuation rebuilds.
	maxStored int64

	// tracer records spans; nil when tracing is off.
	tracer *telemetry.Tracer
	// ledger receives each request's record; nil when there is none. ownLedger is the
	// one New opened, closed by Shutdown.
	ledger    Ledger
	ownLedger *ledger.Ledger

	// The admin API (admin.go, dbkeys.go): keyStore holds the keys it manages (nil when
	// the admin API is off), dbKeys those the running runtime was built with; applyMu
	// serializes building runtimes (Apply, refreshKeys). admin are the administrators'
	// token digests; adminSrv serves /admin/v1 on admin.listen (nil: on the main
	// listener); stopKeys ends syncKeys, which closes keysDone.
	keyStore KeyStore
	// captureMax is what a request keeps of its prompt and answer for the ledger's
	// capture_content (ledger.go), 0 without it.
	captureMax int
	dbKeys     atomic.Pointer[dbKeySet]
	applyMu    sync.Mutex
	admins     []adminCred
	adminSrv   *fasthttp.Server
	stopKeys   chan struct{}
	keysDone   chan struct{}
	// console serves /console beside the admin API (console.go); nil when off.
	console *console.Console
	// circuits are the circuit breakers of the deployments; they outlive reloads.
	circuits *circuits
	// mcp is the MCP endpoint (mcp.go); nil when mcp.enabled is off.
	mcp *mcpEndpoint
}

// New builds a server for opts.Config.
func New(opts Options) (*Server, error) {
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	s := &Server{metrics: opts.Metrics, logger: logger, tools: opts.Tools, tracer: opts.Tracer,
		silentAge: silentAge}
	s.baseCtx, s.cancelAll = context.WithCancel(context.Background())
	s.cloud = cloudEnv{client: opts.CredentialClient, aws: opts.AWSCredentials}
	s.passesOpenAI = func(model string) bool { return s.mayPass(model, speaksOpenAI) }
	s.passesMessages = func(model string) bool { return s.mayPass(model, speaksMessages) }
	s.passesResponses = func(model string) bool { return s.mayPass(model, speaksResponses) }
	// The first runtime has no predecessor but the health its deployments share: the
	// circuit breakers (openCircuits, below, before any request) unless opts names one.
	health := opts.Health
	if health == nil {
		health = circuitHealth{s}
	}
	rt, err := buildRuntime(opts.Config, &runtime{balancing: &balancing{health: health}, caches: newResponseCaches(opts.Clock)}, logger, s.cloud)
	if err != nil {
		return nil, err
	}
	if err := s.checkTools(rt); err != nil {
		return nil, err
	}
	s.onErrorDeny = opts.Config.State.OnError == "deny"
	if err := s.openLimiter(opts); err != nil {
		return nil, err
	}
	if s.responses, err = s.newResponseStore(opts.Config); err != nil {
		return nil, err
	}
	s.openCircuits(opts)
	s.configureCircuits(rt, nil)
	s.rt.Store(rt)
	if err := s.openLedger(opts); err != nil {
		s.closeLimiter()
		return nil, err
	}
	if err := s.openAdmin(opts); err != nil { // after Store: it rebuilds rt with the database keys
		s.closeLimiter()
		s.closeLedger()
		return nil, err
	}
	s.seedBudgets(opts.Config.Ledger.Rollups.Hour) // budgetseed.go: after openAdmin, which adds the database keys
	s.reseedOnLoss(opts.Config.Ledger.Rollups.Hour)
	if err := s.openMCP(opts); err != nil {
		s.closeLimiter()
		s.closeLedger()
		s.closeAdmin()
		return nil, err
	}
	rt = s.runtime()
	if rt.open {
		logger.Warn("no keys configured: the gateway is open to anyone who can reach it")
	}
	s.metricsHandler = fasthttpadaptor.NewFastHTTPHandler(promhttp.HandlerFor(opts.Gatherer,
		promhttp.HandlerOpts{EnableOpenMetrics: opts.Tracer != nil})) // exemplars need OpenMetrics (asked for by Accept)
	if mc := opts.Config.Metrics; mc.Bearer != "" {
		s.metricsToken, s.hasMetricsToken = sha256.Sum256([]byte(mc.Bearer)), true
	}
	cfg := opts.Config.Server
	s.maxBody, s.maxConns, s.maxConnsPerIP = cfg.MaxBodyBytes, cfg.MaxConnections, cfg.MaxConnectionsPerIP
	s.writeTimeout = cfg.WriteTimeout
	s.maxInflated = cfg.MaxInflatedBytes
	if s.maxInflated <= 0 { // a Config that was not through its defaults
		s.maxInflated = translate.DefaultMaxInflated
	}
	s.srv = &fasthttp.Server{
		Handler: s.handle,
		Name:    "agate",
		// Bodies are read by the handler, after the key was checked from the headers
		// (readBody); fasthttp reads at most 16 KiB of one before the handler runs.
		StreamRequestBody: true,
		// The read buffer (maxRequestHead) is held for as long as the connection is open,
		// a stream's whole life and an idle keep-alive wait included. At 16 KiB a request
		// of up to 16 KiB, head and body (an agent's 10 KB history), is read with one
		// system call, a larger one with two (the rest of a body is read straight into
		// the body buffer); 8 KiB took two for 10 KB, for 8 KiB less per connection
		// (100 streams: 0.8 MB). It also bounds the request head (transportError: 431),
		// as Node's default bound does.
		ReadBufferSize: maxRequestHead,
		// Header names are not folded to canonical form (request_header.go):
		// foldHeaderNames folds the request's that are read by name, in place, before
		// fasthttp looks at Expect; a response's names are written as set, so the
		// handlers set them canonically ("Www-Authenticate"), as fasthttp wrote them.
		DisableHeaderNamesNormalizing: true,
		HeaderReceived:                foldHeaderNames,
		ExpectHandler:                 s.expect,
		MaxRequestBodySize:            s.maxBody,
		ReadTimeout:                   cfg.ReadTimeout,
		IdleTimeout:                   cfg.IdleTimeout,
		NoDefaultServerHeader:         true,
		NoDefaultDate:                 false,
		CloseOnShutdown:               true,
		ErrorHandler:                  s.transportError,
		// log.unsafe_transport_errors as the running config has it (a reload changes it).
		Logger: slogPrinter{l: logger, unsafe: func() bool { return s.runtime().cfg.Log.UnsafeTransportErrors }},
		// fasthttp's own error texts then leave out the request bytes they would quote. It
		// is read by fasthttp while serving, so it stays as the config was at start: a
		// reload that turns unsafe_transport_errors off is enforced by slogPrinter alone.
		SecureErrorLogMessage: !opts.Config.Log.UnsafeTransportErrors,
		ConnState:             connState, // for Shutdown's drainIdle
	}
	if opts.Config.Metrics.Listen != "" {
		s.metricsSrv = &fasthttp.Server{
			Handler:               s.handleMetricsOnly,
			Name:                  "agate",
			ReadTimeout:           s.srv.ReadTimeout,
			IdleTimeout:           s.srv.IdleTimeout,
			MaxRequestBodySize:    maxDiscardedBody,
			NoDefaultServerHeader: true,
			CloseOnShutdown:       true,
			Logger:                s.srv.Logger,
			SecureErrorLogMessage: s.srv.SecureErrorLogMessage,
		}
	}
	return s, nil
}

// checkTools verifies that every key's server tools resolve.
func (s *Server) checkTools(rt *runtime) error {
	for _, k := range rt.keys {
		if len(k.tools) == 0 {
			continue
		}
		if s.tools == nil {
			return fmt.Errorf("keys.%s.tools: no tool sources are configured", k.name)
		}
		if _, err := s.tools.Resolve(k.tools); err != nil {
			return fmt.Errorf("keys.%s.tools: %w", k.name, err)
		}
	}
	return nil
}

// Apply replaces the configuration. On error the running configuration stays. The new
// log.unsafe_transport_errors and log.upstream_error_messages apply to what is logged from
// then on; log.level and log.format belong to the logger, which is the caller's.
func (s *Server) Apply(cfg *config.Config) error {
	s.applyMu.Lock()
	defer s.applyMu.Unlock()
	rt, _, err := s.runtimeFor(cfg, s.dbKeys.Load(), s.rt.Load())
	if err == nil {
		err = s.checkTools(rt)
	}
	if err != nil {
		return err
	}
	s.configureCircuits(rt, s.rt.Load())
	s.seedGranted(s.rt.Load(), rt) // budgetseed.go
	prev := s.rt.Swap(rt)
	if cfg.Log.UnsafeTransportErrors && !prev.cfg.Log.UnsafeTransportErrors && s.srv.SecureErrorLogMessage {
		s.logger.Warn("config reload: log.unsafe_transport_errors is on, but fasthttp's own messages quote no request bytes until a restart")
	}
	return nil
}

func (s *Server) runtime() *runtime { return s.rt.Load() }

// Serve serves on ln until Shutdown, within server.max_connections and
// server.max_connections_per_ip. Called after Shutdown, it closes ln and returns.
func (s *Server) Serve(ln net.Listener) error {
	l := newClientListener(ln, s.maxConns, s.maxConnsPerIP, s.writeTimeout)
	l.refused = func(status int) {
		limit := "max_connections"
		if status == 429 {
			limit = "max_connections_per_ip"
		}
		s.metrics.ConnectionsRefused.WithLabelValues(limit).Inc()
	}
	s.listenersMu.Lock()
	if s.stopping {
		s.listenersMu.Unlock()
		return ln.Close()
	}
	s.listeners = append(s.listeners, l)
	s.serving.Add(1)
	s.listenersMu.Unlock()
	defer s.serving.Add(-1)
	return s.srv.Serve(l)
}

// ServeMetrics serves /metrics alone on ln (metrics.listen) until Shutdown. It is an
// error when metrics.listen is not set: /metrics is then served by Serve.
func (s *Server) ServeMetrics(ln net.Listener) error {
	if s.metricsSrv == nil {
		return errors.New("serving metrics: metrics.listen is not set")
	}
	return s.metricsSrv.Serve(ln)
}

// Shutdown stops accepting requests and waits for in-flight ones, streams included, to
// finish. Idle keep-alive connections are closed at once, and a connection that has sent
// nothing once it is silentAge old. When ctx ends first, the remaining upstream calls are
// cancelled (their streams end with an in-band error) and Shutdown waits a little more
// for them to close.
//
// A Serve that has not reached fasthttp's accept loop when Shutdown starts (fasthttp's
// own shutdown closes only the listeners it already serves, and one Serve adds later would
// accept forever) ends too: its listener is closed here, and a Serve called after
// Shutdown returns at once.
func (s *Server) Shutdown(ctx context.Context) error {
	if s.metricsSrv != nil {
		defer s.metricsSrv.ShutdownWithContext(ctx)
	}
	s.listenersMu.Lock()
	s.stopping = true
	s.listenersMu.Unlock()
	s.closeMCP() // its GET streams would hold the drain
	stop := make(chan struct{})
	defer close(stop)
	go s.closeSilent(stop)
	s.drainIdle(ctx) // drain.go: so that fasthttp's shutdown need not wait 100 ms
	err := s.srv.ShutdownWithContext(ctx)
	s.websockets.shutdown(ctx) // hijacked: fasthttp waits for none of them
	s.listenersMu.Lock()
	for _, l := range s.listeners {
		_ = l.Close() // already closed by fasthttp, unless its Serve had not begun
	}
	s.listenersMu.Unlock()
	if err != nil {
		s.cancelAll()
		grace, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = s.srv.ShutdownWithContext(grace)
	}
	s.cancelAll()
	s.Settle() // connections a timed-out shutdown left open keep records too
	s.circuits.set.Close()
	s.closeLimiter()
	s.closeAdmin()
	s.closeLedger() // after Settle: every record is queued
	s.runtime().caches.close()
	if s.closeResponses != nil {
		_ = s.closeResponses()
	}
	return err
}

// closeSilent closes, until stop closes, the client connections that have sent nothing
// for s.silentAge (clientListener.closeSilent), checking as often as fasthttp's shutdown
// checks for idle ones.
func (s *Server) closeSilent(stop <-chan struct{}) {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		s.listenersMu.Lock()
		for _, l := range s.listeners {
			l.closeSilent(time.Now().Add(-s.silentAge))
		}
		s.listenersMu.Unlock()
		select {
		case <-stop:
			return
		case <-tick.C:
		}
	}
}

func (s *Server) loopObserver() loop.Observer { return loopMetrics{s.metrics} }

type loopMetrics struct{ m *metrics.Metrics }

func (l loopMetrics) Iterations(n int) { l.m.LoopIterations.Observe(float64(n)) }

// handle routes a request. It also assigns the request id and turns panics into 500s.
func (s *Server) handle(ctx *fasthttp.RequestCtx) {
	rid := requestID(peekHeader(&ctx.Request.Header, headerRequestID))
	ctx.Response.Header.SetCanonical([]byte("X-Request-Id"), []byte(rid)) // canonical already: not normalized again
	defer func() {
		if p := recover(); p != nil {
			s.logger.Error("handler panic", "request_id", rid, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			writeError(ctx, classify(errors.New("panic"), rid))
		}
	}()
	if !s.readBody(ctx, rid) {
		return
	}
	// string(ctx.Path()) in a switch does not allocate; path is made only where kept.
	switch string(ctx.Path()) {
	case "/v1/chat/completions", "/chat/completions", "/v1/responses", "/responses", messagesPath, countTokensPath, embeddingsPath, embeddingsPathV0:
		// The model endpoints take POST only, but for the Responses WebSocket mode's upgrade.
		if p := string(ctx.Path()); (p == "/v1/responses" || p == "/responses") && isWebsocketUpgrade(ctx) {
			s.handleResponsesWebsocket(ctx, rid)
			return
		}
		if !ctx.IsPost() {
			s.methodNotAllowed(ctx, rid, "POST")
			return
		}
		switch string(ctx.Path()) {
		case "/v1/chat/completions", "/chat/completions":
			s.handleChat(ctx, rid)
		case "/v1/responses", "/responses":
			s.handleResponses(ctx, rid)
		case messagesPath:
			s.handleMessages(ctx, rid)
		case countTokensPath:
			s.handleCountTokens(ctx, rid)
		case embeddingsPath, embeddingsPathV0:
			s.handleEmbeddings(ctx, rid)
		}
	case "/v1/models", "/models":
		if !ctx.IsGet() {
			s.methodNotAllowed(ctx, rid, "GET")
			return
		}
		s.handleModels(ctx, rid)
	case "/metrics":
		if s.metricsSrv != nil { // served on metrics.listen only
			writeError(ctx, classify(errorf(ErrNotFound, "no route for %s %s", ctx.Method(), ctx.Path()), rid))
			return
		}
		s.handleMetrics(ctx, rid)
	case "/healthz":
		ctx.SetContentType("application/json")
		ctx.SetBodyString(`{"status":"ok"}`)
	case "/readyz":
		s.handleReady(ctx)
	default:
		if s.isMCP(ctx) { // mcp.go
			s.handleMCP(ctx)
			return
		}
		path, method := string(ctx.Path()), string(ctx.Method())
		if strings.HasPrefix(path, adminPrefix) && s.adminSrv == nil { // admin.go; on admin.listen only when set
			s.handleAdmin(ctx)
			return
		}
		if s.console != nil && s.adminSrv == nil && console.Owns(path) { // console.go
			s.console.Serve(ctx)
			return
		}
		if id, ok := strings.CutPrefix(path, responsesPathPrefix); ok && id != "" && !strings.Contains(id, "/") {
			s.handleStoredResponse(ctx, rid, method, id)
			return
		}
		if rest, ok := strings.CutPrefix(path, responsesPathPrefix); ok {
			if id, ok := strings.CutSuffix(rest, "/input_items"); ok && id != "" && !strings.Contains(id, "/") {
				s.handleInputItems(ctx, rid, method, id)
				return
			}
		}
		writeError(ctx, classify(errorf(ErrNotFound, "agate does not serve %s %s; it serves %s",
			method, truncate(path, 100), servedEndpoints), rid))
	}
}

// servedEndpoints names, for the 404 of any other route, what handle serves. The
// chat and models routes are served also without the /v1 prefix.
const servedEndpoints = "POST /v1/chat/completions, POST /v1/responses, GET and DELETE /v1/responses/{id}, GET /v1/responses/{id}/input_items, POST /v1/messages, POST /v1/messages/count_tokens, POST /v1/embeddings, GET /v1/models, GET /healthz, GET /readyz and GET /metrics"

func (s *Server) methodNotAllowed(ctx *fasthttp.RequestCtx, rid, allow string) {
	ctx.Response.Header.Set("Allow", allow)
	writeError(ctx, classify(errorf(ErrMethodNotAllowed, "use %s for %s", allow, ctx.Path()), rid))
}

func (s *Server) handleModels(ctx *fasthttp.RequestCtx, rid string) {
	rt := s.runtime()
	key, err := requestKey(ctx, rt)
	if err != nil {
		writeError(ctx, classify(err, rid))
		return
	}
	out := []byte(`{"object":"list","data":[`)
	for i, name := range rt.modelNames(key) {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, `{"id":`...)
		out = jsonx.AppendString(out, name)
		out = append(out, `,"object":"model","created":0,"owned_by":`...)
		out = jsonx.AppendString(out, rt.routes[name].backend.name)
		out = append(out, '}')
	}
	out = append(out, "]}"...)
	ctx.SetContentType("application/json")
	ctx.SetBody(out)
}

// Settle records, before it returns, the metrics and access lines of every request
// answered so far. A non-streamed answer leaves them to its connection, which records
// them once the answer is written (requestDone): a scrape of /metrics settles first, and
// so must a reader of Options.Gatherer or of the log that needs the requests it has just
// seen answered.
func (s *Server) Settle() {
	s.listenersMu.Lock()
	ls := slices.Clone(s.listeners)
	s.listenersMu.Unlock()
	for _, l := range ls {
		l.settle()
	}
}

// handleMetrics serves /metrics to a scraper that presents metrics.bearer, when one is set.
func (s *Server) handleMetrics(ctx *fasthttp.RequestCtx, rid string) {
	if s.hasMetricsToken {
		token, _ := bearer(ctx.Request.Header.Peek("Authorization"))
		sum := sha256.Sum256(token)
		if subtle.ConstantTimeCompare(sum[:], s.metricsToken[:]) != 1 {
			ctx.Response.Header.Set("Www-Authenticate", `Bearer realm="metrics"`)
			writeError(ctx, classify(errorf(ErrUnauthorized, "/metrics needs the token of metrics.bearer: send Authorization: Bearer <token>"), rid))
			return
		}
	}
	s.Settle()
	s.metricsHandler(ctx)
}

// handleMetricsOnly is the handler of the metrics.listen server.
func (s *Server) handleMetricsOnly(ctx *fasthttp.RequestCtx) {
	rid := requestID(nil)
	if string(ctx.Path()) != "/metrics" {
		writeError(ctx, classify(errorf(ErrNotFound, "only /metrics is served here"), rid))
		return
	}
	s.handleMetrics(ctx, rid)
}

func (s *Server) handleReady(ctx *fasthttp.RequestCtx) {
	ctx.SetContentType("application/json")
	if s.tools != nil {
		if err := s.tools.Ready(); err != nil {
			ctx.SetStatusCode(503)
			ctx.SetBody(append(append([]byte(`{"status":"not ready","reason":`), jsonx.AppendString(nil, err.Error())...), '}'))
			return
		}
	}
	if s.stateNotReady(ctx) { // Redis unreachable, degraded or not ready
		return
	}
	if s.tools != nil {
		// A tool source that is down and not required leaves the replica in rotation: its
		// tools fail with a tool error, chat is served.
		if err := s.tools.Degraded(); err != nil {
			ctx.SetBody(append(append([]byte(`{"status":"degraded","reason":`), jsonx.AppendString(nil, err.Error())...), '}'))
			return
		}
	}
	if s.ledgerNotReady(ctx) { // the ledger's database cannot be written
		return
	}
	ctx.SetBodyString(`{"status":"ready"}`)
}

// maxRequestHead bounds a client's request head: it is the server's read buffer size.
const maxRequestHead = 16 << 10

// transportError renders fasthttp's own request errors (oversize body, bad HTTP).
func (s *Server) transportError(ctx *fasthttp.RequestCtx, err error) {
	rid := requestID(nil)
	var a apiError
	var small *fasthttp.ErrSmallBuffer
	switch {
	case errors.Is(err, fasthttp.ErrBodyTooLarge):
		a = classify(errorf(ErrTooLarge, "the request body exceeds server.max_body_bytes (%d bytes)", s.srv.MaxRequestBodySize), rid)
	case errors.As(err, &small):
		a = apiError{Status: 431, Message: fmt.Sprintf("the request head (request line and headers) exceeds %d bytes", maxRequestHead),
			Type: "invalid_request_error", Code: "request_header_too_large"}
	default:
		a = apiError{Status: 400, Message: "malformed HTTP request", Type: "invalid_request_error"}
	}
	writeError(ctx, a)
	s.metrics.Requests.WithLabelValues("", "", "", fmt.Sprint(a.Status), "", apiLabel(ctx.Path())).Inc()
	// fasthttp closes the connection after this answer; let it reach a client still writing.
	if c, ok := ctx.Conn().(*clientConn); ok {
		c.drainOnClose(maxDiscardedBody)
	}
}

// render classifies err for the client and logs what the client does not see.
func (s *Server) render(rid string, err error) apiError {
	a := classify(err, rid)
	if a.Status >= 500 {
		s.logger.Error("request failed", "request_id", rid, "status", a.Status, "error", logError(err, s.runtime().cfg.Log.UpstreamErrorMessages))
	}
	return a
}

// fail writes err as the response and counts the request.
func (s *Server) fail(ctx *fasthttp.RequestCtx, rid string, err error, model, backend, key, stream string) {
	a := s.refuseRequest(ctx, rid, err)
	s.metrics.Requests.WithLabelValues(model, backend, key, fmt.Sprint(a.Status), stream, apiLabel(ctx.Path())).Inc()
}

// refuseRequest writes err as the response and logs it (render, and "request rejected" below
// 500), counting nothing: the caller's record counts the request with the status
// returned.
func (s *Server) refuseRequest(ctx *fasthttp.RequestCtx, rid string, err error) apiError {
	a := s.render(rid, err)
	writeError(ctx, a)
	if a.Status < 500 {
		msg := clip(a.Message, maxLoggedMessage)
		if upstream.AsError(err) != nil {
			msg = logError(err, s.runtime().cfg.Log.UpstreamErrorMessages)
		}
		s.logger.Info("request rejected", "request_id", rid, "status", a.Status, "error", msg)
	}
	return a
}

// requestID returns a valid client-sent id, or a new one.
func requestID(h []byte) string {
	if n := len(h); n > 0 && n <= 128 {
		ok := true
		for _, c := range h {
			if c <= ' ' || c > '~' {
				ok = false
				break
			}
		}
		if ok {
			return string(h)
		}
	}
	return newID("")
}

// newID returns prefix followed by 24 random hex digits, built in one allocation. The
// digits come from the runtime's ChaCha8 generator (math/rand/v2), seeded by the system:
// an id names a request or completion and guards nothing (BenchmarkNewID: 131 ns with
// crypto/rand, 81 ns so, most of it the allocation). Two draws give 96 random bits, eight
// digits a word (hex8).
func newID(prefix string) string {
	b := make([]byte, len(prefix)+24)
	d := b[copy(b, prefix):]
	x, y := rand.Uint64(), rand.Uint64()
	binary.LittleEndian.PutUint64(d[0:8], hex8(uint32(x)))
	binary.LittleEndian.PutUint64(d[8:16], hex8(uint32(x>>32)))
	binary.LittleEndian.PutUint64(d[16:24], hex8(uint32(y)))
	return jsonx.View(b) // b is not written again
}

// hex8 returns the eight lower-case hex digits of v, most significant first, as the
// little-endian word that holds them in that order: a few shifts and masks spread the
// nibbles one to a byte, and one addition makes each a digit, where a loop costs a
// table load, a bounds check and a store a digit.
func hex8(v uint32) uint64 {
	x := uint64(v)
	x = (x | x<<16) & 0x0000ffff0000ffff
	x = (x | x<<8) & 0x00ff00ff00ff00ff
	// Byte k now holds nibble k, from the least significant; letters has a 1 in each byte
	// whose nibble is 10 or more.
	x = (x | x<<4) & 0x0f0f0f0f0f0f0f0f
	letters := (x + 0x0606060606060606) >> 4 & 0x0101010101010101
	x += 0x3030303030303030 + letters*('a'-'0'-10)
	return bits.ReverseBytes64(x)
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// slogPrinter adapts fasthttp's logger to slog. fasthttp's messages about requests it
// could not parse quote the request bytes (headers with credentials, the body); unless
// unsafe is set (log.unsafe_transport_errors), every quoted or raw part is cut out.
type slogPrinter struct {
	l      *slog.Logger
	unsafe func() bool // log.unsafe_transport_errors of the running config
}

func (p slogPrinter) Printf(format string, args ...any) {
	if p.unsafe() {
		p.l.Warn("fasthttp", "message", fmt.Sprintf(format, args...))
		return
	}
	safe := make([]any, len(args))
	for i, a := range args {
		switch a := a.(type) {
		case net.Addr, int, int64, uint64, time.Duration:
			safe[i] = a
		case error:
			safe[i] = redactRequestBytes(a.Error())
		default:
			safe[i] = redactRequestBytes(fmt.Sprint(a))
		}
	}
	p.l.Warn("fasthttp", "message", fmt.Sprintf(format, safe...))
}

// redactRequestBytes keeps the start of a fasthttp message up to the first quoted or
// dumped request bytes.
func redactRequestBytes(msg string) string {
	cut := len(msg)
	for _, marker := range []string{`"`, "'", "`", "contents:", "buffer size="} {
		if i := strings.Index(msg, marker); i >= 0 && i < cut {
			cut = i
		}
	}
	if cut == len(msg) {
		return clip(msg, maxLoggedMessage)
	}
	return clip(strings.TrimRight(msg[:cut], " :"), maxLoggedMessage) + " [request bytes not logged; see log.unsafe_transport_errors]"
}
