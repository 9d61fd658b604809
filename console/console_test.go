package console

import (
	"strings"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
)

// clock is an injected clock a test moves.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func newTestConsole(c *clock, max int) *Console {
	return New(Options{
		Verify: func(tok string) (string, bool) { return "ops", tok == "right" },
		TTL:    time.Hour, MaxSessions: max, Now: c.now,
	})
}

// do serves one request and returns its answer.
func do(c *Console, method, path, body string, header map[string]string) *fasthttp.Response {
	var ctx fasthttp.RequestCtx
	ctx.Request.Header.SetMethod(method)
	ctx.Request.SetRequestURI(path)
	if body != "" {
		ctx.Request.Header.SetContentType("application/x-www-form-urlencoded")
		ctx.Request.SetBodyString(body)
	}
	for k, v := range header {
		ctx.Request.Header.Set(k, v)
	}
	c.Serve(&ctx)
	var r fasthttp.Response
	ctx.Response.CopyTo(&r)
	return &r
}

// signIn returns the session cookie's value and the CSRF token.
func signIn(t *testing.T, c *Console) (cookie, csrf string) {
	t.Helper()
	r := do(c, "POST", "/console/session", "token=right", nil)
	if r.StatusCode() != 200 {
		t.Fatalf("sign-in: %d %s", r.StatusCode(), r.Body())
	}
	var ck fasthttp.Cookie
	ck.SetKey(CookieName)
	if !r.Header.Cookie(&ck) {
		t.Fatal("no session cookie")
	}
	if !ck.HTTPOnly() || ck.SameSite() != fasthttp.CookieSameSiteStrictMode || string(ck.Path()) != "/" {
		t.Errorf("cookie %s: want HttpOnly, SameSite=Strict, Path=/", ck.String())
	}
	body := string(r.Body())
	i := strings.Index(body, `"csrf":"`)
	return string(ck.Value()), body[i+8 : i+8+43]
}

// TestSession_Rules: what a session cookie may do, method by method, with and without
// its CSRF token, and after its end.
func TestSession_Rules(t *testing.T) {
	clk := &clock{time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)}
	c := newTestConsole(clk, 10)
	cookie, csrf := signIn(t, c)
	// The forged token differs from the real one in its first character (a fixed
	// replacement would be the real token whenever that starts with it).
	forged := "x" + csrf[1:]
	if csrf[0] == 'x' {
		forged = "y" + csrf[1:]
	}
	for _, tc := range []struct {
		name, method, cookie, csrf string
		live, mayChange            bool
	}{
		{"GET reads", "GET", cookie, "", true, true},
		{"POST without the token", "POST", cookie, "", true, false},
		{"PATCH with a forged token", "PATCH", cookie, forged, true, false},
		{"DELETE with the token", "DELETE", cookie, csrf, true, true},
		{"no cookie", "GET", "", "", false, false},
		{"an unknown cookie", "GET", "forged", csrf, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var h fasthttp.RequestHeader
			h.SetMethod(tc.method)
			if tc.cookie != "" {
				h.SetCookie(CookieName, tc.cookie)
			}
			if tc.csrf != "" {
				h.Set("X-CSRF-Token", tc.csrf)
			}
			actor, mayChange, live := c.Session(&h)
			if live != tc.live || mayChange != tc.mayChange || live && actor != "ops" {
				t.Errorf("Session = %q, mayChange %v, live %v; want live %v, mayChange %v", actor, mayChange, live, tc.live, tc.mayChange)
			}
		})
	}
	// The session ends an hour after the sign-in.
	clk.t = clk.t.Add(time.Hour)
	var h fasthttp.RequestHeader
	h.SetCookie(CookieName, cookie)
	if _, _, live := c.Session(&h); live {
		t.Error("a session outlived its TTL")
	}
}

// TestSession_SignInAndOut: a wrong token is refused; sign-out needs the CSRF token and
// ends the session.
func TestSession_SignInAndOut(t *testing.T) {
	c := newTestConsole(&clock{time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)}, 10)
	for _, body := range []string{"token=wrong", "", "token=" + strings.Repeat("x", 600)} {
		if r := do(c, "POST", "/console/session", body, nil); r.StatusCode() != 401 {
			t.Errorf("sign-in with %.20q: %d, want 401", body, r.StatusCode())
		}
	}
	cookie, csrf := signIn(t, c)
	ck := map[string]string{"Cookie": CookieName + "=" + cookie}
	if r := do(c, "GET", "/console/session", "", ck); r.StatusCode() != 200 || !strings.Contains(string(r.Body()), csrf) {
		t.Errorf("GET session: %d %s", r.StatusCode(), r.Body())
	}
	if r := do(c, "DELETE", "/console/session", "", ck); r.StatusCode() != 403 {
		t.Errorf("sign-out without the CSRF token: %d, want 403", r.StatusCode())
	}
	if r := do(c, "DELETE", "/console/session", "", map[string]string{"Cookie": CookieName + "=" + cookie, "X-CSRF-Token": csrf}); r.StatusCode() != 204 {
		t.Errorf("sign-out: %d, want 204", r.StatusCode())
	}
	if r := do(c, "GET", "/console/session", "", ck); r.StatusCode() != 401 {
		t.Errorf("after sign-out: %d, want 401", r.StatusCode())
	}
}

// TestSession_Bounded: the store holds at most MaxSessions; a sign-in beyond ends the
// session closest to its end.
func TestSession_Bounded(t *testing.T) {
	clk := &clock{time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)}
	c := newTestConsole(clk, 3)
	var cookies []string
	for range 5 {
		ck, _ := signIn(t, c)
		cookies = append(cookies, ck)
		clk.t = clk.t.Add(time.Minute)
	}
	if n := c.Sessions(); n != 3 {
		t.Errorf("%d sessions held, want 3", n)
	}
	for i, ck := range cookies {
		var h fasthttp.RequestHeader
		h.SetCookie(CookieName, ck)
		if _, _, live := c.Session(&h); live != (i >= 2) {
			t.Errorf("session %d live %v, want %v", i, live, i >= 2)
		}
	}
}

// TestServe_Assets: the pages and assets are served with the CSP; paths outside the
// embedded files are not.
func TestServe_Assets(t *testing.T) {
	c := newTestConsole(&clock{time.Now()}, 10)
	for _, tc := range []struct {
		method, path string
		status       int
		ctype        string
	}{
		{"GET", "/console/", 200, "text/html; charset=utf-8"},
		{"GET", "/console/js/app.js", 200, "text/javascript; charset=utf-8"},
		{"GET", "/console/app.css", 200, "text/css; charset=utf-8"},
		{"GET", "/console/vendor/uPlot.iife.min.js", 200, "text/javascript; charset=utf-8"},
		{"GET", "/console/keys", 200, "text/html; charset=utf-8"},
		{"GET", "/console/nothing.js", 404, "application/json"},
		{"GET", "/console/../go.mod", 404, "application/json"},
		{"POST", "/console/", 405, "application/json"},
		{"GET", "/console", 302, ""},
	} {
		r := do(c, tc.method, tc.path, "", nil)
		if r.StatusCode() != tc.status || tc.ctype != "" && string(r.Header.ContentType()) != tc.ctype {
			t.Errorf("%s %s: %d %q, want %d %q", tc.method, tc.path, r.StatusCode(), r.Header.ContentType(), tc.status, tc.ctype)
		}
		if string(r.Header.Peek("Content-Security-Policy")) != CSP {
			t.Errorf("%s %s: no CSP", tc.method, tc.path)
		}
	}
}

// TestAssets_NoInline: no page or script needs 'unsafe-inline' or renders HTML from a
// string: no inline script or style, no innerHTML, no style attribute.
func TestAssets_NoInline(t *testing.T) {
	for _, name := range []string{"index.html", "js/app.js", "js/api.js", "js/dom.js", "js/keys.js", "js/requests.js", "js/overview.js", "js/usage.js", "js/models.js", "js/playground.js"} {
		b, err := assets.ReadFile("assets/" + name)
		if err != nil {
			t.Fatal(err)
		}
		s := string(b)
		for _, bad := range []string{"innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "style=", "<style", "eval(", "new Function"} {
			if strings.Contains(s, bad) {
				t.Errorf("%s contains %q", name, bad)
			}
		}
		if name == "index.html" && strings.Contains(s, "<script>") {
			t.Errorf("index.html has an inline script")
		}
	}
}
