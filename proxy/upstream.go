package proxy

import (
	"context"
	"errors"
	"fmt"
	"github.com/agate-gateway/agate/translate/anthropic"
	"github.com/agate-gateway/agate/translate/gemini"
	"github.com/agate-gateway/agate/translate/openai"
	"github.com/agate-gateway/agate/translate/responses"
	"io"
	"net"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agate-gateway/agate/config"
	"github.com/agate-gateway/agate/translate"
	"github.com/valyala/fasthttp"
)

// backend is one configured upstream with its own connection pool.
type backend struct {
	name     string
	typ      string
	cfg      config.Backend
	provider translate.Provider
	// client holds the connections to the one host of baseURL; nil for a localProvider.
	client   *fasthttp.HostClient
	baseURL  string
	timeouts config.Timeouts
	retries  config.Retries
	// uri is baseURL parsed once; each request's URI starts as a copy of it (newRequest),
	// its path basePath (without a trailing slash) followed by the provider's.
	uri      fasthttp.URI
	basePath string
	// first go upstream with every request before the request's own headers: the
	// provider's (its Headers, asked once) and Accept-Encoding: identity (a compressed
	// body would otherwise need decoding, bounded: see decodedBody, which still decodes
	// an upstream that ignores it). last, backends.<name>.headers in name order, go after
	// them and override them. Their names are in canonical form.
	first, last []canonicalHeader
	// head is the head every request starts from (newRequest copies it): the method,
	// Content-Type, first and then last. Built once by newBackend and only read after.
	head *fasthttp.RequestHeader
	// betas is allowed_betas: the client anthropic-beta names forwarded (betas.go).
	betas betaPolicy
}

// canonicalHeader is a header whose name is in fasthttp's canonical form.
type canonicalHeader struct{ name, value []byte }

// canonicalHeaders returns hs with their names in canonical form.
func canonicalHeaders(hs []translate.Header) []canonicalHeader {
	out := make([]canonicalHeader, len(hs))
	for i, h := range hs {
		out[i] = canonicalHeader{fasthttp.AppendNormalizedHeaderKey(nil, h.Name), []byte(h.Value)}
	}
	return out
}

// providerFor returns the provider of a backend type (config.Backend.Type, validated by
// config): the one table from type to provider. Adding a backend type is a row here and
// its name in config's list.
func providerFor(typ string) (translate.Provider, bool) {
	switch typ {
	case "anthropic":
		return anthropic.New(), true
	case "gemini":
		return gemini.New(), true
	case "responses":
		return responses.New(), true
	case "openai":
		return openai.New(), true
	case "mock":
		return mockProvider{}, true
	}
	return nil, false
}

// newBackend builds the backend of bc, a backend of a validated, defaulted config (see
// config.Parse): its values are used as they are.
func newBackend(name string, bc config.Backend) (*backend, error) {
	b := &backend{name: name, typ: bc.Type, cfg: bc, timeouts: bc.Timeouts, retries: bc.Retries, betas: newBetaPolicy(bc)}
	p, ok := providerFor(bc.Type)
	if !ok {
		return nil, fmt.Errorf("backends.%s.type: unknown backend type %q", name, bc.Type)
	}
	b.provider = p
	if _, local := p.(localProvider); local {
		return b, nil
	}
	b.baseURL = strings.TrimRight(bc.BaseURL, "/")
	if err := b.uri.Parse(nil, []byte(b.baseURL)); err != nil {
		return nil, fmt.Errorf("backends.%s.base_url: %w", name, err)
	}
	b.uri.DisablePathNormalizing = true // the provider's paths go as they are written
	b.basePath = strings.TrimRight(string(b.uri.PathOriginal()), "/")
	b.first = canonicalHeaders(append(p.Headers(bc.APIKey), translate.Header{Name: "Accept-Encoding", Value: "identity"}))
	last := make([]translate.Header, 0, len(bc.Headers))
	for k, v := range bc.Headers {
		last = append(last, translate.Header{Name: k, Value: v})
	}
	slices.SortFunc(last, func(a, b translate.Header) int { return strings.Compare(a.Name, b.Name) })
	b.last = canonicalHeaders(last)
	b.head = &fasthttp.RequestHeader{}
	b.head.SetMethod("POST")
	b.head.SetContentType("application/json")
	for _, h := range slices.Concat(b.first, b.last) {
		b.head.SetCanonical(h.name, h.value)
	}
	connect, idle := b.timeouts.Connect, b.timeouts.StreamIdle
	// A backend has one host, so its client is a HostClient: a Client would look the
	// host up in its map on every request to find the same one.
	tls := string(b.uri.Scheme()) == "https" // the scheme is lower-cased, http or https (config)
	b.client = &fasthttp.HostClient{
		Addr:     fasthttp.AddMissingPort(string(b.uri.Host()), tls),
		IsTLS:    tls,
		Name:     "agate",
		MaxConns: bc.MaxConns,
		// With every connection busy, wait this long for one, then ErrNoFreeConns (503).
		MaxConnWaitTimeout:  b.timeouts.PoolWait,
		MaxIdleConnDuration: 90 * time.Second,
		// A streamed answer is read as it arrives (send sets Response.StreamBody); any
		// other body is read whole by fasthttp, up to the gateway's bound, before send
		// returns: no body stream and no cancellation hook to set up and tear down.
		MaxResponseBodySize: maxResponseBytes,
		// fasthttp retries nothing itself (see send: it cannot tell a connection that
		// failed before the answer from a body cut short).
		MaxIdemponentCallAttempts: 1,
		DisablePathNormalizing:    true,
		// The read buffer bounds the response head (providers send 1-2 KiB) and is held
		// for a stream's whole life, so it is 8 KiB, not more; a body is read through it.
		// The write buffer is taken only while a request is written: a request body of up
		// to 16 KiB goes out with one system call.
		ReadBufferSize:  8 << 10,
		WriteBufferSize: 16 << 10,
		Dial: func(addr string) (net.Conn, error) {
			c, err := fasthttp.DialTimeout(addr, connect)
			if err != nil {
				return nil, err
			}
			return &idleConn{Conn: c, idle: idle, slack: (connect + b.timeouts.Header) / 16}, nil
		},
	}
	return b, nil
}

func (b *backend) sameConfig(bc config.Backend) bool { return reflect.DeepEqual(b.cfg, bc) }

// idleConn bounds the silence between reads of an upstream connection: the response-header
// deadline fasthttp sets applies to the first read after it is set, and every later read
// (the streamed body) gets the stream-idle timeout afresh.
//
// Moving a deadline costs a timer update in the runtime's poller, once per read of a
// stream. So a read moves it only when the last move is more than idle/16 old: the
// deadline then lies between 15/16 of idle and idle after the last read, never later.
// Likewise the read and write deadlines fasthttp sets before each request (now plus the
// connect and header timeouts) leave the one in force when that is at most slack
// earlier, never later: on a busy connection most requests set none.
type idleConn struct {
	net.Conn
	idle time.Duration
	// slack is how much earlier than asked a deadline fasthttp sets may stay in force.
	slack   time.Duration
	pending time.Time // a deadline set by the client for the next read
	// moved is when the idle deadline was last set; zero means it is not in force (the
	// client's deadline is, or none).
	moved time.Time
	// rd and wd are the read and write deadlines in force; zero: none.
	rd, wd time.Time
}

// keeps reports whether the deadline in force, cur, may stand for t: both are set and
// cur is not later than t, nor more than slack earlier.
func (c *idleConn) keeps(cur, t time.Time) bool {
	return !cur.IsZero() && !t.IsZero() && !cur.After(t) && t.Sub(cur) <= c.slack
}

func (c *idleConn) SetReadDeadline(t time.Time) error {
	c.pending, c.moved = t, time.Time{}
	if c.keeps(c.rd, t) {
		return nil
	}
	c.rd = t
	return c.Conn.SetReadDeadline(t)
}

func (c *idleConn) SetWriteDeadline(t time.Time) error {
	if c.keeps(c.wd, t) {
		return nil
	}
	c.wd = t
	return c.Conn.SetWriteDeadline(t)
}

func (c *idleConn) SetDeadline(t time.Time) error {
	c.pending, c.moved, c.rd, c.wd = t, time.Time{}, t, t
	return c.Conn.SetDeadline(t)
}

func (c *idleConn) Read(p []byte) (int, error) {
	if !c.pending.IsZero() {
		c.pending = time.Time{} // header phase: keep the client's deadline for this read
	} else if c.moved.IsZero() || time.Since(c.moved) > c.idle/16 {
		// time.Since reads only the monotonic clock (moved has a reading of it), half of
		// what time.Now costs: most reads of a stream stop here.
		now := time.Now()
		c.rd = now.Add(c.idle)
		_ = c.Conn.SetReadDeadline(c.rd)
		c.moved = now
	}
	return c.Conn.Read(p)
}

// exchange is one upstream HTTP exchange whose response headers have arrived with a 2xx
// status. A streamed body may still be arriving, any other was read whole; Close
// releases it.
type exchange struct {
	resp *fasthttp.Response
	// stop removes the hook that closes a streamed body when the context ends; it
	// reports true if the hook had not run (bodyRead for a body read whole: no hook).
	stop func() bool
	// closing is done once that hook has closed the body.
	closing sync.WaitGroup
}

// newRequest writes into req, a reset request, the POST of body to path (which may carry
// a query, added after the base URL's) on the backend, with the backend's headers around
// headers (see first and last). It parses nothing: the URI is a copy of the parsed base
// URL and the head a copy of the backend's (head), whose header names were made
// canonical once.
func (b *backend) newRequest(req *fasthttp.Request, path string, headers []translate.Header, body []byte) {
	b.head.CopyTo(&req.Header) // copied, not set one by one: nothing to normalize or check
	req.SetURI(&b.uri)         // a copy, taken as parsed: the request has no URI of its own to parse
	u := req.URI()
	var room [256]byte // on the stack: the setters copy it
	p, query, _ := strings.Cut(path, "?")
	u.SetPathBytes(append(append(room[:0], b.basePath...), p...))
	if query != "" { // after the base URL's own query, if it has one
		q := append(room[:0], u.QueryString()...)
		if len(q) > 0 {
			q = append(q, '&')
		}
		u.SetQueryStringBytes(append(q, query...))
	}
	if len(headers) > 0 {
		for _, h := range headers {
			req.Header.Set(h.Name, h.Value)
		}
		for _, h := range b.last { // set again: they override the request's own
			req.Header.SetCanonical(h.name, h.value)
		}
	}
	req.SetBodyRaw(body)
}

// send performs one attempt: it posts body to the backend with headers (newRequest) and
// waits for response headers, and unless stream is set for the whole response body. A
// non-2xx status is read (bounded) and returned as a *translate.UpstreamError. ctx
// cancellation interrupts a body being streamed. The exchange is x, which the caller
// provides (no allocation) and must have closed if it held one before.
func (b *backend) send(ctx context.Context, path string, headers []translate.Header, body []byte, stream bool, x *exchange) (*exchange, error) {
	req := fasthttp.AcquireRequest()
	defer fasthttp.ReleaseRequest(req)
	b.newRequest(req, path, headers, body)
	resp := fasthttp.AcquireResponse()
	if err := ctx.Err(); err != nil {
		fasthttp.ReleaseResponse(resp)
		return nil, err
	}
	do := func() error {
		resp.StreamBody = stream
		return b.client.DoTimeout(req, resp, b.timeouts.Connect+b.timeouts.Header)
	}
	err := do()
	if err != nil && beforeAnswer(err, resp) && ctx.Err() == nil {
		// A pooled keep-alive connection the upstream closed while idle fails before any
		// response byte; that one case is retried on a fresh connection at once. Every
		// other failure is left to the gateway's own retries, which back off.
		resp.Reset()
		err = do()
	}
	if err != nil {
		fasthttp.ReleaseResponse(resp)
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if errors.Is(err, fasthttp.ErrBodyTooLarge) {
			return nil, tooLargeAnswer(b.name)
		}
		return nil, transportError(b.name, err)
	}
	*x = exchange{resp: resp, stop: bodyRead}
	if stream {
		x.closing.Add(1)
		x.stop = context.AfterFunc(ctx, func() {
			resp.CloseBodyStream()
			x.closing.Done()
		})
	}
	if code := resp.StatusCode(); code < 200 || code > 299 {
		raw, _ := x.readAll(maxErrorBody)
		ue := b.provider.DecodeError(code, raw)
		if ue.RetryAfter == 0 {
			ue.RetryAfter = parseRetryAfter(resp.Header.Peek("Retry-After"))
		}
		if code == 529 {
			ue.Retryable = true
		}
		x.Close()
		return nil, ue
	}
	return x, nil
}

// beforeAnswer reports whether a failed exchange failed before the upstream answered: the
// connection ended (fasthttp reports an end at the first byte as ErrConnectionClosed or
// io.EOF) and no response head announcing a body was read. A body read whole and cut at a
// chunk boundary also ends in io.EOF; its head was read, and the upstream may have done
// the work, so it is not sent again.
func beforeAnswer(err error, resp *fasthttp.Response) bool {
	return (errors.Is(err, fasthttp.ErrConnectionClosed) || errors.Is(err, io.EOF)) && resp.Header.ContentLength() == 0
}

// body returns the streamed response body.
func (x *exchange) body() io.Reader { return x.resp.BodyStream() }

// maxErrorBody bounds the part of an error answer's body that is read and decoded.
const maxErrorBody = 1 << 20

// bodyRead is the stop of an exchange whose body was read whole: there is no
// cancellation hook to remove.
func bodyRead() bool { return true }

// readAll reads the whole body, up to limit bytes.
func (x *exchange) readAll(limit int64) ([]byte, error) {
	if s := x.resp.BodyStream(); s != nil {
		return io.ReadAll(io.LimitReader(s, limit))
	}
	return x.resp.Body()[:min(int64(len(x.resp.Body())), limit)], nil
}

// Close releases the exchange. It is safe to call once, after the last read.
func (x *exchange) Close() {
	if x.stop() {
		x.resp.CloseBodyStream()
	} else {
		x.closing.Wait()
	}
	fasthttp.ReleaseResponse(x.resp)
}

// transportError wraps a connection-level failure as a retryable 502 (504 on timeout, 503
// with Retry-After when the pool had no free connection within timeouts.pool_wait).
func transportError(backend string, err error) *translate.UpstreamError {
	if errors.Is(err, fasthttp.ErrNoFreeConns) {
		return &translate.UpstreamError{Status: 503, Type: "api_error", Code: "upstream_busy", Retryable: true, RetryAfter: time.Second,
			Message: "every connection to the upstream of backend " + backend + " is busy (max_conns); retry later"}
	}
	status, msg := 502, "could not reach the upstream of backend "+backend
	var ne net.Error
	if errors.Is(err, fasthttp.ErrTimeout) || (errors.As(err, &ne) && ne.Timeout()) {
		status, msg = 504, "the upstream of backend "+backend+" timed out"
	}
	return &translate.UpstreamError{Status: status, Type: "api_error", Message: msg, Retryable: true}
}

func parseRetryAfter(v []byte) time.Duration {
	if len(v) == 0 {
		return 0
	}
	if n, err := strconv.Atoi(strings.TrimSpace(string(v))); err == nil && n >= 0 {
		return time.Duration(n) * time.Second
	}
	if t, err := time.Parse(time.RFC1123, string(v)); err == nil {
		if d := time.Until(t); d > 0 {
			return d
		}
	}
	return 0
}
