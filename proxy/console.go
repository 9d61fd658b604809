package proxy

import (
	"github.com/redis/go-redis/v9"
	"github.com/valyala/fasthttp"

	"github.com/agate-gateway/agate/config"
	"github.com/agate-gateway/agate/console"
)

// openConsole serves the browser console beside the admin API (admin.console): its
// sign-in checks a token as the admin API does; with state.type redis its sessions live
// in the limiter's Redis, shared by the replicas.
func (s *Server) openConsole(ac config.Admin, st config.State) {
	if !ac.ConsoleOn() {
		return
	}
	var shared *console.Redis
	if r, ok := s.limiter.(interface{ Client() *redis.Client }); ok && st.Type == "redis" {
		// The limiter's Redis (state.type redis): every replica accepts a session's cookie.
		shared = &console.Redis{Client: r.Client(), Prefix: st.KeyPrefix, Timeout: st.Timeout}
	}
	s.console = console.New(console.Options{
		Redis: shared,
		Verify: func(tok string) (string, bool) {
			var h fasthttp.RequestHeader
			h.Set("Authorization", "Bearer "+tok)
			return s.adminOf(&h)
		},
		TTL:         ac.Console.SessionTTL,
		MaxSessions: ac.Console.MaxSessions,
		TraceURL:    ac.Console.TraceURL,
	})
}

// consoleOwns reports whether the request is the console's.
func (s *Server) consoleOwns(ctx *fasthttp.RequestCtx) bool {
	return s.console != nil && console.Owns(string(ctx.Path()))
}

// consoleSession authenticates an admin request without a bearer token by the console's
// session cookie: the administrator of a live session; for a change without the
// session's CSRF token it answers 403 and reports refused.
func (s *Server) consoleSession(ctx *fasthttp.RequestCtx) (actor string, ok, refused bool) {
	actor, mayChange, live := s.console.Session(&ctx.Request.Header)
	if live && !mayChange {
		writeAdminError(ctx, &adminError{status: 403, code: "csrf", msg: "a console session changes nothing without its CSRF token (X-CSRF-Token)"})
		return "", false, true
	}
	return actor, live, false
}

// playgroundPath is the one client route the admin listener serves, for the console's
// Playground.
const playgroundPath = "/v1/chat/completions"

// playgroundOnAdmin reports whether a request on the admin listener (admin.listen) is
// the console's Playground chat: POST /v1/chat/completions while the console is on. It is
// served in-process by the main listener's handler, authenticated by its client key like
// any other (the key's models, limits and budget apply), so the Playground works when the
// main listener is not reachable from the operator's browser. Its body is bounded by the
// admin listener's 64 KiB. No other client route is served there.
func (s *Server) playgroundOnAdmin(ctx *fasthttp.RequestCtx) bool {
	return s.console != nil && ctx.IsPost() && string(ctx.Path()) == playgroundPath
}
