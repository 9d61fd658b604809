package config

import (
	"fmt"
	"math"
	"path"
	"slices"
)

// Team is a group of keys (a key joins one with keys.<name>.team) whose limits and
// budget are shared by all its keys, on top of each key's own: a request of a key of the
// team is admitted only while the key's limits, the team's and the model's all let it
// through, and it is charged to the key's budget and to the team's. Across replicas they
// are exact with state redis, like the keys'. A key's team that is not configured (here or
// through the admin API) is a label of its usage only.
type Team struct {
	// Budget caps the team's tokens and spend per period, all its keys together. Zero
	// fields mean no cap; the period defaults to 720h (30 days), as a key's.
	Budget Budget `koanf:"budget"`
	// Limits bound the team's requests, tokens and concurrent requests per minute, all
	// its keys together. Zero fields mean no limit.
	Limits Limits `koanf:"limits"`
	// Models, when set, narrows the models of every key of the team: a key may use a model
	// that both its own models and these globs (path.Match, as a key's) allow. Empty
	// means the keys' own lists alone.
	Models []string `koanf:"models"`
}

// globs checks a models list (a key's, a team's): non-empty path.Match patterns.
func (v *validator) globs(p string, globs []string) {
	for i, glob := range globs {
		gp := fmt.Sprintf("%s[%d]", p, i)
		if glob == "" {
			v.addf(gp, "must not be empty")
		} else if _, err := path.Match(glob, ""); err != nil {
			v.addf(gp, "invalid glob %q", glob)
		}
	}
}

func (c *Config) teamDefaults() {
	for name, t := range c.Teams {
		setDefault(&t.Budget.Period, defaultBudgetPeriod)
		c.Teams[name] = t
	}
}

// validateTeams checks each team's limits, budget and model globs, and that the keys of a
// team with a usd budget can reach priced models only.
func (c *Config) validateTeams(v *validator) {
	for name, t := range c.Teams {
		p := "teams." + name
		v.name("teams", name, false)
		validateLimitFields(v, p+".limits", t.Limits)
		v.nonNegative(p+".budget.tokens", t.Budget.Tokens)
		if t.Budget.USD < 0 || math.IsNaN(t.Budget.USD) || math.IsInf(t.Budget.USD, 0) {
			v.addf(p+".budget.usd", "must be a non-negative number")
		}
		v.nonNegativeDuration(p+".budget.period", t.Budget.Period)
		v.globs(p+".models", t.Models)
		if t.Budget.USD <= 0 {
			continue
		}
		var teamUnpriced []string
		if len(t.Models) > 0 {
			teamUnpriced = c.unpricedModels(t.Models)
		}
		for keyName, k := range c.Keys {
			if k.Team != name {
				continue
			}
			for _, model := range c.unpricedModels(k.Models) {
				if len(t.Models) == 0 || slices.Contains(teamUnpriced, model) {
					v.addf(p+".budget.usd", "key %s of the team can use model %q, which has no price (set models.%s.price or narrow keys.%s.models or teams.%s.models)",
						keyName, model, model, keyName, name)
				}
			}
		}
	}
}
