package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/agate-gateway/agate/telemetry"
)

// MCP connection tuning. Reconnection starts after restartBackoffMin and doubles up to
// restartBackoffMax; a call made while the server is down waits at most reconnectWait (and
// never past its own timeout) for it to come back.
const (
	restartBackoffMin = 100 * time.Millisecond
	restartBackoffMax = 30 * time.Second
	reconnectWait     = 2 * time.Second
	connectTimeout    = 60 * time.Second // npx may download the server first
	listTimeout       = 30 * time.Second
	keepAlive         = 30 * time.Second
	terminateWait     = 2 * time.Second
)

var errSourceClosed = errors.New("tool source closed")

// mcpSource is a type mcp source: a client session to one MCP server over stdio (a child
// process it starts, and restarts with backoff when it dies) or streamable HTTP (reconnected
// the same way when the session ends). It rediscovers the server's tools on tools/list_changed
// and passes every new list to publish.
type mcpSource struct {
	name       string
	cfg        SourceOptions
	logger     *slog.Logger
	publish    func([]toolSpec)
	client     *mcp.Client
	httpClient *http.Client // streamable HTTP only
	backoffMin time.Duration
	backoffMax time.Duration

	progress progressRoutes // the progress tokens of running calls (serve.go)

	refresh chan struct{} // a tools/list_changed arrived; buffered 1 so signals coalesce
	done    chan struct{} // closed by close
	wg      sync.WaitGroup

	mu      sync.Mutex
	session *mcp.ClientSession // nil while down
	up      chan struct{}      // closed when session becomes non-nil; replaced when it drops
	downErr error              // why session is nil
	cmd     *exec.Cmd          // the running stdio server, for tests
	closed  bool
}

var _ source = (*mcpSource)(nil)

func newMCPSource(name string, cfg SourceOptions, logger *slog.Logger, publish func([]toolSpec)) (*mcpSource, error) {
	switch {
	case len(cfg.Command) > 0 && cfg.URL != "":
		return nil, errors.New("set either command (stdio) or url (streamable HTTP), not both")
	case len(cfg.Command) == 0 && cfg.URL == "":
		return nil, errors.New("set command (stdio) or url (streamable HTTP)")
	case cfg.Command != nil && cfg.Command[0] == "":
		return nil, errors.New("command: empty program name")
	}
	if cfg.URL != "" {
		// The URL may hold secrets (user information, a token in the query or path), and
		// the SDK and Go's HTTP client quote it in their errors and log lines.
		logger = newRedactingLogger(logger)
	}
	s := &mcpSource{
		name:       name,
		cfg:        cfg,
		logger:     logger,
		publish:    publish,
		backoffMin: restartBackoffMin,
		backoffMax: restartBackoffMax,
		refresh:    make(chan struct{}, 1),
		done:       make(chan struct{}),
		up:         make(chan struct{}),
		downErr:    errors.New("not connected yet"),
	}
	if cfg.URL != "" {
		base := http.DefaultTransport.(*http.Transport).Clone()
		s.httpClient = &http.Client{Transport: headerTransport{base: base, headers: cfg.Headers}, CheckRedirect: sameOriginRedirect}
	}
	s.client = mcp.NewClient(&mcp.Implementation{Name: "agate", Version: "1"}, &mcp.ClientOptions{
		Logger:    logger,
		KeepAlive: keepAlive,
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			s.progress.deliver(req.Params)
		},
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			select {
			case s.refresh <- struct{}{}:
			default: // a refresh is already pending
			}
		},
	})
	return s, nil
}

// sameOriginRedirect is the redirect policy of streamable-HTTP MCP clients: redirects within
// the configured URL's scheme and host are followed (a server mounted at "/mcp/" answering
// "/mcp"), others refused, since headerTransport adds the secret headers to every request.
func sameOriginRedirect(req *http.Request, via []*http.Request) error {
	switch {
	case len(via) >= 10:
		return errors.New("stopped after 10 redirects")
	case req.URL.Scheme != via[0].URL.Scheme || req.URL.Host != via[0].URL.Host:
		return errors.New("redirect to another scheme or host refused")
	}
	return nil
}

// headerTransport adds configured headers (for example an Authorization secret) to every
// request to a streamable-HTTP MCP server.
type headerTransport struct {
	base    http.RoundTripper
	headers map[string]string
}

func (t headerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	traced := trace.SpanContextFromContext(req.Context()).IsValid() // a tool call's span (tracing on)
	if len(t.headers) > 0 || traced {
		req = req.Clone(req.Context())
		for k, v := range t.headers {
			req.Header.Set(k, v)
		}
		telemetry.Inject(req.Context(), propagation.HeaderCarrier(req.Header))
	}
	return t.base.RoundTrip(req)
}

func (s *mcpSource) start(ctx context.Context) ([]toolSpec, error) {
	cs, specs, err := s.connect(ctx)
	if err != nil {
		return nil, err
	}
	if !s.setSession(cs) {
		return nil, errSourceClosed
	}
	s.wg.Add(2)
	go s.supervise(cs)
	go s.refreshLoop()
	return specs, nil
}

// retryInBackground keeps a source whose start failed with err trying: it reports err
// (Ready) until the server comes up, retrying with the reconnection backoff, then publishes
// the server's tools and supervises the session as start does. Called at most once, instead
// of a successful start.
func (s *mcpSource) retryInBackground(err error) {
	s.markDown(fmt.Errorf("not started (%v); retrying", err))
	s.wg.Add(2)
	go func() {
		cs := s.reconnect()
		if cs == nil {
			s.wg.Done()
			return
		}
		s.supervise(cs)
	}()
	go s.refreshLoop()
}

// connect opens a new session and lists the server's tools.
func (s *mcpSource) connect(ctx context.Context) (*mcp.ClientSession, []toolSpec, error) {
	var t mcp.Transport
	if s.cfg.URL != "" {
		t = &mcp.StreamableClientTransport{Endpoint: s.cfg.URL, HTTPClient: s.httpClient}
	} else {
		// Not CommandContext: the process must outlive ctx, which only bounds connecting.
		cmd := exec.Command(s.cfg.Command[0], s.cfg.Command[1:]...)
		cmd.Env = stdioEnv(os.Environ(), s.cfg.EnvPassthrough, s.cfg.Env)
		cmd.Stderr = &stderrLogger{logger: s.logger}
		s.mu.Lock()
		s.cmd = cmd
		s.mu.Unlock()
		t = &mcp.CommandTransport{Command: cmd, TerminateDuration: terminateWait}
	}
	cs, err := s.client.Connect(ctx, t, nil)
	if err != nil {
		return nil, nil, redactError(fmt.Errorf("connecting: %w", err))
	}
	specs, err := s.listTools(ctx, cs)
	if err != nil {
		_ = cs.Close()
		return nil, nil, redactError(err)
	}
	return cs, specs, nil
}

func (s *mcpSource) listTools(ctx context.Context, cs *mcp.ClientSession) ([]toolSpec, error) {
	var specs []toolSpec
	for t, err := range cs.Tools(ctx, nil) {
		if err != nil {
			return nil, fmt.Errorf("listing tools: %w", err)
		}
		params, err := json.Marshal(t.InputSchema)
		if err != nil {
			s.logger.Error("tool input schema does not marshal; tool left out", "tool", t.Name, "error", err)
			continue
		}
		desc := t.Description
		if desc == "" {
			desc = t.Title
		}
		specs = append(specs, toolSpec{
			Tool:        t.Name,
			Description: desc,
			Parameters:  params,
			ReadOnly:    t.Annotations != nil && t.Annotations.ReadOnlyHint,
			Hints:       hintsOf(t),
		})
	}
	return specs, nil
}

// setSession makes cs the live session and wakes waiting calls. It reports false (and
// closes cs) when the source was closed meanwhile.
func (s *mcpSource) setSession(cs *mcp.ClientSession) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		_ = cs.Close()
		return false
	}
	s.session, s.downErr = cs, nil
	close(s.up)
	return true
}

func (s *mcpSource) markDown(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.session != nil {
		s.session = nil
		s.up = make(chan struct{})
	}
	s.downErr = err
}

// supervise waits for the live session to end and reconnects with exponential backoff,
// until the source is closed.
func (s *mcpSource) supervise(cs *mcp.ClientSession) {
	defer s.wg.Done()
	for {
		err := redactError(cs.Wait())
		if s.isClosed() {
			return
		}
		if err == nil {
			err = errors.New("connection closed")
		}
		s.markDown(fmt.Errorf("server disconnected (%v); reconnecting", err))
		s.logger.Warn("mcp server disconnected; reconnecting", "error", err)
		_ = cs.Close()
		if cs = s.reconnect(); cs == nil {
			return
		}
	}
}

// reconnect retries connect with backoff; nil means the source was closed.
func (s *mcpSource) reconnect() *mcp.ClientSession {
	delay := s.backoffMin
	timer := time.NewTimer(delay)
	defer timer.Stop()
	for attempt := 1; ; attempt++ {
		select {
		case <-s.done:
			return nil
		case <-timer.C:
		}
		cs, specs, err := s.connectUntilClosed()
		if err == nil {
			if !s.setSession(cs) {
				return nil
			}
			s.logger.Info("mcp server reconnected", "attempt", attempt, "tools", len(specs))
			s.publish(specs)
			return cs
		}
		delay = min(delay*2, s.backoffMax)
		s.markDown(fmt.Errorf("reconnecting (attempt %d, next in %v): %w", attempt, delay, err))
		s.logger.Warn("mcp server reconnect failed", "attempt", attempt, "retry_in", delay, "error", err)
		timer.Reset(delay)
	}
}

// connectUntilClosed connects within connectTimeout, giving up early if the source closes.
func (s *mcpSource) connectUntilClosed() (*mcp.ClientSession, []toolSpec, error) {
	ctx, cancel := context.WithTimeout(context.Background(), connectTimeout)
	defer cancel()
	go func() {
		select {
		case <-s.done:
			cancel()
		case <-ctx.Done():
		}
	}()
	return s.connect(ctx)
}

// refreshLoop re-lists tools after each tools/list_changed notification.
func (s *mcpSource) refreshLoop() {
	defer s.wg.Done()
	for {
		select {
		case <-s.done:
			return
		case <-s.refresh:
		}
		s.mu.Lock()
		cs := s.session
		s.mu.Unlock()
		if cs == nil {
			continue // the reconnect publishes a fresh list
		}
		ctx, cancel := context.WithTimeout(context.Background(), listTimeout)
		specs, err := s.listTools(ctx, cs)
		cancel()
		if err != nil {
			s.logger.Warn("refreshing tool list", "error", err)
			continue
		}
		s.logger.Info("mcp tool list changed", "tools", len(specs))
		s.publish(specs)
	}
}

func (s *mcpSource) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// liveSession returns the session, waiting up to reconnectWait (and within ctx) for a
// reconnection when the server is down.
func (s *mcpSource) liveSession(ctx context.Context) (*mcp.ClientSession, error) {
	var timer *time.Timer
	for {
		s.mu.Lock()
		cs, up, downErr, closed := s.session, s.up, s.downErr, s.closed
		s.mu.Unlock()
		switch {
		case closed:
			return nil, errSourceClosed
		case cs != nil:
			return cs, nil
		}
		if timer == nil {
			timer = time.NewTimer(reconnectWait)
			defer timer.Stop()
		}
		select {
		case <-up:
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-s.done:
			return nil, errSourceClosed
		case <-timer.C:
			return nil, fmt.Errorf("mcp server %q is unavailable: %v", s.name, downErr)
		}
	}
}

func (s *mcpSource) call(ctx context.Context, tool string, args json.RawMessage) (Result, error) {
	cs, err := s.liveSession(ctx)
	if err != nil {
		return Result{}, err
	}
	params := &mcp.CallToolParams{Name: tool, Arguments: args}
	if fn := progressFrom(ctx); fn != nil {
		token, done := s.progress.add(fn)
		defer done()
		params.SetProgressToken(token)
	}
	res, err := cs.CallTool(ctx, params)
	if err != nil {
		var transport *url.Error
		if ctx.Err() == nil && errors.As(err, &transport) {
			// The server cannot be reached (an HTTP source whose server went away): end
			// the session now, so the source reports down (Ready) and reconnects, instead
			// of waiting for the SDK's stream retries to give up.
			s.logger.Warn("mcp server unreachable; reconnecting", "error", redactError(err))
			_ = cs.Close()
		}
		return Result{}, redactError(err)
	}
	return renderCallResult(res), nil
}

// masks reports whether the source's results are masked (mask_results, default true).
func (s *mcpSource) masks() bool { return s.cfg.MaskResults == nil || *s.cfg.MaskResults }

func (s *mcpSource) ready() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.closed:
		return errSourceClosed
	case s.session == nil:
		return s.downErr
	}
	return nil
}

func (s *mcpSource) close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	cs := s.session
	s.session = nil
	close(s.done)
	s.mu.Unlock()
	var err error
	if cs != nil {
		err = cs.Close()
	}
	s.wg.Wait()
	if s.httpClient != nil {
		s.httpClient.CloseIdleConnections()
	}
	var exit *exec.ExitError
	if errors.Is(err, mcp.ErrConnectionClosed) || errors.As(err, &exit) {
		// The server was already gone, or exited (perhaps on the SIGTERM that Close sends
		// when it does not leave after its stdin closes): either way it is stopped.
		s.logger.Debug("mcp server stopped", "error", err)
		err = nil
	}
	return err
}

// renderCallResult turns an MCP tool result into text for the model: text content as is,
// other content described in brackets, blocks separated by newlines. A result with only
// structured content shows that as JSON.
func renderCallResult(res *mcp.CallToolResult) Result {
	var b strings.Builder
	for i, c := range res.Content {
		if i > 0 {
			b.WriteByte('\n')
		}
		switch c := c.(type) {
		case *mcp.TextContent:
			b.WriteString(c.Text)
		case *mcp.ImageContent:
			fmt.Fprintf(&b, "[image: %s, %d bytes]", c.MIMEType, len(c.Data))
		case *mcp.AudioContent:
			fmt.Fprintf(&b, "[audio: %s, %d bytes]", c.MIMEType, len(c.Data))
		case *mcp.ResourceLink:
			fmt.Fprintf(&b, "[resource link: %s %s", c.Name, c.URI)
			if c.MIMEType != "" {
				fmt.Fprintf(&b, " (%s)", c.MIMEType)
			}
			if c.Description != "" {
				fmt.Fprintf(&b, ": %s", c.Description)
			}
			b.WriteByte(']')
		case *mcp.EmbeddedResource:
			renderResource(&b, c.Resource)
		default:
			fmt.Fprintf(&b, "[unsupported content %T]", c)
		}
	}
	if len(res.Content) == 0 && res.StructuredContent != nil {
		if js, err := json.Marshal(res.StructuredContent); err == nil {
			b.Write(js)
		}
	}
	return Result{Content: b.String(), IsError: res.IsError}
}

func renderResource(b *strings.Builder, r *mcp.ResourceContents) {
	switch {
	case r == nil:
		b.WriteString("[resource]")
	case r.Text != "" || r.Blob == nil:
		fmt.Fprintf(b, "[resource: %s]\n%s", r.URI, r.Text)
	default:
		fmt.Fprintf(b, "[resource: %s, %s, %d bytes]", r.URI, r.MIMEType, len(r.Blob))
	}
}

// stdioEnv is the environment of a stdio MCP server: the entries of environ (the
// gateway's, "NAME=value") whose names are in the base set (isBaseEnv) or in passthrough,
// then env in name order. The gateway's environment holds the upstream API keys and the
// secrets its config refers to, and a server may hand its environment to the model (the
// reference server's get-env tool does), so nothing else of it is passed on. An entry
// later in the list wins (exec.Cmd keeps the last value of a name).
func stdioEnv(environ, passthrough []string, env map[string]string) []string {
	out := make([]string, 0, 8+len(passthrough)+len(env))
	for _, kv := range environ {
		name, _, ok := strings.Cut(kv, "=")
		if ok && name != "" && (isBaseEnv(name) || slices.Contains(passthrough, name)) {
			out = append(out, kv)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(env)) {
		out = append(out, name+"="+env[name])
	}
	return out
}

// isBaseEnv reports whether every stdio MCP server gets the gateway's variable name: what
// finding programs (PATH), npm's and Python's caches (HOME, TMPDIR) and the locale need.
func isBaseEnv(name string) bool {
	switch name {
	case "PATH", "HOME", "TMPDIR", "TZ", "LANG", "LANGUAGE":
		return true
	}
	return strings.HasPrefix(name, "LC_")
}

// stderrLogger logs a stdio server's stderr line by line. Only the process's stderr copier
// writes to it.
type stderrLogger struct {
	logger *slog.Logger
	buf    []byte
}

const maxStderrLine = 4096

func (w *stderrLogger) Write(p []byte) (int, error) {
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			if len(w.buf) > maxStderrLine {
				w.logger.Info("mcp server stderr", "line", string(w.buf[:maxStderrLine]))
				w.buf = w.buf[:0]
			}
			return len(p), nil
		}
		if line := strings.TrimSpace(string(w.buf[:i])); line != "" {
			w.logger.Info("mcp server stderr", "line", truncateString(line, maxStderrLine))
		}
		w.buf = w.buf[i+1:]
	}
}
