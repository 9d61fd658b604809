package mcpserve

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agate-gateway/agate/telemetry"
	"github.com/agate-gateway/agate/tools"
)

// Registry is what the endpoint needs of the tool registry; *tools.Registry implements it.
type Registry interface {
	Resolve(names []string) ([]tools.Definition, error)
	Call(ctx context.Context, name string, args []byte) tools.Result
	Hints(name string) (tools.Hints, bool)
	MCPSources(names []string) []string
	Resources(ctx context.Context, source string) ([]*mcp.Resource, error)
	ResourceTemplates(ctx context.Context, source string) ([]*mcp.ResourceTemplate, error)
	ReadResource(ctx context.Context, source, uri string) (*mcp.ReadResourceResult, error)
	Prompts(ctx context.Context, source string) ([]*mcp.Prompt, error)
	GetPrompt(ctx context.Context, source, prompt string, args map[string]string) (*mcp.GetPromptResult, error)
}

// Key is an authenticated API key as the endpoint sees it: never the credential.
type Key struct {
	// Name identifies the key: the owner of its sessions and the caller of its tool calls
	// (the result cache's scope, tools.WithCaller).
	Name string
	// Tools is the key's tool list (keys.<name>.tools): source names and "source/tool".
	Tools []string
	// MaxConcurrentCalls bounds the key's tool calls running at once through the endpoint,
	// all its sessions together; further calls wait for a slot. Zero or less means
	// DefaultMaxConcurrentCalls.
	MaxConcurrentCalls int
	// Admit checks one tool call against the key's request limits before it runs. A nil
	// error admits the call, and done (never nil then) is called when it ends; an error
	// refuses it, and its text is the tool error the client gets (it names the limit, not
	// the key's credential). Nil Admit admits every call.
	Admit func(ctx context.Context) (done func(), err error)
}

// DefaultMaxConcurrentCalls is a key's concurrency cap when Key.MaxConcurrentCalls is not set.
const DefaultMaxConcurrentCalls = 4

// Options configure a Handler.
type Options struct {
	// Registry runs the tools; required.
	Registry Registry
	// Tracer records the execute_tool spans; nil means tracing off.
	Tracer *telemetry.Tracer
	// Logger receives the handler's logs; nil discards them. No credential, argument or
	// result is logged.
	Logger *slog.Logger
	// MaxMessageBytes bounds a request body the SDK reads (the gateway bounds it before
	// too). Zero means DefaultMaxMessageBytes.
	MaxMessageBytes int64
	// SessionIdleTimeout closes a session idle this long. Zero means never.
	SessionIdleTimeout time.Duration
	// Version is the server version announced at initialize.
	Version string
}

// DefaultMaxMessageBytes is Options.MaxMessageBytes's default.
const DefaultMaxMessageBytes = 1 << 20

// Handler serves the MCP endpoint. It is safe for concurrent use.
type Handler struct {
	reg    Registry
	tracer *telemetry.Tracer
	logger *slog.Logger
	server *mcp.Server
	http   http.Handler

	mu    sync.Mutex
	slots map[slotKey]chan struct{} // each key's concurrency slots
}

type slotKey struct {
	name string
	size int
}

// keyContext is the context key of the request's Key (Serve).
type keyContext struct{}

// tokenExtraKey is where the request's Key rides in the SDK's auth.TokenInfo.Extra, the
// per-request value the SDK hands to each method (RequestExtra.TokenInfo).
const tokenExtraKey = "agate.key"

// placeholderToken replaces the client's credential in the headers the SDK reads.
const placeholderToken = "authenticated-by-agate"

// New builds a Handler.
func New(o Options) *Handler {
	logger := o.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	maxBytes := o.MaxMessageBytes
	if maxBytes <= 0 {
		maxBytes = DefaultMaxMessageBytes
	}
	version := o.Version
	if version == "" {
		version = "dev"
	}
	h := &Handler{reg: o.Registry, tracer: o.Tracer, logger: logger, slots: make(map[slotKey]chan struct{})}
	h.server = mcp.NewServer(&mcp.Implementation{Name: "agate", Title: "Agate gateway tools", Version: version}, &mcp.ServerOptions{
		Logger: logger,
		Capabilities: &mcp.ServerCapabilities{
			Tools:     &mcp.ToolCapabilities{},
			Resources: &mcp.ResourceCapabilities{},
			Prompts:   &mcp.PromptCapabilities{},
		},
	})
	h.server.AddReceivingMiddleware(h.middleware)
	streamable := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return h.server }, &mcp.StreamableHTTPOptions{
		Logger:              logger,
		EventStore:          mcp.NewMemoryEventStore(nil),
		SessionTimeout:      o.SessionIdleTimeout,
		MaxRequestBodyBytes: maxBytes,
	})
	// The SDK binds a session to the TokenInfo.UserID of the request that created it and
	// refuses the session to requests of another; the verifier only hands over the key
	// Serve authenticated.
	verify := func(ctx context.Context, _ string, _ *http.Request) (*auth.TokenInfo, error) {
		k, ok := ctx.Value(keyContext{}).(*Key)
		if !ok {
			return nil, auth.ErrInvalidToken
		}
		return &auth.TokenInfo{UserID: k.Name, Extra: map[string]any{tokenExtraKey: k}}, nil
	}
	h.http = auth.RequireBearerToken(verify, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(streamable)
	return h
}

// Serve answers one HTTP request of the endpoint (POST, GET or DELETE) for key, which the
// caller has authenticated. r's Authorization and X-Api-Key headers are replaced first.
func (h *Handler) Serve(w http.ResponseWriter, r *http.Request, key *Key) {
	r = r.WithContext(context.WithValue(r.Context(), keyContext{}, key))
	r.Header.Del("X-Api-Key")
	r.Header.Set("Authorization", "Bearer "+placeholderToken)
	rw := &rpcErrors{ResponseWriter: w}
	h.http.ServeHTTP(rw, r)
	rw.finish()
}

// Close ends every session: their open streams end and their clients must initialize
// again.
func (h *Handler) Close() {
	for ss := range h.server.Sessions() {
		_ = ss.Close()
	}
}

// keyOf returns the Key of the request req carries.
func keyOf(req mcp.Request) (*Key, error) {
	if extra := req.GetExtra(); extra != nil && extra.TokenInfo != nil {
		if k, ok := extra.TokenInfo.Extra[tokenExtraKey].(*Key); ok {
			return k, nil
		}
	}
	return nil, &jsonrpc.Error{Code: codeUnauthorized, Message: "the request carries no authenticated API key"}
}

// JSON-RPC error codes of the endpoint's own refusals (the implementation-defined range).
const (
	codeUnauthorized = -32001 // no key (never reached through Serve)
	codeNoTools      = -32002 // the key has no tools
	codeSourceFailed = -32003 // a source could not answer a resources or prompts request
	codeSession      = -32005 // the session is not found, or is another key's
)

// middleware serves the methods the endpoint answers itself, per key; the SDK serves the
// others (ping, notifications) and refuses unknown ones.
func (h *Handler) middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		switch method {
		case "initialize", "tools/list", "tools/call", "resources/list", "resources/templates/list",
			"resources/read", "prompts/list", "prompts/get":
		default:
			return next(ctx, method, req)
		}
		key, err := keyOf(req)
		if err != nil {
			return nil, err
		}
		if len(key.Tools) == 0 {
			return nil, &jsonrpc.Error{Code: codeNoTools, Message: fmt.Sprintf(
				"API key %q has no tools: the gateway serves a key the tools of its keys.%s.tools, and this key's list is empty", key.Name, key.Name)}
		}
		switch r := req.(type) {
		case *mcp.ListToolsRequest:
			return h.listTools(key)
		case *mcp.CallToolRequest:
			return h.callTool(ctx, key, r)
		case *mcp.ListResourcesRequest:
			return h.listResources(ctx, key)
		case *mcp.ListResourceTemplatesRequest:
			return h.listResourceTemplates(ctx, key)
		case *mcp.ReadResourceRequest:
			return h.readResource(ctx, key, r.Params)
		case *mcp.ListPromptsRequest:
			return h.listPrompts(ctx, key)
		case *mcp.GetPromptRequest:
			return h.getPrompt(ctx, key, r.Params)
		}
		return next(ctx, method, req) // initialize, once the key has tools
	}
}

// definitions returns the key's tools, sorted by name.
func (h *Handler) definitions(key *Key) ([]tools.Definition, error) {
	defs, err := h.reg.Resolve(key.Tools)
	if err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("the tools of API key %q cannot be resolved: %v", key.Name, err)}
	}
	slices.SortFunc(defs, func(a, b tools.Definition) int { return strings.Compare(a.Name, b.Name) })
	return defs, nil
}

func (h *Handler) listTools(key *Key) (*mcp.ListToolsResult, error) {
	defs, err := h.definitions(key)
	if err != nil {
		return nil, err
	}
	out := &mcp.ListToolsResult{Tools: make([]*mcp.Tool, 0, len(defs))}
	for _, d := range defs {
		out.Tools = append(out.Tools, h.toolOf(d))
	}
	return out, nil
}

// toolOf is the MCP tool of a definition.
func (h *Handler) toolOf(d tools.Definition) *mcp.Tool {
	hints, _ := h.reg.Hints(d.Name)
	return &mcp.Tool{
		Name:        d.Name,
		Title:       hints.Title,
		Description: d.Description,
		InputSchema: json.RawMessage(d.Parameters),
		Annotations: &mcp.ToolAnnotations{
			Title:           hints.Title,
			ReadOnlyHint:    d.ReadOnly,
			DestructiveHint: hints.Destructive,
			IdempotentHint:  hints.Idempotent,
			OpenWorldHint:   hints.OpenWorld,
		},
	}
}

// unknownTool is the error of a tool the key was not given: the same whether or not
// another key has it, so a key learns nothing of the others' tools.
func unknownTool(name string) error {
	if len(name) > 128 {
		name = name[:128]
	}
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown tool %q: call one of the tools tools/list gives", name)}
}

func (h *Handler) callTool(ctx context.Context, key *Key, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	p := req.Params
	if p == nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "tools/call needs params"}
	}
	defs, err := h.definitions(key)
	if err != nil {
		return nil, err
	}
	if !slices.ContainsFunc(defs, func(d tools.Definition) bool { return d.Name == p.Name }) {
		return nil, unknownTool(p.Name)
	}
	if key.Admit != nil {
		done, err := key.Admit(ctx)
		if err != nil {
			return errorResult(err.Error()), nil
		}
		defer done()
	}
	release, err := h.acquire(ctx, key)
	if err != nil {
		return errorResult(fmt.Sprintf("tool %s was cancelled while waiting for one of the key's %d call slots", p.Name, cap(h.slotsOf(key)))), nil
	}
	defer release()

	ctx = tools.WithVia(tools.WithCaller(ctx, key.Name), tools.ViaMCP)
	if token := p.GetProgressToken(); token != nil && req.Session != nil {
		forward, stop := progressForwarder(ctx, req.Session, token)
		defer stop()
		ctx = tools.WithProgress(ctx, forward)
	}
	ctx, span := h.tracer.StartTool(ctx, p.Name, "", string(p.Arguments))
	res := h.reg.Call(ctx, p.Name, p.Arguments)
	span.End(res.IsError, res.Content)
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: res.Content}}, IsError: res.IsError}, nil
}

func errorResult(msg string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: msg}}, IsError: true}
}

// slotsOf returns the key's concurrency slots (one channel per key name and size).
func (h *Handler) slotsOf(key *Key) chan struct{} {
	size := key.MaxConcurrentCalls
	if size <= 0 {
		size = DefaultMaxConcurrentCalls
	}
	k := slotKey{key.Name, size}
	h.mu.Lock()
	defer h.mu.Unlock()
	ch, ok := h.slots[k]
	if !ok {
		ch = make(chan struct{}, size)
		h.slots[k] = ch
	}
	return ch
}

// acquire takes one of the key's slots, waiting within ctx.
func (h *Handler) acquire(ctx context.Context, key *Key) (func(), error) {
	ch := h.slotsOf(key)
	select {
	case ch <- struct{}{}:
		return func() { <-ch }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// progressQueue bounds the progress reports waiting to be sent to a client; a client too
// slow to take them loses the oldest intermediate ones, never the tool's connection.
const progressQueue = 16

// progressForwarder returns the progress function of one call, which queues reports for
// the client (never blocking the source), and stop, which sends what is queued and ends.
func progressForwarder(ctx context.Context, ss *mcp.ServerSession, token any) (func(tools.Progress), func()) {
	ch := make(chan tools.Progress, progressQueue)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for p := range ch {
			_ = ss.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token, Progress: p.Progress, Total: p.Total, Message: p.Message})
		}
	}()
	var mu sync.Mutex
	stopped := false
	forward := func(p tools.Progress) {
		mu.Lock()
		defer mu.Unlock()
		if stopped {
			return
		}
		select {
		case ch <- p:
		default: // full: this report is dropped, a later one supersedes it
		}
	}
	stop := func() {
		mu.Lock()
		stopped = true
		close(ch)
		mu.Unlock()
		<-done
	}
	return forward, stop
}

// sourceError is the JSON-RPC error of a source that could not answer.
func sourceError(what, source string, err error) error {
	return &jsonrpc.Error{Code: codeSourceFailed, Message: fmt.Sprintf("%s of tool source %q failed: %v", what, source, err)}
}

// ErrorBody is a JSON-RPC error response with a null id (JSON-RPC 2.0: the id of a request
// that could not be read): what the gateway answers a request refused before the SDK
// reads it (no key, a body over the bound).
func ErrorBody(code int64, message string) []byte {
	type wireError struct {
		Code    int64  `json:"code"`
		Message string `json:"message"`
	}
	b, _ := json.Marshal(struct {
		JSONRPC string    `json:"jsonrpc"`
		ID      *int      `json:"id"`
		Error   wireError `json:"error"`
	}{JSONRPC: "2.0", Error: wireError{Code: code, Message: message}})
	return b // a struct of strings and numbers always marshals
}

// CodeUnauthorized is the JSON-RPC error code of a request without a valid API key, and
// CodeTooLarge of a body over the bound.
const (
	CodeUnauthorized = codeUnauthorized
	CodeTooLarge     = -32004
)
