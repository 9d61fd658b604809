package proxy

import (
	"context"
	"errors"
	"sort"
	"strconv"
	"time"

	"github.com/agate-gateway/agate/config"
	"github.com/agate-gateway/agate/internal/jsonx"
	"github.com/agate-gateway/agate/ledger"
)

// This file is the admin API's teams: database teams (created, changed and deleted
// through /admin/v1/teams) merged into the runtime like database keys, config-file teams
// read-only, and teams that keys only name (labels).

// TeamStore is a key store that also keeps teams (*ledger.Ledger is one). Without it the
// teams routes list config teams and labels only and refuse changes.
type TeamStore interface {
	Teams(ctx context.Context) ([]ledger.Team, error)
	Team(ctx context.Context, name string) (ledger.Team, error)
	ChangeTeam(ctx context.Context, c ledger.TeamChange) error
}

// dbTeams reads the database teams, none when the key store keeps none.
func (s *Server) dbTeams(ctx context.Context) ([]ledger.Team, error) {
	ts, ok := s.keyStore.(TeamStore)
	if !ok {
		return nil, nil
	}
	return ts.Teams(ctx)
}

// configTeam is t as a config team.
func configTeam(t *ledger.Team) config.Team {
	ct := config.Team{Models: t.Models,
		Limits: config.Limits{RequestsPerMinute: t.RequestsPerMinute, TokensPerMinute: t.TokensPerMinute, Concurrent: t.Concurrent},
		Budget: config.Budget{Tokens: t.BudgetTokens, USD: t.BudgetUSD, Period: t.BudgetPeriod}}
	if ct.Budget.Period == 0 {
		ct.Budget.Period = 720 * time.Hour // config's default budget period
	}
	return ct
}

// withTeams returns cfg with the database teams added to its teams (a config team of the
// same name wins).
func withTeams(cfg *config.Config, teams []ledger.Team) *config.Config {
	if len(teams) == 0 {
		return cfg
	}
	c := *cfg
	c.Teams = make(map[string]config.Team, len(cfg.Teams)+len(teams))
	for n, t := range cfg.Teams {
		c.Teams[n] = t
	}
	for i := range teams {
		if _, clash := cfg.Teams[teams[i].Name]; !clash {
			c.Teams[teams[i].Name] = configTeam(&teams[i])
		}
	}
	return &c
}

// withValidTeams is withTeams leaving out (and logging) a database team the config
// refuses (a usd budget over a model a reload left unpriced, say).
func (s *Server) withValidTeams(cfg *config.Config, teams []ledger.Team) *config.Config {
	merged := withTeams(cfg, teams)
	if merged == cfg || merged.Validate() == nil || cfg.Validate() != nil {
		return merged
	}
	var ok []ledger.Team
	for _, t := range teams {
		if err := withTeams(cfg, []ledger.Team{t}).Validate(); err != nil {
			s.logger.Warn("database team left out: the config refuses it", "team", t.Name, "error", err.Error())
			continue
		}
		ok = append(ok, t)
	}
	return withTeams(cfg, ok)
}

// runtimeTeams are the teams in force: the config's and the database's the running
// runtime was built with.
func (s *Server) runtimeTeams() (cfg *config.Config, db []ledger.Team) {
	cfg = s.runtime().cfg
	if set := s.dbKeys.Load(); set != nil {
		db = set.teams
	}
	return cfg, db
}

// checkTeam holds t to the config's rules for teams (limits, model globs, a usd budget
// only over priced models for every key of the team, database keys included).
func (s *Server) checkTeam(t *ledger.Team) error {
	cfg, _ := s.runtimeTeams()
	merged := withTeams(cfg, []ledger.Team{*t})
	if set := s.dbKeys.Load(); set != nil {
		merged, _ = withKeys(merged, set.keys, time.Now())
	}
	return entryRefusal(merged.Validate(), "teams."+t.Name) // admin_keys.go
}

// teamKeys maps each team to the names of its keys, config and database keys alike.
func (s *Server) teamKeys() map[string][]string {
	out := map[string][]string{}
	for n, k := range s.runtime().cfg.Keys {
		if k.Team != "" {
			out[k.Team] = append(out[k.Team], n)
		}
	}
	if set := s.dbKeys.Load(); set != nil {
		for _, k := range set.keys {
			if k.Team != "" {
				out[k.Team] = append(out[k.Team], k.Name)
			}
		}
	}
	for _, l := range out {
		sort.Strings(l)
	}
	return out
}

// appendTeamView appends the API's view of a team: source is "config" (read-only),
// "database" or "label" (named by keys only: no limits of its own).
func appendTeamView(b []byte, name, source string, t config.Team, keys []string, created, updated time.Time) []byte {
	b = jsonx.AppendString(append(b, `{"name":`...), name)
	b = jsonx.AppendString(append(b, `,"source":`...), source)
	b = strconv.AppendBool(append(b, `,"read_only":`...), source == "config")
	b = appendStrings(append(b, `,"models":`...), t.Models)
	b = appendLimits(b, t.Limits.RequestsPerMinute, t.Limits.TokensPerMinute, t.Limits.Concurrent, t.Budget.Tokens, t.Budget.USD, t.Budget.Period)
	b = appendStrings(append(b, `,"keys":`...), keys)
	b = appendTime(append(b, `,"created_at":`...), created)
	b = appendTime(append(b, `,"updated_at":`...), updated)
	return append(b, '}')
}

// appendDBTeamView appends the view of a database team.
func appendDBTeamView(b []byte, t *ledger.Team, keys []string) []byte {
	return appendTeamView(b, t.Name, "database", configTeam(t), keys, t.Created, t.Updated)
}

// adminTeams lists the teams: the config's, the database's, and the teams keys name
// without either (labels), each with its keys.
func (s *Server) adminTeams(a *adminCall) error {
	cfg, db := s.runtimeTeams()
	keys := s.teamKeys()
	type view struct {
		name string
		db   *ledger.Team
	}
	var all []view
	seen := map[string]bool{}
	for n := range cfg.Teams {
		all, seen[n] = append(all, view{name: n}), true
	}
	for i := range db {
		if !seen[db[i].Name] {
			all, seen[db[i].Name] = append(all, view{name: db[i].Name, db: &db[i]}), true
		}
	}
	for n := range keys {
		if !seen[n] {
			all, seen[n] = append(all, view{name: n}), true
		}
	}
	sort.Slice(all, func(i, j int) bool { return all[i].name < all[j].name })
	b := append(make([]byte, 0, 256), `{"data":[`...)
	for i, v := range all {
		if i > 0 {
			b = append(b, ',')
		}
		switch ct, ok := cfg.Teams[v.name]; {
		case ok:
			b = appendTeamView(b, v.name, "config", ct, keys[v.name], time.Time{}, time.Time{})
		case v.db != nil:
			b = appendDBTeamView(b, v.db, keys[v.name])
		default:
			b = appendTeamView(b, v.name, "label", config.Team{}, keys[v.name], time.Time{}, time.Time{})
		}
	}
	writeAdminJSON(a.ctx, 200, append(b, "]}"...))
	return nil
}

// teamStore returns the key store's teams, or a 501 when it keeps none.
func (s *Server) teamStore() (TeamStore, error) {
	ts, ok := s.keyStore.(TeamStore)
	if !ok {
		return nil, &adminError{status: 501, code: "not_supported", msg: "this gateway's key store keeps no teams"}
	}
	return ts, nil
}

// dbTeam returns the database team of a's {name}: 403 for a config team, 404 for none.
func (s *Server) dbTeam(a *adminCall) (ledger.Team, error) {
	if _, ok := s.runtime().cfg.Teams[a.name]; ok {
		return ledger.Team{}, &adminError{status: 403, code: "read_only", msg: "team " + truncate(a.name, 64) + " is in the config file: change it there"}
	}
	ts, err := s.teamStore()
	if err != nil {
		return ledger.Team{}, err
	}
	ctx, cancel := s.adminCtx()
	defer cancel()
	t, err := ts.Team(ctx, a.name)
	if errors.Is(err, ledger.ErrTeamNotFound) {
		return t, notFound("no team " + strconv.Quote(truncate(a.name, 64)) + " in the database")
	}
	return t, err
}

func (s *Server) adminGetTeam(a *adminCall) error {
	if ct, ok := s.runtime().cfg.Teams[a.name]; ok {
		writeAdminJSON(a.ctx, 200, appendTeamView(nil, a.name, "config", ct, s.teamKeys()[a.name], time.Time{}, time.Time{}))
		return nil
	}
	t, err := s.dbTeam(a)
	if err != nil {
		return err
	}
	writeAdminJSON(a.ctx, 200, appendDBTeamView(nil, &t, s.teamKeys()[t.Name]))
	return nil
}

// applyTeam sets t's fields from p (models, limits, budget).
func (p *keyPatch) applyTeam(t *ledger.Team) {
	var k ledger.Key
	k.Models, k.RequestsPerMinute, k.TokensPerMinute, k.Concurrent = t.Models, t.RequestsPerMinute, t.TokensPerMinute, t.Concurrent
	k.BudgetTokens, k.BudgetUSD, k.BudgetPeriod = t.BudgetTokens, t.BudgetUSD, t.BudgetPeriod
	p.apply(&k)
	t.Models, t.RequestsPerMinute, t.TokensPerMinute, t.Concurrent = k.Models, k.RequestsPerMinute, k.TokensPerMinute, k.Concurrent
	t.BudgetTokens, t.BudgetUSD, t.BudgetPeriod = k.BudgetTokens, k.BudgetUSD, k.BudgetPeriod
}

// changeTeam writes a team's change with its audit record (target "team/<name>") and
// puts it in force on this replica at once; the others see the version move.
func (s *Server) changeTeam(a *adminCall, action string, before, after *ledger.Team, create bool) error {
	ts, err := s.teamStore()
	if err != nil {
		return err
	}
	keys := s.teamKeys()
	c := ledger.TeamChange{Create: create, Put: after, Audit: ledger.Audit{Time: time.Now(), Actor: a.actor, Action: action}}
	if before != nil {
		c.Name, c.Audit.Before = before.Name, string(appendDBTeamView(nil, before, keys[before.Name]))
	}
	if after != nil {
		c.Name, c.Audit.After = after.Name, string(appendDBTeamView(nil, after, keys[after.Name]))
	}
	c.Audit.Target = "team/" + c.Name
	ctx, cancel := s.adminCtx()
	defer cancel()
	switch err := ts.ChangeTeam(ctx, c); {
	case errors.Is(err, ledger.ErrTeamExists):
		return &adminError{status: 409, code: "exists", msg: "a team named " + strconv.Quote(c.Name) + " exists", field: "name"}
	case errors.Is(err, ledger.ErrTeamNotFound):
		return notFound("no team " + strconv.Quote(c.Name) + " in the database")
	case err != nil:
		return err
	}
	return s.refreshKeys(true)
}

func (s *Server) adminCreateTeam(a *adminCall) error {
	p, err := parseKeyPatch(a.ctx.PostBody(), "name", "models", "limits", "budget")
	if err != nil {
		return err
	}
	if p.name == nil || !keyNamePattern.MatchString(*p.name) {
		return badRequest("name", "required: 1 to 64 of A-Z a-z 0-9 . _ - (starting with a letter or digit)")
	}
	if _, ok := s.runtime().cfg.Teams[*p.name]; ok {
		return &adminError{status: 409, code: "exists", msg: "a team named " + strconv.Quote(*p.name) + " is in the config file", field: "name"}
	}
	now := time.Now().UTC().Truncate(time.Microsecond)
	t := ledger.Team{Name: *p.name, Created: now, Updated: now}
	p.applyTeam(&t)
	if err := s.checkTeam(&t); err != nil {
		return err
	}
	if err := s.changeTeam(a, "team_create", nil, &t, true); err != nil {
		return err
	}
	writeAdminJSON(a.ctx, 201, appendDBTeamView(nil, &t, s.teamKeys()[t.Name]))
	return nil
}

func (s *Server) adminUpdateTeam(a *adminCall) error {
	before, err := s.dbTeam(a)
	if err != nil {
		return err
	}
	p, err := parseKeyPatch(a.ctx.PostBody(), "models", "limits", "budget")
	if err != nil {
		return err
	}
	after := before
	p.applyTeam(&after)
	after.Updated = time.Now().UTC().Truncate(time.Microsecond)
	if err := s.checkTeam(&after); err != nil {
		return err
	}
	if err := s.changeTeam(a, "team_update", &before, &after, false); err != nil {
		return err
	}
	writeAdminJSON(a.ctx, 200, appendDBTeamView(nil, &after, s.teamKeys()[after.Name]))
	return nil
}

func (s *Server) adminDeleteTeam(a *adminCall) error {
	before, err := s.dbTeam(a)
	if err != nil {
		return err
	}
	if err := s.changeTeam(a, "team_delete", &before, nil, false); err != nil {
		return err
	}
	a.ctx.SetStatusCode(204)
	return nil
}
