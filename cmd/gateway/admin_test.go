package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/agate-gateway/agate/internal/gatewaytest"
)

// sqliteLedgers makes this binary's SQLite ledger files, copies of one migrated file.
var sqliteLedgers gatewaytest.SQLiteLedgers

// TestAdminCLI: `gateway admin keys create` creates a key through the admin API, its
// secret works at once, and list, usage and errors read as a user expects.
func TestAdminCLI(t *testing.T) {
	token := "cli-admin-token"
	d := sha256.Sum256([]byte(token))
	g := gatewaytest.StartYAML(t, `
backends: {offline: {type: mock}}
models: {demo: {backend: offline, price: {input: 1, output: 1}}}
keys: {fromfile: {key: sk-file, models: ["*"]}}
ledger: {type: sqlite, path: `+sqliteLedgers.Fresh(t)+`, flush_interval: 10ms}
admin: {keys: {ops: {key_sha256: `+hex.EncodeToString(d[:])+`}}}
`, gatewaytest.Options{})
	env := []string{"AGATE_ADMIN_URL=" + g.URL, "AGATE_ADMIN_TOKEN=" + token}
	admin := func(args ...string) (string, error) {
		var out, errb bytes.Buffer
		err := run(append([]string{"admin"}, args...), env, &out, &errb, nil)
		return out.String(), err
	}
	out, err := admin("keys", "create", "--name", "ci", "--models", "demo", "--team", "research", "--budget-usd", "5")
	if err != nil {
		t.Fatal(err)
	}
	secret := regexp.MustCompile(`agk_[0-9a-f]{64}`).FindString(out)
	if secret == "" || !strings.Contains(out, `"team":"research"`) {
		t.Fatalf("create printed %s", out)
	}
	req, _ := http.NewRequest("POST", g.V1()+"/chat/completions", strings.NewReader(`{"model":"demo","messages":[{"role":"user","content":"hi"}]}`))
	req.Header.Set("Authorization", "Bearer "+secret)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("the created key: %d", resp.StatusCode)
	}
	if out, err := admin("keys", "list"); err != nil || !strings.Contains(out, `"name":"ci"`) || !strings.Contains(out, `"name":"fromfile"`) {
		t.Errorf("list: %s %v", out, err)
	}
	if out, err := admin("usage", "--group-by", "key", "--csv"); err != nil || !strings.HasPrefix(out, "key,requests,") {
		t.Errorf("usage: %q %v", out, err)
	}
	if _, err := admin("keys", "create", "--name", "fromfile"); err == nil || !strings.Contains(err.Error(), "409") {
		t.Errorf("create over a config key: %v, want the API's 409", err)
	}
	if err := run([]string{"admin", "keys", "list"}, []string{"AGATE_ADMIN_URL=" + g.URL}, &bytes.Buffer{}, &bytes.Buffer{}, nil); err == nil {
		t.Error("no AGATE_ADMIN_TOKEN: no error")
	}
}
