package proxy_test

import (
	"strings"
	"testing"

	"github.com/agate-gateway/agate/internal/gatewaytest"
	"github.com/agate-gateway/agate/proxy"
)

// TestAdminAPI_Teams: a team created through one replica's admin API, and its limits
// changed, bind its keys on another replica sharing the PostgreSQL database without a
// reload; config teams are read-only; teams keys only name are listed as labels; every
// change is audited.
func TestAdminAPI_Teams(t *testing.T) {
	t.Parallel() // its own gateway, fakes and servers (#54)
	y := adminYAML(`ledger: {type: postgres, url: "`+postgres.NewDatabase(t)+`", flush_interval: 50ms, spool_path: "off"}`) +
		"teams: {platform: {limits: {concurrent: 100}}}\n"
	a := gatewaytest.StartYAML(t, y, gatewaytest.Options{Runtime: proxy.TestRuntime})
	b := gatewaytest.StartYAML(t, y, gatewaytest.Options{Runtime: proxy.TestRuntime})

	code, m, raw := adminDo(t, a, adminToken, "POST", "/admin/v1/keys", `{"name":"r1","models":["*"],"team":"research"}`)
	if code != 201 {
		t.Fatalf("create key: %d %s", code, raw)
	}
	secret := m["secret"].(string)
	waitFor(t, "the key on B", func() bool { return chatStatus(t, b, secret, "demo") == 200 })

	// research is a label until the team is created, with one request a minute and
	// demo only.
	if code, _, raw := adminDo(t, a, adminToken, "GET", "/admin/v1/teams/research", ""); code != 404 {
		t.Errorf("get a label team: %d %s, want 404 (not in the config or the database)", code, raw)
	}
	if code, _, raw := adminDo(t, a, adminToken, "POST", "/admin/v1/teams",
		`{"name":"research","models":["demo"],"limits":{"requests_per_minute":1},"budget":{"tokens":1000000,"period":"24h"}}`); code != 201 ||
		!strings.Contains(raw, `"source":"database"`) || !strings.Contains(raw, `"keys":["r1"]`) {
		t.Fatalf("create team: %d %s", code, raw)
	}
	waitFor(t, "the team's models on B", func() bool { return chatStatus(t, b, secret, "other") == 404 })
	waitFor(t, "the team's limit on B", func() bool { return chatStatus(t, b, secret, "demo") == 429 })
	if code, _, raw := adminDo(t, b, adminToken, "PATCH", "/admin/v1/teams/research", `{"limits":{"requests_per_minute":0},"models":[]}`); code != 200 {
		t.Fatalf("update team: %d %s", code, raw)
	}
	waitFor(t, "the team's change on A", func() bool { return chatStatus(t, a, secret, "other") == 200 })

	// The list: the config team (read-only), the database team, the label.
	code, _, raw = adminDo(t, a, adminToken, "GET", "/admin/v1/teams", "")
	for _, want := range []string{`{"name":"platform","source":"config","read_only":true`, `{"name":"research","source":"database","read_only":false`,
		`"keys":["fromfile"]`} {
		if code != 200 || !strings.Contains(raw, want) {
			t.Errorf("teams list: %d %s; want %s", code, raw, want)
		}
	}

	// Config teams are read-only; names are unique across both; bad bodies name the field.
	for _, c := range []struct{ method, path, body string }{
		{"PATCH", "/admin/v1/teams/platform", `{"models":["demo"]}`},
		{"DELETE", "/admin/v1/teams/platform", ``},
	} {
		if code, _, raw := adminDo(t, a, adminToken, c.method, c.path, c.body); code != 403 || !strings.Contains(raw, `"code":"read_only"`) {
			t.Errorf("%s %s: %d %s, want 403 read_only", c.method, c.path, code, raw)
		}
	}
	if code, _, _ := adminDo(t, a, adminToken, "POST", "/admin/v1/teams", `{"name":"platform"}`); code != 409 {
		t.Errorf("create with a config team's name: %d, want 409", code)
	}
	if code, _, _ := adminDo(t, a, adminToken, "POST", "/admin/v1/teams", `{"name":"research"}`); code != 409 {
		t.Errorf("create twice: %d, want 409", code)
	}
	if code, _, raw := adminDo(t, a, adminToken, "POST", "/admin/v1/teams", `{"name":"x","team":"y"}`); code != 400 || !strings.Contains(raw, `"field":"team"`) {
		t.Errorf("create with a key's member: %d %s", code, raw)
	}
	if code, _, raw := adminDo(t, a, adminToken, "POST", "/admin/v1/teams", `{"name":"x","models":["[x"]}`); code != 400 || !strings.Contains(raw, "invalid glob") {
		t.Errorf("create with a bad glob: %d %s", code, raw)
	}

	if code, _, _ := adminDo(t, a, adminToken, "DELETE", "/admin/v1/teams/research", ""); code != 204 {
		t.Errorf("delete team: %d", code)
	}
	code, _, raw = adminDo(t, a, adminToken, "GET", "/admin/v1/audit?target=team/research", "")
	if code != 200 || strings.Count(raw, `"action":"team_`) != 3 || !strings.Contains(raw, `"actor":"ops"`) {
		t.Errorf("the team's audit: %d %s", code, raw)
	}
}
