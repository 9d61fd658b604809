package proxy_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/agate-gateway/agate/internal/gatewaytest"
	"github.com/agate-gateway/agate/proxy"
)

const adminToken = "admin-token-for-tests"

func adminYAML(ledgerYAML string) string {
	d := sha256.Sum256([]byte(adminToken))
	return `
backends: {offline: {type: mock}}
models:
  demo: {backend: offline, price: {input: 1, output: 2}}
  other: {backend: offline, price: {input: 1, output: 2}}
keys:
  fromfile: {key: sk-file, models: ["*"], team: platform}
` + ledgerYAML + `
admin:
  keys: {ops: {key_sha256: ` + hex.EncodeToString(d[:]) + `}}
  resync: 200ms
`
}

// adminDo sends an admin request and returns its status and decoded JSON body.
func adminDo(t *testing.T, g *gatewaytest.Gateway, token, method, path, body string) (int, map[string]any, string) {
	t.Helper()
	req, err := http.NewRequest(method, g.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var m map[string]any
	_ = json.Unmarshal(raw, &m)
	return resp.StatusCode, m, string(raw)
}

// chatStatus is the status of a chat request with key to model.
func chatStatus(t *testing.T, g *gatewaytest.Gateway, key, model string) int {
	t.Helper()
	body := `{"model":"` + model + `","messages":[{"role":"user","content":"hi"}]}`
	req, _ := http.NewRequest("POST", g.V1()+"/chat/completions", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// TestAdminAPI_TwoReplicas: keys created, limited, restricted, rotated and disabled
// through one replica's admin API take effect on another replica sharing the PostgreSQL
// database, without a reload; config keys are read-only; client keys get 401 on every
// admin route; every change is audited without its secret.
func TestAdminAPI_TwoReplicas(t *testing.T) {
	t.Parallel() // its own gateway, fakes and servers (#54)
	y := adminYAML(`ledger: {type: postgres, url: "` + postgres.NewDatabase(t) + `", flush_interval: 50ms, spool_path: "off"}`)
	a := gatewaytest.StartYAML(t, y, gatewaytest.Options{Runtime: proxy.TestRuntime})
	b := gatewaytest.StartYAML(t, y, gatewaytest.Options{Runtime: proxy.TestRuntime})

	// Create on A; the secret works on B.
	code, m, raw := adminDo(t, a, adminToken, "POST", "/admin/v1/keys",
		`{"name":"team-a-ci","models":["demo"],"team":"research","budget":{"usd":5},"metadata":{"owner":"ana"}}`)
	if code != 201 {
		t.Fatalf("create: %d %s", code, raw)
	}
	secret, _ := m["secret"].(string)
	if !strings.HasPrefix(secret, "agk_") {
		t.Fatalf("create answered no secret: %s", raw)
	}
	waitFor(t, "the new key to work on replica B", func() bool { return chatStatus(t, b, secret, "demo") == 200 })
	if got := chatStatus(t, b, secret, "other"); got != 403 && got != 404 {
		t.Errorf("a model the key may not use: %d", got)
	}
	if code, _, raw := adminDo(t, b, adminToken, "GET", "/admin/v1/keys/team-a-ci", ""); code != 200 || strings.Contains(raw, secret) || strings.Contains(raw, "digest") {
		t.Errorf("get on B: %d %s", code, raw)
	}

	// Restrict its models, then limit it to one request a minute: in force on B.
	if code, _, raw := adminDo(t, a, adminToken, "PATCH", "/admin/v1/keys/team-a-ci", `{"models":["other"]}`); code != 200 {
		t.Fatalf("update: %d %s", code, raw)
	}
	waitFor(t, "the model change on B", func() bool { return chatStatus(t, b, secret, "other") == 200 })
	if code, _, raw := adminDo(t, a, adminToken, "PATCH", "/admin/v1/keys/team-a-ci", `{"limits":{"requests_per_minute":1}}`); code != 200 {
		t.Fatalf("limit: %d %s", code, raw)
	}
	waitFor(t, "the limit on B", func() bool { return chatStatus(t, b, secret, "other") == 429 })

	// Rotate with a grace period: old and new both work on B; then end the grace.
	code, m, raw = adminDo(t, a, adminToken, "POST", "/admin/v1/keys/team-a-ci/rotate", `{"grace":"1h"}`)
	if code != 200 {
		t.Fatalf("rotate: %d %s", code, raw)
	}
	newSecret, _ := m["secret"].(string)
	if code, _, raw := adminDo(t, a, adminToken, "PATCH", "/admin/v1/keys/team-a-ci", `{"limits":{"requests_per_minute":0}}`); code != 200 {
		t.Fatalf("unlimit: %d %s", code, raw)
	}
	waitFor(t, "the new secret on B", func() bool { return chatStatus(t, b, newSecret, "other") == 200 })
	if got := chatStatus(t, b, secret, "other"); got != 200 {
		t.Errorf("the old secret during the grace period: %d", got)
	}
	if code, _, raw := adminDo(t, a, adminToken, "POST", "/admin/v1/keys/team-a-ci/rotate", `{"grace":"0s"}`); code != 200 {
		t.Fatalf("rotate: %d %s", code, raw)
	}
	waitFor(t, "both earlier secrets to stop on B", func() bool {
		return chatStatus(t, b, secret, "other") == 401 && chatStatus(t, b, newSecret, "other") == 401
	})

	// Create another, disable it on B: A refuses it.
	code, m, _ = adminDo(t, b, adminToken, "POST", "/admin/v1/keys", `{"name":"temp","models":["*"]}`)
	temp, _ := m["secret"].(string)
	if code != 201 {
		t.Fatalf("create temp: %d", code)
	}
	waitFor(t, "temp on A", func() bool { return chatStatus(t, a, temp, "demo") == 200 })
	if code, _, raw := adminDo(t, b, adminToken, "POST", "/admin/v1/keys/temp/disable", ""); code != 200 {
		t.Fatalf("disable: %d %s", code, raw)
	}
	waitFor(t, "the disabled key refused on A", func() bool { return chatStatus(t, a, temp, "demo") == 401 })
	if code, _, _ := adminDo(t, b, adminToken, "DELETE", "/admin/v1/keys/temp", ""); code != 204 {
		t.Errorf("delete: %d", code)
	}

	// Config keys are read-only; names are unique across both.
	for _, c := range []struct{ method, path, body string }{
		{"PATCH", "/admin/v1/keys/fromfile", `{"models":["demo"]}`},
		{"POST", "/admin/v1/keys/fromfile/rotate", ``},
		{"DELETE", "/admin/v1/keys/fromfile", ``},
	} {
		if code, _, raw := adminDo(t, a, adminToken, c.method, c.path, c.body); code != 403 || !strings.Contains(raw, `"code":"read_only"`) {
			t.Errorf("%s %s: %d %s, want 403 read_only", c.method, c.path, code, raw)
		}
	}
	if code, _, _ := adminDo(t, a, adminToken, "POST", "/admin/v1/keys", `{"name":"fromfile"}`); code != 409 {
		t.Errorf("create with a config key's name: %d, want 409", code)
	}
	if code, _, raw := adminDo(t, a, adminToken, "POST", "/admin/v1/keys", `{"name":"x","tools":["nope"]}`); code != 400 || !strings.Contains(raw, "nope") {
		t.Errorf("create with an unknown tool: %d %s, want 400 naming it", code, raw)
	}
	if code, _, raw := adminDo(t, a, adminToken, "POST", "/admin/v1/keys", `{"name":"x","limits":{"rpm":1}}`); code != 400 || !strings.Contains(raw, `"field":"limits.rpm"`) {
		t.Errorf("create with an unknown member: %d %s", code, raw)
	}
	if chatStatus(t, a, "sk-file", "demo") != 200 {
		t.Error("the config key stopped working")
	}

	// The audit log: who, what, before and after, no secret.
	code, _, raw = adminDo(t, a, adminToken, "GET", "/admin/v1/audit", "")
	if code != 200 || strings.Count(raw, `"actor":"ops"`) != 9 || strings.Contains(raw, secret) || strings.Contains(raw, newSecret) {
		t.Errorf("audit: %d %s", code, raw)
	}

	// Usage and requests through the API.
	// The ledger's writer flushes every 50ms.
	waitFor(t, "the usage report to count the requests", func() bool {
		code, _, raw := adminDo(t, b, adminToken, "GET", "/admin/v1/usage?group_by=key&format=csv", "")
		return code == 200 && strings.HasPrefix(raw, "key,requests,") && strings.Contains(raw, "team-a-ci,") && strings.Contains(raw, "fromfile,")
	})
	code, m, raw = adminDo(t, a, adminToken, "GET", "/admin/v1/requests?key=team-a-ci&limit=2", "")
	if code != 200 || m["next_cursor"] == nil || len(m["data"].([]any)) != 2 {
		t.Fatalf("requests: %d %s", code, raw)
	}
	if code, m2, raw := adminDo(t, a, adminToken, "GET", "/admin/v1/requests?key=team-a-ci&limit=2&cursor="+m["next_cursor"].(string), ""); code != 200 || len(m2["data"].([]any)) == 0 {
		t.Errorf("requests, page 2: %d %s", code, raw)
	}

	// Every admin route refuses a client key (database and config) and no token: 401.
	spec, err := os.ReadFile("../docs/admin-openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Paths map[string]map[string]any `yaml:"paths"`
	}
	if err := yaml.Unmarshal(spec, &doc); err != nil {
		t.Fatal(err)
	}
	for path, ops := range doc.Paths {
		for op := range ops {
			if op == "parameters" {
				continue
			}
			p := strings.ReplaceAll(path, "{name}", "team-a-ci")
			for _, tok := range []string{newSecret, "sk-file", ""} {
				if code, _, raw := adminDo(t, a, tok, strings.ToUpper(op), p, `{}`); code != 401 || !strings.Contains(raw, `"code":"unauthorized"`) {
					t.Errorf("%s %s with a client key %q: %d %s", op, p, tok, code, raw)
				}
			}
		}
	}
}

// TestAdminAPI_ListenNotify: with PostgreSQL a change reaches the other replica at once
// (LISTEN/NOTIFY), not at its next resync (a minute here).
func TestAdminAPI_ListenNotify(t *testing.T) {
	y := strings.Replace(adminYAML(`ledger: {type: postgres, url: "`+postgres.NewDatabase(t)+`", spool_path: "off"}`), "resync: 200ms", "resync: 1m", 1)
	a := gatewaytest.StartYAML(t, y, gatewaytest.Options{Runtime: proxy.TestRuntime})
	b := gatewaytest.StartYAML(t, y, gatewaytest.Options{Runtime: proxy.TestRuntime})
	code, m, raw := adminDo(t, a, adminToken, "POST", "/admin/v1/keys", `{"name":"quick","models":["demo"]}`)
	if code != 201 {
		t.Fatalf("create: %d %s", code, raw)
	}
	secret := m["secret"].(string)
	start := time.Now()
	waitFor(t, "the key on B", func() bool { return chatStatus(t, b, secret, "demo") == 200 })
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("the key reached B after %s", took)
	}
	if code, _, _ := adminDo(t, a, adminToken, "POST", "/admin/v1/keys/quick/disable", ""); code != 200 {
		t.Fatal(code)
	}
	waitFor(t, "the key disabled on B", func() bool { return chatStatus(t, b, secret, "demo") == 401 })
}
