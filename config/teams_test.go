package config

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestValidate_Teams(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*Config)
		want   string // the whole error; "" means valid
	}{
		{
			name: "a team with limits, a budget and models is valid",
			mutate: func(c *Config) {
				c.Teams = map[string]Team{"eng": {Limits: Limits{RequestsPerMinute: 10, Concurrent: 2},
					Budget: Budget{Tokens: 1000, Period: time.Hour}, Models: []string{"claude-*"}}}
			},
		},
		{
			name:   "negative team limit",
			mutate: func(c *Config) { c.Teams = map[string]Team{"eng": {Limits: Limits{TokensPerMinute: -1}}} },
			want:   "config: teams.eng.limits.tokens_per_minute: must not be negative",
		},
		{
			name:   "negative team budget",
			mutate: func(c *Config) { c.Teams = map[string]Team{"eng": {Budget: Budget{USD: -1}}} },
			want:   "config: teams.eng.budget.usd: must be a non-negative number",
		},
		{
			name:   "invalid team model glob",
			mutate: func(c *Config) { c.Teams = map[string]Team{"eng": {Models: []string{"[x"}}} },
			want:   `config: teams.eng.models[0]: invalid glob "[x"`,
		},
		{
			name: "team usd budget reaching an unpriced model through a key of the team",
			mutate: func(c *Config) {
				k := c.Keys["ci"]
				k.Team = "eng"
				c.Keys["ci"] = k
				c.Teams = map[string]Team{"eng": {Budget: Budget{USD: 5}}}
			},
			want: `config: teams.eng.budget.usd: key ci of the team can use model "demo", which has no price (set models.demo.price or narrow keys.ci.models or teams.eng.models)`,
		},
		{
			name: "team usd budget with the team's models narrowed to priced ones is valid",
			mutate: func(c *Config) {
				k := c.Keys["ci"]
				k.Team = "eng"
				c.Keys["ci"] = k
				c.Teams = map[string]Team{"eng": {Budget: Budget{USD: 5}, Models: []string{"claude-sonnet", "claude/*"}}}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := validConfig()
			tt.mutate(c)
			got := ""
			if err := c.Validate(); err != nil {
				got = err.Error()
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Validate() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDefaults_TeamBudgetPeriod(t *testing.T) {
	c, err := Parse([]byte("backends: {b: {type: mock}}\nteams: {eng: {budget: {tokens: 5}}}\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Teams["eng"].Budget.Period; got != 720*time.Hour {
		t.Errorf("teams.eng.budget.period = %v, want the default 720h", got)
	}
}
