package proxy

import (
	"testing"
)

// TestLimits_TeamBudgetGauge: gateway_team_budget_remaining shows what is left of a
// team's budget once its keys' requests finish, in tokens and in USD, spent by two of
// its keys, with state in memory and in Redis; a key without a team sets none.
func TestLimits_TeamBudgetGauge(t *testing.T) {
	t.Parallel() // nothing shared, no clock or environment of the process (#54)
	for _, mode := range stateModes {
		t.Run(mode.name, func(t *testing.T) {
			rs := startReplicas(t, mode, `
backends: {offline: {type: mock}}
models:
  demo: {backend: offline, price: {input: 100000, output: 200000}}
keys:
  dave: {key: dave-key, models: ["*"], team: ops}
  erin: {key: erin-key, models: ["*"], team: ops}
  solo: {key: solo-key, models: ["*"], budget: {tokens: 50}}
teams:
  ops: {budget: {tokens: 1000, usd: 10}}
{{STATE}}
`, nil)
			// Each request: 2 prompt tokens at $0.10 and 2 completion tokens at $0.20.
			for _, key := range []string{"dave-key", "erin-key", "solo-key"} {
				if r := rs.replicas[0].chat(key, chatBody("demo", "hello there", false)); r.status != 200 {
					t.Fatalf("%s: %d %s", key, r.status, r.body)
				}
			}
			g := rs.replicas[0]
			if got := g.metricValue("gateway_team_budget_remaining", map[string]string{"team": "ops", "unit": "tokens"}); got != 1000-8 {
				t.Errorf("gateway_team_budget_remaining{team=ops,unit=tokens} = %v, want 992 (two requests of 4 tokens)", got)
			}
			if got := g.metricValue("gateway_team_budget_remaining", map[string]string{"team": "ops", "unit": "usd"}); got < 8.7999 || got > 8.8001 {
				t.Errorf("gateway_team_budget_remaining{team=ops,unit=usd} = %v, want 8.80 (two requests of $0.60)", got)
			}
			if got := g.metricValue("gateway_team_budget_remaining", map[string]string{"team": ""}); got != 0 {
				t.Errorf("a series for a key without a team: %v", got)
			}
		})
	}
}
