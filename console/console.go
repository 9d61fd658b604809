package console

import (
	"embed"
	"io/fs"
	"mime"
	"path"
	"strings"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/agate-gateway/agate/internal/jsonx"
)

//go:embed assets
var assets embed.FS

// Prefix is the console's path; every page and asset is under it.
const Prefix = "/console"

// CookieName is the session cookie's name.
const CookieName = "agate_console"

// CSP is the Content-Security-Policy of every console answer: scripts, styles and
// connections of the console's own origin only, no inline script or style, no framing.
const CSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
	"font-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// Options configure a Console.
type Options struct {
	// Verify returns the administrator whose admin token tok is (the admin API's check).
	Verify func(tok string) (actor string, ok bool)
	// TTL is a session's life from its sign-in; default 8h.
	TTL time.Duration
	// MaxSessions bounds the sessions held at once; default 1000.
	MaxSessions int
	// Now is the clock; default time.Now.
	Now func() time.Time
	// TraceURL is the operator's trace UI address with {trace_id} where a trace id goes
	// (admin.console.trace_url, validated by config); "" for none. The session answer
	// gives it to the pages, which link a request's trace there.
	TraceURL string
	// Redis, when set, keeps the sessions in Redis, shared by every replica using it
	// (state.type redis), so that any replica behind a load balancer accepts a session's
	// cookie; nil keeps them in this process.
	Redis *Redis
}

// Console serves the console's pages and sessions. Its methods are safe for concurrent
// use.
type Console struct {
	verify   func(string) (string, bool)
	sessions sessionStore
	files    fs.FS
	traceURL string
}

// New returns a Console.
func New(o Options) *Console {
	if o.TTL <= 0 {
		o.TTL = 8 * time.Hour
	}
	if o.MaxSessions <= 0 {
		o.MaxSessions = 1000
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	files, _ := fs.Sub(assets, "assets") // the directory is embedded: never fails
	c := &Console{verify: o.Verify, files: files, traceURL: o.TraceURL}
	if o.Redis != nil && o.Redis.Client != nil {
		c.sessions = newRedisSessions(o.Redis, o.MaxSessions, o.TTL, o.Now) // redis.go
	} else {
		c.sessions = newSessions(o.MaxSessions, o.TTL, o.Now)
	}
	return c
}

// Owns reports whether path is the console's.
func Owns(path string) bool {
	return path == Prefix || strings.HasPrefix(path, Prefix+"/")
}

// Session returns the administrator signed in by the request's session cookie, and
// whether the request may change things: a GET or HEAD always may, another method only
// with the session's CSRF token in X-CSRF-Token. ok is false without a live session.
func (c *Console) Session(h *fasthttp.RequestHeader) (actor string, mayChange, ok bool) {
	s, ok := c.sessions.get(string(h.Cookie(CookieName)))
	if !ok {
		return "", false, false
	}
	m := string(h.Method())
	return s.actor, m == "GET" || m == "HEAD" || s.csrfOK(string(h.Peek("X-Csrf-Token"))), true
}

// Serve answers a request whose path Owns: the session routes (/console/session) and the
// embedded assets (/console/ is the single page).
func (c *Console) Serve(ctx *fasthttp.RequestCtx) {
	h := &ctx.Response.Header
	h.Set("Content-Security-Policy", CSP)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	p := string(ctx.Path())
	if p == Prefix+"/session" {
		c.serveSession(ctx)
		return
	}
	if !ctx.IsGet() && !ctx.IsHead() {
		h.Set("Allow", "GET, HEAD")
		writeError(ctx, 405, "method_not_allowed", "the console's pages are read with GET")
		return
	}
	if p == Prefix {
		ctx.Redirect(Prefix+"/", 302)
		return
	}
	name := strings.TrimPrefix(p, Prefix+"/")
	if name == "" {
		name = "index.html"
	}
	if strings.Contains(name, "..") || strings.HasPrefix(name, "/") {
		writeError(ctx, 404, "not_found", "no such console page")
		return
	}
	b, err := fs.ReadFile(c.files, name)
	if err != nil {
		if path.Ext(name) != "" {
			writeError(ctx, 404, "not_found", "no such console file")
			return
		}
		b, _ = fs.ReadFile(c.files, "index.html") // a page's address: the single page routes it
		name = "index.html"
	}
	ct := mime.TypeByExtension(path.Ext(name))
	if ct == "" {
		ct = "application/octet-stream"
	}
	ctx.SetContentType(ct)
	h.Set("Cache-Control", "no-cache")
	ctx.SetBody(b)
}

// serveSession signs in (POST, the form field token), tells the signed-in administrator
// and the CSRF token (GET), and signs out (DELETE, with the CSRF token).
func (c *Console) serveSession(ctx *fasthttp.RequestCtx) {
	ctx.Response.Header.Set("Cache-Control", "no-store")
	switch string(ctx.Method()) {
	case "GET":
		if _, s, ok := c.signedIn(ctx); ok {
			c.writeSession(ctx, s)
		}
	case "POST":
		tok := string(ctx.PostArgs().Peek("token"))
		actor, ok := "", false
		if tok != "" && len(tok) <= 512 && c.verify != nil {
			actor, ok = c.verify(tok)
		}
		if !ok {
			writeError(ctx, 401, "unauthorized", "that is not an admin token of admin.keys (client keys are not admin tokens)")
			return
		}
		id, s, err := c.sessions.open(actor)
		if err != nil {
			writeError(ctx, 503, "unavailable", "the console's session store did not answer; try again")
			return
		}
		ck := fasthttp.AcquireCookie()
		defer fasthttp.ReleaseCookie(ck)
		ck.SetKey(CookieName)
		ck.SetValue(id)
		ck.SetPath("/")
		ck.SetHTTPOnly(true)
		ck.SetSameSite(fasthttp.CookieSameSiteStrictMode)
		ck.SetSecure(ctx.IsTLS() || string(ctx.Request.Header.Peek("X-Forwarded-Proto")) == "https")
		ck.SetExpire(s.expires)
		ctx.Response.Header.SetCookie(ck)
		c.writeSession(ctx, s)
	case "DELETE":
		id, s, ok := c.signedIn(ctx)
		if !ok {
			return
		}
		if !s.csrfOK(string(ctx.Request.Header.Peek("X-Csrf-Token"))) {
			writeError(ctx, 403, "csrf", "the X-CSRF-Token header must carry the session's CSRF token")
			return
		}
		c.sessions.end(id)
		ctx.Response.Header.DelClientCookie(CookieName)
		ctx.SetStatusCode(204)
	default:
		ctx.Response.Header.Set("Allow", "GET, POST, DELETE")
		writeError(ctx, 405, "method_not_allowed", "use GET, POST or DELETE for "+Prefix+"/session")
	}
}

// signedIn returns the request's live session and its cookie value, or answers 401.
func (c *Console) signedIn(ctx *fasthttp.RequestCtx) (string, session, bool) {
	id := string(ctx.Request.Header.Cookie(CookieName))
	s, ok := c.sessions.get(id)
	if !ok {
		writeError(ctx, 401, "unauthorized", "not signed in")
	}
	return id, s, ok
}

// writeSession answers the session: its administrator, CSRF token and end, and the
// console's settings the pages need (trace_url, "" for none).
func (c *Console) writeSession(ctx *fasthttp.RequestCtx, s session) {
	b := jsonx.AppendString([]byte(`{"actor":`), s.actor)
	b = append(append(b, `,"csrf":"`...), s.csrf...) // base64url
	b = append(append(b, `","expires_at":"`...), s.expires.UTC().Format(time.RFC3339)...)
	b = jsonx.AppendString(append(b, `","trace_url":`...), c.traceURL)
	ctx.SetContentType("application/json")
	ctx.SetBody(append(b, '}'))
}

// writeError writes the admin API's error shape.
func writeError(ctx *fasthttp.RequestCtx, status int, code, msg string) {
	ctx.SetStatusCode(status)
	ctx.SetContentType("application/json")
	b := jsonx.AppendString([]byte(`{"error":{"code":`), code)
	b = jsonx.AppendString(append(b, `,"message":`...), msg)
	ctx.SetBody(append(b, "}}"...))
}

// Sessions is the number of sessions held.
func (c *Console) Sessions() int { return c.sessions.len() }
