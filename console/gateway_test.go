package console_test

import (
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"

	"github.com/agate-gateway/agate/console"
	"github.com/agate-gateway/agate/internal/gatewaytest"
)

// client is an HTTP client with a cookie jar, as a browser keeps the session cookie.
func client(t *testing.T) *http.Client {
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &http.Client{Jar: jar}
}

func call(t *testing.T, c *http.Client, method, u, body string, header map[string]string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, u, strings.NewReader(body))
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(raw)
}

// signInAt signs in at base and returns the session's CSRF token.
func signInAt(t *testing.T, c *http.Client, base string) string {
	t.Helper()
	code, body := call(t, c, "POST", base+"/console/session", url.Values{"token": {adminToken}}.Encode(),
		map[string]string{"Content-Type": "application/x-www-form-urlencoded"})
	if code != 200 {
		t.Fatalf("sign-in: %d %s", code, body)
	}
	_, after, _ := strings.Cut(body, `"csrf":"`)
	tok, _, _ := strings.Cut(after, `"`)
	return tok
}

// TestConsole_AdminAPIWithSession: the admin API takes the console's session in place of
// the bearer token, and a change only with its CSRF token; without admin.listen the
// console is on the main listener, with it only on the admin listener; disabled, nowhere.
func TestConsole_AdminAPIWithSession(t *testing.T) {
	g := gatewaytest.StartYAML(t, consoleYAML(sqliteLedger(sqliteLedgers.Fresh(t))), gatewaytest.Options{})
	c := client(t)
	if code, _ := call(t, c, "GET", g.URL+"/admin/v1/keys", "", nil); code != 401 {
		t.Errorf("no session: %d, want 401", code)
	}
	csrf := signInAt(t, c, g.URL)
	for _, tc := range []struct {
		name, method, path, body, csrf string
		want                           int
	}{
		{"read", "GET", "/admin/v1/keys", "", "", 200},
		{"overview", "GET", "/admin/v1/overview", "", "", 200},
		{"models", "GET", "/admin/v1/models", "", "", 200},
		{"change without the token", "POST", "/admin/v1/keys", `{"name":"k1","models":["demo"]}`, "", 403},
		{"change with a forged token", "POST", "/admin/v1/keys", `{"name":"k1","models":["demo"]}`, "forged", 403},
		{"change with the token", "POST", "/admin/v1/keys", `{"name":"k1","models":["demo"]}`, csrf, 201},
	} {
		h := map[string]string{"Content-Type": "application/json"}
		if tc.csrf != "" {
			h["X-CSRF-Token"] = tc.csrf
		}
		if code, body := call(t, c, tc.method, g.URL+tc.path, tc.body, h); code != tc.want {
			t.Errorf("%s: %d %s, want %d", tc.name, code, body, tc.want)
		}
	}
	// A client key signs nothing in.
	code, _ := call(t, client(t), "POST", g.URL+"/console/session", "token=sk-xss-config", map[string]string{"Content-Type": "application/x-www-form-urlencoded"})
	if code != 401 {
		t.Errorf("sign-in with a client key: %d, want 401", code)
	}

	// admin.listen: the console and the API there, not on the main listener.
	y := strings.Replace(consoleYAML(sqliteLedger(sqliteLedgers.Fresh(t))), "  resync: 100ms", "  resync: 100ms\n  listen: 127.0.0.1:1", 1)
	ga := gatewaytest.StartYAML(t, y, gatewaytest.Options{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go ga.Server.ServeAdmin(ln)
	admin := "http://" + ln.Addr().String()
	if code, _ := call(t, c, "GET", ga.URL+"/console/", "", nil); code != 404 {
		t.Errorf("the console on the main listener with admin.listen: %d, want 404", code)
	}
	c2 := client(t)
	csrf = signInAt(t, c2, admin)
	if code, body := call(t, c2, "GET", admin+"/console/", "", nil); code != 200 || !strings.Contains(body, "app.js") {
		t.Errorf("the console on admin.listen: %d", code)
	}
	if code, body := call(t, c2, "DELETE", admin+"/console/session", "", map[string]string{"X-CSRF-Token": csrf}); code != 204 {
		t.Errorf("sign-out on admin.listen: %d %s", code, body)
	}

	// Disabled: the admin API without the console.
	y = strings.Replace(consoleYAML(sqliteLedger(sqliteLedgers.Fresh(t))), "  resync: 100ms", "  resync: 100ms\n  console: {disabled: true}", 1)
	gd := gatewaytest.StartYAML(t, y, gatewaytest.Options{})
	if code, _ := call(t, c, "GET", gd.URL+console.Prefix+"/", "", nil); code != 404 {
		t.Errorf("a disabled console: %d, want 404", code)
	}
}
