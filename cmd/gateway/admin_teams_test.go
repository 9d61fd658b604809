package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/agate-gateway/agate/internal/gatewaytest"
)

// TestAdminCLI_Teams: `gateway admin teams` creates, reads, changes and deletes a
// database team through the admin API, as a user would: the team's limit binds its key
// at once, a config team is read-only, and the API's errors are the command's.
func TestAdminCLI_Teams(t *testing.T) {
	token := "cli-admin-token"
	d := sha256.Sum256([]byte(token))
	g := gatewaytest.StartYAML(t, `
backends: {offline: {type: mock}}
models: {demo: {backend: offline, price: {input: 1, output: 1}}, other: {backend: offline, price: {input: 1, output: 1}}}
keys: {fromfile: {key: sk-file, models: ["*"], team: platform}}
teams: {platform: {limits: {concurrent: 10}}}
ledger: {type: sqlite, path: `+sqliteLedgers.Fresh(t)+`, flush_interval: 10ms}
admin: {keys: {ops: {key_sha256: `+hex.EncodeToString(d[:])+`}}}
`, gatewaytest.Options{})
	env := []string{"AGATE_ADMIN_URL=" + g.URL, "AGATE_ADMIN_TOKEN=" + token}
	admin := func(args ...string) (string, error) {
		var out, errb bytes.Buffer
		err := run(append([]string{"admin"}, args...), env, &out, &errb, nil)
		return out.String(), err
	}
	out, err := admin("keys", "create", "--name", "r1", "--models", "*", "--team", "research")
	if err != nil {
		t.Fatal(err)
	}
	secret := regexp.MustCompile(`agk_[0-9a-f]{64}`).FindString(out)

	out, err = admin("teams", "create", "--name", "research", "--models", "demo", "--rpm", "1", "--budget-usd", "2.5", "--budget-period", "24h")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"name":"research"`, `"source":"database"`, `"models":["demo"]`, `"requests_per_minute":1`, `"usd":2.5`, `"period":"24h0m0s"`, `"keys":["r1"]`} {
		if !strings.Contains(out, want) {
			t.Errorf("create printed %s; want %s", out, want)
		}
	}
	if got := teamChat(t, g, secret, "other"); got != 404 {
		t.Errorf("the team's key to a model the team does not allow: %d, want 404", got)
	}
	if got := teamChat(t, g, secret, "demo"); got != 200 {
		t.Errorf("the team's key, first request: %d, want 200", got)
	}
	if got := teamChat(t, g, secret, "demo"); got != 429 {
		t.Errorf("the team's key over the team's requests per minute: %d, want 429", got)
	}

	// update changes only what it is given.
	out, err = admin("teams", "update", "research", "--rpm", "0", "--models", "")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, `"usd":2.5`) || strings.Contains(out, `"models":["demo"]`) || strings.Contains(out, `"requests_per_minute":1`) {
		t.Errorf("update printed %s; want the limit and models gone, the budget kept", out)
	}
	if got := teamChat(t, g, secret, "other"); got != 200 {
		t.Errorf("after the update: %d, want 200", got)
	}

	if out, err := admin("teams", "get", "research"); err != nil || !strings.Contains(out, `"name":"research"`) {
		t.Errorf("get: %s %v", out, err)
	}
	if out, err := admin("teams", "list"); err != nil || !strings.Contains(out, `"name":"platform","source":"config"`) || !strings.Contains(out, `"name":"research"`) {
		t.Errorf("list: %s %v", out, err)
	}
	if _, err := admin("teams", "update", "platform", "--rpm", "5"); err == nil || !strings.Contains(err.Error(), "403") || !strings.Contains(err.Error(), "read_only") {
		t.Errorf("update a config team: %v, want the API's 403 read_only", err)
	}
	if _, err := admin("teams", "delete", "research"); err != nil {
		t.Fatal(err)
	}
	if _, err := admin("teams", "get", "research"); err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("get after delete: %v, want the API's 404", err)
	}
}

// teamChat is the status of a chat request with key to model.
func teamChat(t *testing.T, g *gatewaytest.Gateway, key, model string) int {
	t.Helper()
	req, _ := http.NewRequest("POST", g.V1()+"/chat/completions", strings.NewReader(`{"model":"`+model+`","messages":[{"role":"user","content":"hi"}]}`))
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// TestAdminRequest_Teams: each teams command line and the request it makes.
func TestAdminRequest_Teams(t *testing.T) {
	for _, tc := range []struct {
		args               []string
		method, path, body string
		err                string
	}{
		{args: []string{"teams", "list"}, method: "GET", path: "/admin/v1/teams"},
		{args: []string{"teams", "get", "a b"}, method: "GET", path: "/admin/v1/teams/a%20b"},
		{args: []string{"teams", "delete", "ops"}, method: "DELETE", path: "/admin/v1/teams/ops"},
		{args: []string{"teams", "create", "--name", "ops"}, method: "POST", path: "/admin/v1/teams",
			body: `{"name":"ops","limits":{"requests_per_minute":0,"tokens_per_minute":0,"concurrent":0},"budget":{"tokens":0,"usd":0}}`},
		{args: []string{"teams", "create", "--name", "ops", "--models", "a, b", "--tpm", "100", "--budget-tokens", "5", "--budget-period", "1h"},
			method: "POST", path: "/admin/v1/teams",
			body: `{"name":"ops","models":["a","b"],"limits":{"requests_per_minute":0,"tokens_per_minute":100,"concurrent":0},"budget":{"tokens":5,"usd":0,"period":"1h"}}`},
		{args: []string{"teams", "update", "ops", "--budget-usd", "1.5"}, method: "PATCH", path: "/admin/v1/teams/ops", body: `{ "budget":{"usd":1.5}}`},
		{args: []string{"teams", "update", "ops", "--concurrent", "2", "--models", ""}, method: "PATCH", path: "/admin/v1/teams/ops",
			body: `{ "models":[],"limits":{"concurrent":2}}`},
		{args: []string{"teams", "create"}, err: "--name is required"},
		{args: []string{"teams", "get"}, err: "name the team"},
		{args: []string{"teams", "update", "ops"}, err: "nothing to change"},
		{args: []string{"teams", "update", "ops", "--name", "x"}, err: "cannot be renamed"},
		{args: []string{"teams", "rename", "ops"}, err: `unknown command "teams rename"`},
		{args: []string{"keys", "rotate", "k", "--grace", "2h"}, method: "POST", path: "/admin/v1/keys/k/rotate", body: `{"grace":"2h"}`},
		{args: []string{"keys", "rotate", "--grace", "2h", "k"}, method: "POST", path: "/admin/v1/keys/k/rotate", body: `{"grace":"2h"}`},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			method, path, body, err := adminRequest(tc.args, io.Discard)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || method != tc.method || path != tc.path || string(body) != tc.body {
				t.Fatalf("%s %s %s (%v); want %s %s %s", method, path, body, err, tc.method, tc.path, tc.body)
			}
			if body != nil && !json.Valid(body) {
				t.Errorf("the body is not JSON: %s", body)
			}
		})
	}
}
