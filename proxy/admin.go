package proxy

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"io"
	"net"
	"sort"
	"strings"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/agate-gateway/agate/internal/jsonx"
)

// adminCred is an administrator: its name (the audit records' actor) and token digest.
type adminCred struct {
	name   string
	digest [sha256.Size]byte
}

// adminPrefix is the admin API's path prefix.
const adminPrefix = "/admin/v1/"

// adminRoute is one route of the admin API; adminRoutes is the table the dispatcher
// serves and TestAdminAPI_OpenAPIMatchesRoutes holds equal to docs/admin-openapi.yaml.
type adminRoute struct {
	method, pattern string
	handle          func(s *Server, a *adminCall) error
}

var adminRoutes = []adminRoute{
	{"GET", "/admin/v1/keys", (*Server).adminListKeys},
	{"POST", "/admin/v1/keys", (*Server).adminCreateKey},
	{"GET", "/admin/v1/keys/{name}", (*Server).adminGetKey},
	{"PATCH", "/admin/v1/keys/{name}", (*Server).adminUpdateKey},
	{"DELETE", "/admin/v1/keys/{name}", (*Server).adminDeleteKey},
	{"POST", "/admin/v1/keys/{name}/rotate", (*Server).adminRotateKey},
	{"POST", "/admin/v1/keys/{name}/disable", (*Server).adminDisableKey},
	{"GET", "/admin/v1/teams", (*Server).adminTeams},
	{"POST", "/admin/v1/teams", (*Server).adminCreateTeam},
	{"GET", "/admin/v1/teams/{name}", (*Server).adminGetTeam},
	{"PATCH", "/admin/v1/teams/{name}", (*Server).adminUpdateTeam},
	{"DELETE", "/admin/v1/teams/{name}", (*Server).adminDeleteTeam},
	{"GET", "/admin/v1/usage", (*Server).adminUsage},
	{"GET", "/admin/v1/requests", (*Server).adminRequests},
	{"GET", "/admin/v1/requests/{id}", (*Server).adminRequest}, // admin_request.go
	{"GET", "/admin/v1/audit", (*Server).adminAudit},
	{"GET", "/admin/v1/overview", (*Server).adminOverview}, // admin_overview.go
	{"GET", "/admin/v1/models", (*Server).adminModels},
}

// adminCall is one admin request: who made it, the path's {name}, the request.
type adminCall struct {
	ctx   *fasthttp.RequestCtx
	actor string
	name  string
}

// adminError is the admin API's one error shape:
// {"error":{"code":…,"message":…,"field":…}} with its status.
type adminError struct {
	status           int
	code, msg, field string
}

func (e *adminError) Error() string { return e.msg }

func badRequest(field, msg string) *adminError {
	return &adminError{status: 400, code: "invalid_request", msg: msg, field: field}
}

func notFound(msg string) *adminError { return &adminError{status: 404, code: "not_found", msg: msg} }

// openAdmin turns the admin API on when the config has admin keys: the ledger's
// database holds the keys, which are read now and then every admin.resync.
func (s *Server) openAdmin(opts Options) error {
	ac := opts.Config.Admin
	if !ac.AdminOn() {
		return nil
	}
	ks, ok := s.ledger.(KeyStore)
	if !ok {
		return errors.New("admin: the admin API needs the ledger (ledger.type sqlite or postgres)")
	}
	s.keyStore = ks
	names := make([]string, 0, len(ac.Keys))
	for n := range ac.Keys {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		c := adminCred{name: n}
		hex.Decode(c.digest[:], []byte(ac.Keys[n].KeySHA256)) // validated: 64 hex digits
		s.admins = append(s.admins, c)
	}
	if err := s.refreshKeys(true); err != nil {
		return err
	}
	if ac.Listen != "" {
		s.adminSrv = &fasthttp.Server{Handler: s.handleAdminOnly, Name: "agate", ReadTimeout: opts.Config.Server.ReadTimeout,
			IdleTimeout: opts.Config.Server.IdleTimeout, MaxRequestBodySize: maxAdminBody, NoDefaultServerHeader: true, CloseOnShutdown: true}
	}
	resync := ac.Resync
	if resync <= 0 {
		resync = time.Second
	}
	s.stopKeys, s.keysDone = make(chan struct{}), make(chan struct{})
	go s.syncKeys(resync, s.stopKeys)
	s.openConsole(ac, opts.Config.State) // console.go
	return nil
}

// ServeAdmin serves /admin/v1 alone on ln (admin.listen) until Shutdown.
func (s *Server) ServeAdmin(ln net.Listener) error {
	if s.adminSrv == nil {
		ln.Close()
		return errors.New("admin.listen is not configured")
	}
	return s.adminSrv.Serve(ln)
}

func (s *Server) closeAdmin() {
	if s.adminSrv != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_ = s.adminSrv.ShutdownWithContext(ctx)
		cancel()
	}
	if s.stopKeys != nil {
		close(s.stopKeys)
		<-s.keysDone
		s.stopKeys = nil
	}
}

// maxAdminBody bounds an admin request's body.
const maxAdminBody = 64 << 10

// readAdminBody reads the body of an admin request on the main listener (whose bodies
// are streamed: readBody), at most maxAdminBody+1 bytes, which handleAdmin refuses
// (413), and reports whether it was one.
func (s *Server) readAdminBody(ctx *fasthttp.RequestCtx, stream io.Reader) bool {
	if s.keyStore == nil || !strings.HasPrefix(string(ctx.Path()), adminPrefix) && !s.consoleOwns(ctx) {
		return false
	}
	b, err := io.ReadAll(io.LimitReader(stream, maxAdminBody+1))
	if err != nil || len(b) > maxAdminBody {
		ctx.SetConnectionClose() // the rest of the body is not read
	}
	ctx.Request.SetBody(b)
	return true
}

func (s *Server) handleAdminOnly(ctx *fasthttp.RequestCtx) {
	if s.consoleOwns(ctx) {
		s.console.Serve(ctx)
		return
	}
	if s.playgroundOnAdmin(ctx) { // console.go
		s.handle(ctx)
		return
	}
	if !strings.HasPrefix(string(ctx.Path()), adminPrefix) {
		writeAdminError(ctx, notFound("this listener serves /admin/v1 only"))
		return
	}
	s.handleAdmin(ctx)
}

// handleAdmin serves an admin route: the administrator's token first (a client key is
// no administrator: 401), then the route.
func (s *Server) handleAdmin(ctx *fasthttp.RequestCtx) {
	ctx.Response.Header.Set("Cache-Control", "no-store")
	if s.keyStore == nil {
		writeAdminError(ctx, notFound("the admin API is off (admin.keys)"))
		return
	}
	actor, ok := s.adminOf(&ctx.Request.Header)
	if !ok && s.console != nil { // console.go
		var refused bool
		if actor, ok, refused = s.consoleSession(ctx); refused {
			return
		}
	}
	if !ok {
		ctx.Response.Header.Set("Www-Authenticate", `Bearer realm="agate-admin"`)
		writeAdminError(ctx, &adminError{status: 401, code: "unauthorized", msg: "an admin token is required (Authorization: Bearer <token> of admin.keys); client keys are not admin tokens"})
		return
	}
	path, method := string(ctx.Path()), string(ctx.Method())
	var allowed []string
	for _, r := range adminRoutes {
		name, ok := matchRoute(r.pattern, path)
		if !ok {
			continue
		}
		if r.method != method {
			allowed = append(allowed, r.method)
			continue
		}
		if len(ctx.PostBody()) > maxAdminBody {
			writeAdminError(ctx, &adminError{status: 413, code: "too_large", msg: "the body exceeds 65536 bytes"})
			return
		}
		if err := r.handle(s, &adminCall{ctx: ctx, actor: actor, name: name}); err != nil {
			var ae *adminError
			if !errors.As(err, &ae) {
				s.logger.Error("admin API failure", "path", path, "error", err.Error())
				ae = &adminError{status: 500, code: "internal", msg: "the admin API failed; see the gateway's log"}
			}
			writeAdminError(ctx, ae)
		}
		return
	}
	if len(allowed) > 0 {
		ctx.Response.Header.Set("Allow", strings.Join(allowed, ", "))
		writeAdminError(ctx, &adminError{status: 405, code: "method_not_allowed", msg: "use " + strings.Join(allowed, " or ") + " for " + truncate(path, 100)})
		return
	}
	writeAdminError(ctx, notFound("no admin route "+method+" "+truncate(path, 100)))
}

// matchRoute matches path against pattern, whose {name} (or {id}) segment matches one
// segment.
func matchRoute(pattern, path string) (name string, ok bool) {
	pp, sp := strings.Split(pattern, "/"), strings.Split(path, "/")
	if len(pp) != len(sp) {
		return "", false
	}
	for i := range pp {
		switch {
		case strings.HasPrefix(pp[i], "{"):
			if sp[i] == "" {
				return "", false
			}
			name = sp[i]
		case pp[i] != sp[i]:
			return "", false
		}
	}
	return name, true
}

// adminOf returns the administrator whose token the request bears.
func (s *Server) adminOf(h *fasthttp.RequestHeader) (string, bool) {
	tok, ok := strings.CutPrefix(string(h.Peek("Authorization")), "Bearer ")
	if !ok || tok == "" {
		return "", false
	}
	d := sha256.Sum256([]byte(tok))
	name, found := "", 0
	for _, a := range s.admins { // every one compared, in constant time
		if subtle.ConstantTimeCompare(d[:], a.digest[:]) == 1 {
			name, found = a.name, 1
		}
	}
	return name, found == 1
}

func writeAdminError(ctx *fasthttp.RequestCtx, e *adminError) {
	b := append([]byte(`{"error":{"code":`), jsonx.AppendString(nil, e.code)...)
	b = jsonx.AppendString(append(b, `,"message":`...), e.msg)
	if e.field != "" {
		b = jsonx.AppendString(append(b, `,"field":`...), e.field)
	}
	ctx.SetStatusCode(e.status)
	ctx.SetContentType("application/json")
	ctx.SetBody(append(b, "}}"...))
}

func writeAdminJSON(ctx *fasthttp.RequestCtx, status int, body []byte) {
	ctx.SetStatusCode(status)
	ctx.SetContentType("application/json")
	ctx.SetBody(body)
}

// adminCtx is the context of an admin request's database calls.
func (s *Server) adminCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(s.baseCtx, 10*time.Second)
}
