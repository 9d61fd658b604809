package proxy_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"

	"github.com/agate-gateway/agate/internal/gatewaytest"
	"github.com/agate-gateway/agate/proxy"
)

// TestBudgets_SeededWhenGiven: a key (or team) without a budget spends (a request spends
// 2 tokens); a budget of 1 token is then given to it, through the admin API or a reload;
// its next request is refused with insufficient_quota, on a SQLite and a PostgreSQL
// ledger: the new budget starts from what the ledger's rollups say was spent in its
// period, not from zero. The ledger flushes once an hour: what it holds is written
// before seeding.
func TestBudgets_SeededWhenGiven(t *testing.T) {
	t.Parallel() // its own gateway, fakes and servers (#54)
	for _, db := range []string{"sqlite", "postgres"} {
		t.Run(db, func(t *testing.T) {
			ledgerYAML := "ledger: {type: sqlite, path: " + sqliteLedgers.Fresh(t) + ", flush_interval: 1h}"
			if db == "postgres" {
				ledgerYAML = `ledger: {type: postgres, url: "` + postgres.NewDatabase(t) + `", flush_interval: 1h, spool_path: "off"}`
			}
			yaml := adminYAML(ledgerYAML)
			g := gatewaytest.StartYAML(t, yaml, gatewaytest.Options{Runtime: proxy.TestRuntime})
			refused := func(what, key string) {
				t.Helper()
				c := gatewaytest.OpenAI(g.V1(), key)
				_, err := c.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
					Model: "demo", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}})
				var apiErr *openai.Error
				if !errors.As(err, &apiErr) || apiErr.StatusCode != 429 || apiErr.Code != "insufficient_quota" {
					t.Errorf("%s: %v; want 429 insufficient_quota (spent before the budget was given)", what, err)
				}
			}
			spend := func(what, key string) {
				t.Helper()
				if code := chatStatus(t, g, key, "demo"); code != 200 {
					t.Fatalf("%s, without a budget: status %d, want 200", what, code)
				}
			}

			// A database key: a budget through the admin API.
			code, m, raw := adminDo(t, g, adminToken, "POST", "/admin/v1/keys", `{"name":"late","models":["*"]}`)
			if code != 201 {
				t.Fatalf("create key: %d %s", code, raw)
			}
			late := m["secret"].(string)
			spend("the database key", late)
			if code, _, raw := adminDo(t, g, adminToken, "PATCH", "/admin/v1/keys/late", `{"budget":{"tokens":1,"period":"24h"}}`); code != 200 {
				t.Fatalf("give the key a budget: %d %s", code, raw)
			}
			refused("the database key after its budget came through the admin API", late)

			// A team: a budget through the admin API.
			code, m, raw = adminDo(t, g, adminToken, "POST", "/admin/v1/keys", `{"name":"member","models":["*"],"team":"research"}`)
			if code != 201 {
				t.Fatalf("create key: %d %s", code, raw)
			}
			member := m["secret"].(string)
			spend("the team's key", member)
			if code, _, raw := adminDo(t, g, adminToken, "POST", "/admin/v1/teams", `{"name":"research","budget":{"tokens":1,"period":"24h"}}`); code != 201 {
				t.Fatalf("create the team with a budget: %d %s", code, raw)
			}
			refused("the team's key after its team's budget came through the admin API", member)

			// A config key: a budget through a reload.
			spend("the config key", "sk-file")
			reloaded := strings.Replace(yaml, `fromfile: {key: sk-file, models: ["*"], team: platform}`,
				`fromfile: {key: sk-file, models: ["*"], team: platform, budget: {tokens: 1, period: 24h}}`, 1)
			if reloaded == yaml {
				t.Fatal("the config key's line was not found")
			}
			if err := g.Server.Apply(gatewaytest.Parse(t, reloaded)); err != nil {
				t.Fatal(err)
			}
			refused("the config key after its budget came through a reload", "sk-file")
		})
	}
}
