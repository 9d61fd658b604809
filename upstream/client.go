package upstream

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/agate-gateway/agate/translate"
)

// Backend is what a Client needs of one configured backend. proxy maps it from
// config.Backend, whose defaults and validation it has been through: New uses the values
// as they are.
type Backend struct {
	// Name names the backend in errors ("the upstream of backend <Name>").
	Name string
	// BaseURL is the provider root, http or https; each request's path is the provider's
	// (translate.Provider.Path) after the base URL's own.
	BaseURL string
	// APIKey is the upstream credential the provider's Headers carry; empty sends none.
	APIKey string
	// Headers go with every request after the provider's and the request's own, replacing
	// any of the same name.
	Headers map[string]string
	// MaxConns caps the pooled connections to the upstream.
	MaxConns int
	Timeouts Timeouts
	// Signer, when set, signs every request just before it is sent (a cloud backend's
	// credentials); nil sends the headers as they are.
	Signer Signer
	// Framing is how the upstream frames a streamed answer (Client.Pump); the zero
	// value is SSE.
	Framing Framing
	// MaxResponseBytes bounds a non-streamed answer's body, decoded: one over it is a 502
	// naming the bound, never a truncated answer. 0 is DefaultMaxResponseBytes (64 MiB).
	MaxResponseBytes int
}

// Timeouts bound an exchange. Each bounds what its name says, and no more.
type Timeouts struct {
	// Connect bounds dialing a new connection (a pooled one needs none).
	Connect time.Duration
	// Header bounds the wait for the response head, counted from when the request was
	// written: a silent upstream fails after Header, whatever dialing took. On a reused
	// connection the wait may end up to Header/16 early (idleConn keeps a deadline in
	// force that is that close), never late.
	Header time.Duration
	// StreamIdle bounds the silence between two reads of a streamed body (idleConn).
	StreamIdle time.Duration
	// PoolWait bounds the wait for a free connection when MaxConns are busy.
	PoolWait time.Duration
}

// Client sends requests to one backend's upstream over its own connection pool. Safe
// for concurrent use; built once by New and only read after.
type Client struct {
	name     string
	provider translate.Provider
	timeouts Timeouts
	signer   Signer
	framing  Framing
	// maxBody bounds a non-streamed answer's body (Backend.MaxResponseBytes, defaulted).
	maxBody int
	// hc holds the connections to the one host of the base URL.
	hc *fasthttp.HostClient
	// uri is the base URL parsed once; each request's URI starts as a copy of it
	// (newRequest), its path basePath (without a trailing slash) followed by the
	// provider's.
	uri      fasthttp.URI
	basePath string
	// last are Backend.Headers in name order, their names in canonical form: set on the
	// head, and again after a request's own headers, which they override.
	last []canonicalHeader
	// head is the head every request starts from (newRequest copies it): the method,
	// Content-Type, the provider's headers (its Headers, asked once) and Accept-Encoding:
	// identity (a compressed body would otherwise need decoding, bounded: see
	// DecodedBody, which still decodes an upstream that ignores it), then last.
	head *fasthttp.RequestHeader
	// held are the headers head holds, as they end there (a backend header's value
	// where it overrides the provider's): a request's own header equal to one of them
	// (redundant) changes no byte of the request (plainRequest).
	held []heldHeader
	// plain keeps requests that hold head and uri, for the requests that add nothing to
	// them (plainRequest).
	plain sync.Pool
}

// canonicalHeader is a header whose name is in fasthttp's canonical form.
type canonicalHeader struct{ name, value []byte }

// heldHeader is a header the head holds (Client.held): its name in lower case, as the
// gateway's code writes the headers it sends, and its value.
type heldHeader struct{ lower, value string }

// canonicalHeaders returns hs with their names in canonical form.
func canonicalHeaders(hs []translate.Header) []canonicalHeader {
	out := make([]canonicalHeader, len(hs))
	for i, h := range hs {
		out[i] = canonicalHeader{fasthttp.AppendNormalizedHeaderKey(nil, h.Name), []byte(h.Value)}
	}
	return out
}

// New returns the client of backend b, whose requests p phrases and whose error answers
// p decodes. The error names a base URL that does not parse.
func New(b Backend, p translate.Provider) (*Client, error) {
	c := &Client{name: b.Name, provider: p, timeouts: b.Timeouts, signer: b.Signer, framing: b.Framing, maxBody: b.MaxResponseBytes}
	if c.maxBody <= 0 {
		c.maxBody = DefaultMaxResponseBytes
	}
	if err := c.uri.Parse(nil, []byte(strings.TrimRight(b.BaseURL, "/"))); err != nil {
		return nil, fmt.Errorf("backends.%s.base_url: %w", b.Name, err)
	}
	c.uri.DisablePathNormalizing = true // the provider's paths go as they are written
	c.basePath = strings.TrimRight(string(c.uri.PathOriginal()), "/")
	first := canonicalHeaders(append(p.Headers(b.APIKey), translate.Header{Name: "Accept-Encoding", Value: "identity"}))
	last := make([]translate.Header, 0, len(b.Headers))
	for k, v := range b.Headers {
		last = append(last, translate.Header{Name: k, Value: v})
	}
	slices.SortFunc(last, func(a, b translate.Header) int { return strings.Compare(a.Name, b.Name) })
	c.last = canonicalHeaders(last)
	c.head = &fasthttp.RequestHeader{}
	c.head.SetMethod("POST")
	c.head.SetContentType("application/json")
	for _, h := range slices.Concat(first, c.last) {
		c.head.SetCanonical(h.name, h.value)
	}
	set := slices.Concat(first, c.last)
	for i := len(set) - 1; i >= 0; i-- { // the value set last is the one the head holds
		h := set[i]
		if !slices.ContainsFunc(c.held, func(o heldHeader) bool { return strings.EqualFold(o.lower, string(h.name)) }) {
			c.held = append(c.held, heldHeader{strings.ToLower(string(h.name)), string(h.value)})
		}
	}
	connect, idle := b.Timeouts.Connect, b.Timeouts.StreamIdle
	slack := b.Timeouts.Header / 16
	// A backend has one host, so its client is a HostClient: a Client would look the
	// host up in its map on every request to find the same one.
	tls := string(c.uri.Scheme()) == "https" // the scheme is lower-cased, http or https (config)
	c.hc = &fasthttp.HostClient{
		Addr:     fasthttp.AddMissingPort(string(c.uri.Host()), tls),
		IsTLS:    tls,
		Name:     "agate",
		MaxConns: b.MaxConns,
		// With every connection busy, wait this long for one, then ErrNoFreeConns (503).
		MaxConnWaitTimeout: b.Timeouts.PoolWait,
		// The response head is awaited Header after the request was written (fasthttp
		// sets the read deadline then); Send's overall deadline (Connect+Header from its
		// start) is only the backstop of a slow write.
		ReadTimeout:         b.Timeouts.Header,
		MaxIdleConnDuration: 90 * time.Second,
		// A streamed answer is read as it arrives (Send sets Response.StreamBody); any
		// other body is read whole by fasthttp, up to the gateway's bound, before Send
		// returns: no body stream and no cancellation hook to set up and tear down.
		MaxResponseBodySize: c.maxBody,
		// fasthttp retries nothing itself (see Send: it cannot tell a connection that
		// failed before the answer from a body cut short).
		MaxIdemponentCallAttempts: 1,
		DisablePathNormalizing:    true,
		// The response's header names are kept as they came: fasthttp would check and
		// case-fold every name of every response head (about 1.1 K instructions a
		// response, #55), and the gateway reads two headers by name, which
		// responseHeader finds in any case. Content-Type, Content-Length,
		// Content-Encoding, Transfer-Encoding and Connection are read by fasthttp in any
		// case all the same. The request's names are unaffected.
		DisableHeaderNamesNormalizing: true,
		// The read buffer bounds the response head (providers send 1-2 KiB) and is held
		// for a stream's whole life, so it is 8 KiB, not more; a body is read through it.
		// The write buffer is taken only while a request is written: a request body of up
		// to 16 KiB goes out with one system call.
		ReadBufferSize:  8 << 10,
		WriteBufferSize: 16 << 10,
		Dial: func(addr string) (net.Conn, error) {
			conn, err := dialApart(addr, connect)
			if err != nil {
				return nil, err
			}
			return &idleConn{Conn: conn, idle: idle, slack: slack}, nil
		},
	}
	return c, nil
}

// newRequest writes into req, a reset request, the POST of body to path (which may carry
// a query, added after the base URL's) on the backend, with the backend's headers around
// headers (see head and last). It parses nothing: the URI is a copy of the parsed base
// URL and the head a copy of the client's, whose header names were made canonical once.
func (c *Client) newRequest(req *fasthttp.Request, path string, headers []translate.Header, body []byte) {
	c.head.CopyTo(&req.Header) // copied, not set one by one: nothing to normalize or check
	req.SetURI(&c.uri)         // a copy, taken as parsed: the request has no URI of its own to parse
	u := req.URI()
	var room [256]byte // on the stack: the setters copy it
	p, query, _ := strings.Cut(path, "?")
	u.SetPathBytes(append(append(room[:0], c.basePath...), p...))
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
		for _, h := range c.last { // set again: they override the request's own
			req.Header.SetCanonical(h.name, h.value)
		}
	}
	req.SetBodyRaw(body)
}

// Send performs one attempt: it posts body to path on the backend with headers
// (newRequest) and waits for the response head, and unless stream is set for the whole
// response body. body is written before Send returns. A non-2xx status is read (bounded)
// and returned as the provider's *translate.UpstreamError. Ending ctx interrupts a body
// being streamed. The exchange is x, which the caller provides (no allocation) and must
// have closed if it held one before. A failure of the wait for the head (Timeouts.Header)
// is a 504 that TimedOut reports.
func (c *Client) Send(ctx context.Context, path string, headers []translate.Header, body []byte, stream bool, x *Exchange) (*Exchange, error) {
	return c.SendBy(ctx, time.Time{}, path, headers, body, stream, x)
}

// SendBy is Send that also gives up on the response head at deadline, when it is set and
// comes before the backend's own timeouts would (a request's deadline: see Deadline).
// Running out of it is a TimedOut 504 as well.
func (c *Client) SendBy(ctx context.Context, deadline time.Time, path string, headers []translate.Header, body []byte, stream bool, x *Exchange) (*Exchange, error) {
	return c.send(ctx, deadline, path, headers, body, nil, false, stream, x)
}

// SendBuffer is SendBy for the body buf lends (buf.Bytes()). A body over MaxSpareBody,
// when c signs nothing, is given back (buf.Release) as soon as it is written, not when the
// response head comes: the wait for the upstream's answer is most of a request's life, and
// 32 concurrent 100 KB requests held 32 such buffers through it. SendBy's immediate second
// send on a fresh connection, when a pooled one the upstream had closed fails before any
// answer, then needs the body again: that failure is returned as an error Resend reports,
// for the caller to build the body and call SendBuffer once more, with again set (a
// failure of that send is returned as SendBy returns it).
func (c *Client) SendBuffer(ctx context.Context, deadline time.Time, path string, headers []translate.Header, buf *Buffer, again, stream bool, x *Exchange) (*Exchange, error) {
	return c.send(ctx, deadline, path, headers, buf.Bytes(), buf, again, stream, x)
}

// errResend is the error SendBuffer returns for a body given back once written whose
// connection turned out to be closed before any answer.
var errResend = errors.New("the upstream closed a pooled connection before answering; the body, given back once written, is to be sent again")

// Resend reports whether err is SendBuffer's call to send the body again at once.
func Resend(err error) bool { return errors.Is(err, errResend) }

// writtenBody is a body SendBuffer gives back (Buffer.Release) once fasthttp has written
// it: fasthttp closes a request's body stream after writing it, or failing to.
type writtenBody struct {
	b      []byte
	buf    *Buffer
	closed bool
}

func (w *writtenBody) Read(p []byte) (int, error) {
	if len(w.b) == 0 {
		return 0, io.EOF
	}
	n := copy(p, w.b)
	w.b = w.b[n:]
	return n, nil
}

// WriteTo writes the body in one call (fasthttp's copy prefers it to Read): a bufio.Writer
// writes a large one straight to the connection and copies the rest, so nothing refers to
// the body once it returns.
func (w *writtenBody) WriteTo(dst io.Writer) (int64, error) {
	n, err := dst.Write(w.b)
	w.b = w.b[n:]
	return int64(n), err
}

func (w *writtenBody) Close() error {
	if !w.closed {
		w.closed = true
		w.b = nil
		w.buf.Release()
	}
	return nil
}

func (c *Client) send(ctx context.Context, deadline time.Time, path string, headers []translate.Header, body []byte, buf *Buffer, again, stream bool, x *Exchange) (*Exchange, error) {
	req, plain := c.plainRequest(path, headers, body)
	var written *writtenBody
	if buf != nil && c.signer == nil && len(body) > MaxSpareBody {
		written = &writtenBody{b: body, buf: buf}
		req.SetBodyStream(written, len(body))
	}
	sent := false
	defer func() { c.releaseRequest(req, plain, sent) }()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if c.signer != nil {
		if err := c.sign(ctx, req); err != nil {
			return nil, err
		}
	}
	resp := fasthttp.AcquireResponse()
	do := func() error {
		resp.StreamBody = stream
		// The wait is bounded as DoDeadline(min(now+Connect+Header, deadline)) bounds it,
		// with one clock reading, none without a deadline (DoDeadline reads it and Do again).
		timeout := c.timeouts.Connect + c.timeouts.Header
		if !deadline.IsZero() {
			timeout = min(timeout, time.Until(deadline))
		}
		return c.hc.DoTimeout(req, resp, timeout)
	}
	err := do()
	if err != nil && beforeAnswer(err, resp) && ctx.Err() == nil {
		// A pooled keep-alive connection the upstream closed while idle fails before any
		// response byte; that one case is retried on a fresh connection at once. Every
		// other failure is left to the caller's retries, which back off.
		switch {
		case written == nil || !written.closed:
			resp.Reset()
			err = do()
		case !again: // the body was given back: the caller sends it again (SendBuffer)
			fasthttp.ReleaseResponse(resp)
			return nil, errResend
		}
	}
	if err != nil {
		fasthttp.ReleaseResponse(resp)
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if errors.Is(err, fasthttp.ErrBodyTooLarge) {
			return nil, tooLarge(c.name, c.maxBody)
		}
		return nil, transportError(c.name, err)
	}
	sent = true // the request was written and answered: a plain one can serve again
	*x = Exchange{resp: resp, stop: bodyRead, limit: c.maxBody}
	if stream {
		x.closing.Add(1)
		x.stop = context.AfterFunc(ctx, func() {
			resp.CloseBodyStream()
			x.closing.Done()
		})
	}
	if code := resp.StatusCode(); code < 200 || code > 299 {
		raw, _ := x.readAll(maxErrorBody)
		ue := c.provider.DecodeError(code, raw)
		if ue.RetryAfter == 0 {
			ue.RetryAfter = parseRetryAfter(responseHeader(&resp.Header, "Retry-After"))
		}
		if code == 529 {
			ue.Retryable = true
		}
		x.Close()
		return nil, ue
	}
	return x, nil
}

// sign has the Signer sign req; its error is the context's once ctx ended, else an
// *translate.UpstreamError (AuthFailed when the Signer's was not one).
func (c *Client) sign(ctx context.Context, req *fasthttp.Request) error {
	err := c.signer.Sign(ctx, req)
	if err == nil {
		return nil
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if ue := AsError(err); ue != nil {
		return ue
	}
	return AuthFailed(c.name, "credentials")
}

// beforeAnswer reports whether a failed exchange failed before the upstream answered: the
// connection ended (fasthttp reports an end at the first byte as ErrConnectionClosed or
// io.EOF; a body larger than the socket's buffers, written into a connection the upstream
// had closed, fails in its write with a reset or a broken pipe) and no response head
// announcing a body was read. A body read whole and cut at a chunk boundary also ends in
// io.EOF; its head was read, and the upstream may have done the work, so it is not sent
// again.
func beforeAnswer(err error, resp *fasthttp.Response) bool {
	ended := errors.Is(err, fasthttp.ErrConnectionClosed) || errors.Is(err, io.EOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
	return ended && resp.Header.ContentLength() == 0
}
