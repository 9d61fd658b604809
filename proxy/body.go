package proxy

import (
	"bytes"
	"crypto/subtle"
	"errors"
	"io"
	"strconv"

	"github.com/valyala/fasthttp"

	"github.com/agate-gateway/agate/translate"
	"github.com/agate-gateway/agate/upstream"
)

// Request bodies are streamed (fasthttp.Server.StreamRequestBody): the handler decides
// from the headers whether a body is read at all. Only an authenticated POST to the chat
// completions or Messages endpoints has its body read, up to server.max_body_bytes; any other body is
// discarded if small, or else left unread and the connection closed after the answer.
// A connection closed with a body unread is drained first (bounded), so that a client
// still writing its request reads the answer instead of a connection reset.

const (
	// maxDiscardedBody is the most a request that takes no body may carry and still keep
	// its connection open.
	maxDiscardedBody = 64 << 10
	// drainFactor times server.max_body_bytes bounds what is drained from a connection
	// closed with its request body unread.
	drainFactor = 4
)

// prefetched is how much of a body of known length fasthttp reads with the request head,
// before the handler runs, when it streams request bodies (its readBodyWithStreaming).
const prefetched = 8 << 10

var errBodyTooLarge = errors.New("request body too large")

// takesBody reports whether the request is one whose body the gateway reads.
func takesBody(ctx *fasthttp.RequestCtx) bool {
	if !ctx.IsPost() {
		return false
	}
	p := string(ctx.Path())
	return p == "/v1/chat/completions" || p == "/chat/completions" || p == "/v1/responses" || p == "/responses" ||
		p == messagesPath || p == countTokensPath || p == embeddingsPath || p == embeddingsPathV0
}

// readBody reads the request body, when the request takes one, into ctx.Request so that
// ctx.PostBody returns it. It answers the request itself and returns false when the key
// in the headers is not accepted (401), the body is too large (413) or cannot be read.
func (s *Server) readBody(ctx *fasthttp.RequestCtx, rid string) bool {
	stream := ctx.RequestBodyStream()
	cl := ctx.Request.Header.ContentLength()
	if cl == -1 && hasContentLength(ctx.Request.Header.RawHeaders()) {
		// Transfer-Encoding framed the body and Content-Length is ignored; such a request
		// may be an attempt at request smuggling, so the connection is closed after the
		// answer (RFC 9112 section 6.3).
		ctx.SetConnectionClose()
	}
	if stream == nil || cl == 0 {
		return true
	}
	if !takesBody(ctx) {
		if handled, ok := s.readMCPBody(ctx, stream); handled { // mcp.go
			return ok
		}
		if s.readAdminBody(ctx, stream) { // admin.go
			return true
		}
		if n, err := io.CopyN(io.Discard, stream, maxDiscardedBody+1); n > maxDiscardedBody || err != io.EOF {
			s.dropConn(ctx)
		}
		return true
	}
	if a := s.admit(ctx, rid); a != nil {
		s.reject(ctx, rid, *a)
		if a.Status == 401 {
			s.unauthenticatedToLedger() // ledger_refused.go
		}
		return false
	}
	if cl > 0 && cl <= prefetched {
		// fasthttp has read this body with the head, into the request's own buffer, which
		// holds it, not copied again, once the stream is closed.
		_ = ctx.Request.CloseBodyStream()
		if len(ctx.Request.Body()) == cl {
			return true
		}
		ctx.SetConnectionClose() // not reached with fasthttp's prefetch as it is (TestRequestReads)
		s.fail(ctx, rid, translate.Errorf("", "the request body could not be read"), "", "", "", "")
		return false
	}
	buf, err := s.readLimited(stream, cl)
	switch {
	case errors.Is(err, errBodyTooLarge):
		s.putBody(buf)
		s.reject(ctx, rid, s.tooLarge(rid))
		return false
	case err != nil:
		ctx.SetConnectionClose()
		s.putBody(buf)
		s.fail(ctx, rid, translate.Errorf("", "the request body could not be read"), "", "", "", "")
		return false
	}
	// The buffer read into becomes the request's body, not copied into it: the request's
	// own buffer comes back for the pool.
	_ = ctx.Request.CloseBodyStream() // read to its end: nothing is left to copy from it
	*buf = ctx.Request.SwapBody(*buf)
	s.putBody(buf)
	return true
}

// admit checks, from the headers alone, a request that takes a body: its key and its
// declared length. It returns the error to answer, or nil.
func (s *Server) admit(ctx *fasthttp.RequestCtx, rid string) *apiError {
	if _, err := requestKey(ctx, s.runtime()); err != nil {
		a := classify(err, rid)
		return &a
	}
	if ctx.Request.Header.ContentLength() > s.maxBody {
		a := s.tooLarge(rid)
		return &a
	}
	return nil
}

func (s *Server) tooLarge(rid string) apiError {
	return classify(errorf(ErrTooLarge, "the request body exceeds server.max_body_bytes (%d bytes)", s.maxBody), rid)
}

// requestKey returns the key of the request's headers under rt (rt.authenticateHeader).
// A connection remembers the credential header it last had accepted (connCredential):
// a later request on it that presents the very same header under the same runtime gets
// the same key without the digest and the comparison over all keys. So admit and the
// handler check a request once between them, and a keep-alive client once per
// connection; a reload, which makes a new runtime, checks again.
func requestKey(ctx *fasthttp.RequestCtx, rt *runtime) (*apiKey, error) {
	c, ok := ctx.Conn().(*clientConn)
	if !ok || rt.open {
		return rt.authenticateHeader(&ctx.Request.Header)
	}
	id := ctx.ID()
	if id != 0 && c.cred.admitted == id && c.cred.rt == rt && c.cred.key != nil {
		// The same request, checked by admit: its headers have not changed since.
		return c.cred.key, nil
	}
	which, value := credentialHeader(&ctx.Request.Header)
	if k := c.cred.lookup(rt, which, value); k != nil {
		c.cred.admitted = id
		return k, nil
	}
	key, err := rt.authenticateHeader(&ctx.Request.Header)
	if err == nil {
		c.cred.keep(rt, which, value, key)
		c.cred.admitted = id
	}
	return key, err
}

// credentialHeader returns the header rt.authenticateHeader takes the key from, as a
// letter ('a' for Authorization, 'x' for X-Api-Key; 0 for none), and its value.
func credentialHeader(h *fasthttp.RequestHeader) (byte, []byte) {
	if v := peekHeader(h, headerAuthorization); len(v) > 0 {
		return 'a', v
	}
	if v := peekHeader(h, headerAPIKey); len(v) > 0 {
		return 'x', v
	}
	return 0, nil
}

// maxKeptCredential bounds the header value a connection keeps.
const maxKeptCredential = 512

// lookup returns the kept key if the header which has value under rt, else nil. The
// value is compared in constant time: a hit only ever returns the key the full check
// returned for the same bytes.
func (c *connCredential) lookup(rt *runtime, which byte, value []byte) *apiKey {
	if c.key == nil || c.rt != rt || c.which != which || which == 0 ||
		subtle.ConstantTimeCompare(value, c.value) != 1 {
		return nil
	}
	return c.key
}

// keep remembers that the header which, with value, named key under rt.
func (c *connCredential) keep(rt *runtime, which byte, value []byte, key *apiKey) {
	if which == 0 || len(value) > maxKeptCredential {
		*c = connCredential{value: c.value[:0]}
		return
	}
	*c = connCredential{rt: rt, which: which, value: append(c.value[:0], value...), key: key}
}

// reject answers a request whose body is left unread, counts it, and closes the
// connection after draining it.
func (s *Server) reject(ctx *fasthttp.RequestCtx, rid string, a apiError) {
	writeError(ctx, a)
	s.metrics.Requests.WithLabelValues("", "", "", strconv.Itoa(a.Status), "", apiLabel(ctx.Path())).Inc()
	s.logger.Info("request rejected", "request_id", rid, "status", a.Status, "error", clip(a.Message, maxLoggedMessage))
	s.dropConn(ctx)
}

// dropConn closes the connection after the answer, draining what the client still sends.
func (s *Server) dropConn(ctx *fasthttp.RequestCtx) {
	ctx.SetConnectionClose()
	if c, ok := ctx.Conn().(*clientConn); ok {
		c.drainOnClose(int64(drainFactor) * int64(s.maxBody))
	}
}

// expect answers "Expect: 100-continue" (fasthttp.Server.ExpectHandler): a request the
// gateway would reject from its headers gets its final answer instead of 100 Continue,
// so the client never sends the body.
func (s *Server) expect(ctx *fasthttp.RequestCtx) int {
	if !takesBody(ctx) {
		return fasthttp.StatusContinue
	}
	rid := requestID(peekHeader(&ctx.Request.Header, headerRequestID))
	a := s.admit(ctx, rid)
	if a == nil {
		return fasthttp.StatusContinue
	}
	ctx.Response.Header.Set("X-Request-Id", rid)
	s.reject(ctx, rid, *a)
	if a.Status == 401 {
		s.unauthenticatedToLedger() // ledger_refused.go
	}
	return a.Status
}

// readLimited reads a body of declared length cl (-1: chunked) of at most s.maxBody bytes
// into a scratch buffer, to be returned with putBody.
func (s *Server) readLimited(r io.Reader, cl int) (*[]byte, error) {
	buf := s.getBody()
	b := (*buf)[:0]
	if cl > 0 {
		if cap(b) < cl {
			b = make([]byte, cl)
		}
		b = b[:cl]
		_, err := io.ReadFull(r, b)
		*buf = b
		return buf, err
	}
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if len(b) > s.maxBody {
			*buf = b
			return buf, errBodyTooLarge
		}
		if err == io.EOF {
			*buf = b
			return buf, nil
		}
		if err != nil {
			*buf = b
			return buf, err
		}
	}
}

func (s *Server) getBody() *[]byte {
	if b, ok := s.bodies.Get().(*[]byte); ok {
		return b
	}
	b := make([]byte, 0, 16<<10)
	return &b
}

// putBody returns a scratch buffer; large ones are left to the garbage collector. The
// pool is shared with the upstream request bodies (upstream.Buffer), under one bound.
func (s *Server) putBody(b *[]byte) {
	if cap(*b) <= upstream.MaxPooledBody {
		*b = (*b)[:0]
		s.bodies.Put(b)
	}
}

// hasContentLength reports whether a raw request head has a Content-Length field.
func hasContentLength(raw []byte) bool {
	const name = "content-length:"
	for len(raw) > 0 {
		line := raw
		if i := bytes.IndexByte(raw, '\n'); i >= 0 {
			line, raw = raw[:i], raw[i+1:]
		} else {
			raw = nil
		}
		if len(line) >= len(name) && bytes.EqualFold(line[:len(name)], []byte(name)) {
			return true
		}
	}
	return false
}
