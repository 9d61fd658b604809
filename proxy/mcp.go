package proxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/fasthttpadaptor"

	"github.com/agate-gateway/agate/limits"
	"github.com/agate-gateway/agate/mcpserve"
)

// This file mounts the MCP endpoint (mcp.enabled; package mcpserve) on the main listener:
// the key is checked here, from the headers, as every route checks it (requestKey: the
// configured and database keys), the body is read here within mcp.max_message_bytes, and
// the request then goes to the SDK's net/http handler through fasthttpadaptor, which
// streams (SSE answers, the GET stream) once the handler flushes. mcp.enabled and
// mcp.path take effect at start; the key's tools and limits are read per request, so a
// reload changes them.

// mcpEndpoint is the running MCP endpoint.
type mcpEndpoint struct {
	path     string
	maxBytes int
	handler  *mcpserve.Handler
	// streams parents the GET streams, which never end on their own: Shutdown cancels it
	// first, so that they do not hold the graceful shutdown. stopStreams cancels it.
	streams     context.Context
	stopStreams context.CancelFunc
}

// openMCP builds the endpoint when mcp.enabled is set and a tool registry that can serve
// it was given.
func (s *Server) openMCP(opts Options) error {
	c := opts.Config.MCP
	if !c.Enabled {
		return nil
	}
	reg, ok := opts.Tools.(mcpserve.Registry)
	if !ok {
		return errors.New("mcp.enabled: the MCP endpoint serves the tool sources of tools:, and none are configured")
	}
	e := &mcpEndpoint{path: c.Path, maxBytes: c.MaxMessageBytes}
	e.streams, e.stopStreams = context.WithCancel(s.baseCtx)
	e.handler = mcpserve.New(mcpserve.Options{
		Registry:           reg,
		Tracer:             s.tracer,
		Logger:             s.logger.With("component", "mcp"),
		MaxMessageBytes:    int64(c.MaxMessageBytes),
		SessionIdleTimeout: c.SessionIdleTimeout,
	})
	s.mcp = e
	return nil
}

// closeMCP ends the endpoint's sessions and streams (Shutdown, before the connections drain).
func (s *Server) closeMCP() {
	if s.mcp != nil {
		s.mcp.stopStreams()
		s.mcp.handler.Close()
	}
}

// isMCP reports whether the request is the MCP endpoint's.
func (s *Server) isMCP(ctx *fasthttp.RequestCtx) bool {
	return s.mcp != nil && string(ctx.Path()) == s.mcp.path
}

// readMCPBody reads an MCP request's body for readBody: handled reports the request is the
// endpoint's, ok that it may go on. A request without a valid key is answered 401 before
// its body is read, and a body over mcp.max_message_bytes 413; both as JSON-RPC errors.
func (s *Server) readMCPBody(ctx *fasthttp.RequestCtx, stream io.Reader) (handled, ok bool) {
	if !s.isMCP(ctx) {
		return false, false
	}
	if _, err := requestKey(ctx, s.runtime()); err != nil {
		ctx.SetConnectionClose() // the body is not read
		writeMCPError(ctx, http.StatusUnauthorized, mcpserve.CodeUnauthorized, err.Error())
		return true, false
	}
	b, err := io.ReadAll(io.LimitReader(stream, int64(s.mcp.maxBytes)+1))
	switch {
	case len(b) > s.mcp.maxBytes:
		ctx.SetConnectionClose()
		writeMCPError(ctx, http.StatusRequestEntityTooLarge, mcpserve.CodeTooLarge,
			fmt.Sprintf("the message exceeds mcp.max_message_bytes (%d bytes)", s.mcp.maxBytes))
		return true, false
	case err != nil:
		ctx.SetConnectionClose()
		writeMCPError(ctx, http.StatusBadRequest, -32700, "the request body could not be read")
		return true, false
	}
	ctx.Request.SetBody(b)
	return true, true
}

// handleMCP serves a request of the MCP endpoint.
func (s *Server) handleMCP(ctx *fasthttp.RequestCtx) {
	key, err := requestKey(ctx, s.runtime())
	if err != nil {
		writeMCPError(ctx, http.StatusUnauthorized, mcpserve.CodeUnauthorized, err.Error())
		return
	}
	k := &mcpserve.Key{Name: key.name, Tools: key.tools, MaxConcurrentCalls: key.maxConcurrentCalls, Admit: s.mcpAdmit(key)}
	// Not the RequestCtx as the request's context: fasthttp recycles it once the handler
	// returns, and a session outlives the request that opened it.
	base := s.baseCtx
	if ctx.IsGet() {
		base = s.mcp.streams
	}
	// The request's context ends when its client leaves (watchGone), so that the SDK lets
	// go of the stream and the client may resume it; the session and its calls live on.
	reqCtx, cancel := context.WithCancel(base)
	watchGone(ctx.Conn(), cancel)
	fasthttpadaptor.NewFastHTTPHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer cancel()
		s.mcp.handler.Serve(w, r.WithContext(reqCtx), k)
	}))(ctx)
}

func writeMCPError(ctx *fasthttp.RequestCtx, status int, code int64, msg string) {
	if status == http.StatusUnauthorized {
		ctx.Response.Header.Set("Www-Authenticate", `Bearer realm="agate"`)
	}
	ctx.SetStatusCode(status)
	ctx.SetContentType("application/json")
	ctx.SetBody(mcpserve.ErrorBody(code, msg))
}

// mcpAdmit returns the admission of one tool call of key through the endpoint: the key's
// request rate, concurrency and budget (no tokens are reserved or charged: a tool call
// uses none), as a chat request of the key is admitted. Nil when the key has no limits.
func (s *Server) mcpAdmit(key *apiKey) func(context.Context) (func(), error) {
	if !key.limited {
		return nil
	}
	base := limits.Request{Key: key.name, KeyRate: key.rate, Budget: key.budget}
	if !base.Limited() {
		return nil
	}
	return func(context.Context) (func(), error) {
		req := base
		var adm limits.Admission
		// The limiter bounds its own wait (state.timeout); baseCtx ends it at a forced shutdown.
		if err := s.limiter.Admit(s.baseCtx, &req, &adm); err != nil {
			if s.onErrorDeny {
				return nil, errors.New("rate limits cannot be checked right now (the state store did not answer); try again")
			}
			return func() {}, nil // on_error allow: admitted unlimited, nothing held
		}
		if d := adm.Denied; d != limits.NoLimit {
			s.metrics.RateLimitRejections.WithLabelValues(key.name, "", d.String()).Inc()
			return nil, fmt.Errorf("this API key's %s limit is reached; try again in %s", d, roughly(adm.RetryAfter))
		}
		return func() { _ = s.limiter.Finish(s.baseCtx, &req, &adm, limits.Usage{}) }, nil
	}
}
