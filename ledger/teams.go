package ledger

import (
	"context"
	"database/sql"
	"errors"
	"time"
)

// The admin API's teams (schema version 3): agate_teams, one row per team made through
// the API. A change is audited and bumps agate_keys_version like a key's, so replicas
// read keys and teams again together.

// Team is a team kept in the database: the limits, budget and models its keys share.
type Team struct {
	Name string
	// Models, when set, narrows the models of the team's keys (globs).
	Models []string
	// Limits: requests and tokens per minute, concurrent requests (0: none).
	RequestsPerMinute, TokensPerMinute, Concurrent int
	// Budget: tokens and USD per BudgetPeriod (0: none; period 0: the default).
	BudgetTokens     int
	BudgetUSD        float64
	BudgetPeriod     time.Duration
	Created, Updated time.Time
}

// ErrTeamNotFound and ErrTeamExists are the team store's errors for a missing or
// duplicate name.
var (
	ErrTeamNotFound = errors.New("ledger: no such team")
	ErrTeamExists   = errors.New("ledger: a team of that name exists")
)

// teamsDDL is schema version 3 (both databases).
func teamsDDL(bigint, double string) string {
	return `CREATE TABLE agate_teams (
  name TEXT PRIMARY KEY,
  models TEXT NOT NULL,
  requests_per_minute INTEGER NOT NULL,
  tokens_per_minute INTEGER NOT NULL,
  concurrent INTEGER NOT NULL,
  budget_tokens ` + bigint + ` NOT NULL,
  budget_usd ` + double + ` NOT NULL,
  budget_period_s ` + bigint + ` NOT NULL,
  created_us ` + bigint + ` NOT NULL,
  updated_us ` + bigint + ` NOT NULL
);
`
}

const teamColumns = `name, models, requests_per_minute, tokens_per_minute, concurrent, budget_tokens, budget_usd,
  budget_period_s, created_us, updated_us`

func teamArgs(t *Team) []any {
	return []any{t.Name, list(t.Models), t.RequestsPerMinute, t.TokensPerMinute, t.Concurrent, t.BudgetTokens, t.BudgetUSD,
		int64(t.BudgetPeriod / time.Second), micros(t.Created), micros(t.Updated)}
}

func scanTeam(row scanner) (Team, error) {
	var t Team
	var models string
	var period, created, updated int64
	err := row.Scan(&t.Name, &models, &t.RequestsPerMinute, &t.TokensPerMinute, &t.Concurrent, &t.BudgetTokens, &t.BudgetUSD,
		&period, &created, &updated)
	t.Models, t.BudgetPeriod = unlist(models), time.Duration(period)*time.Second
	t.Created, t.Updated = fromMicros(created), fromMicros(updated)
	return t, err
}

// Teams returns every database team, by name.
func (l *Ledger) Teams(ctx context.Context) ([]Team, error) {
	return queryAll(ctx, l.st.db, "teams", `SELECT `+teamColumns+` FROM agate_teams ORDER BY name`, scanTeam)
}

// Team returns the database team name, or ErrTeamNotFound.
func (l *Ledger) Team(ctx context.Context, name string) (Team, error) {
	t, err := scanTeam(l.st.db.QueryRowContext(ctx, l.st.d.bind(`SELECT `+teamColumns+` FROM agate_teams WHERE name = ?`), name))
	if errors.Is(err, sql.ErrNoRows) {
		return Team{}, ErrTeamNotFound
	}
	return t, err
}

// TeamChange is one change to the teams: the team written (nil to delete Name), and its
// audit record.
type TeamChange struct {
	Name   string
	Create bool
	Put    *Team
	Audit  Audit
}

// ChangeTeam applies c in one transaction with its audit record and the version bump
// (the keys' version: replicas read keys and teams again): Create inserts
// (ErrTeamExists when the name is taken), otherwise Put replaces the team Name and a
// nil Put deletes it (ErrTeamNotFound when there is none).
func (l *Ledger) ChangeTeam(ctx context.Context, c TeamChange) error {
	rc := rowChange{what: "team " + c.Name, errExists: ErrTeamExists, errNotFound: ErrTeamNotFound}
	switch {
	case c.Create:
		rc.taken, rc.takenArgs = `SELECT COUNT(*) FROM agate_teams WHERE name = ?`, []any{c.Put.Name}
		rc.exec, rc.args = `INSERT INTO agate_teams (`+teamColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, teamArgs(c.Put)
	case c.Put != nil:
		rc.exec, rc.args = `UPDATE agate_teams SET models = ?, requests_per_minute = ?, tokens_per_minute = ?,
  concurrent = ?, budget_tokens = ?, budget_usd = ?, budget_period_s = ?, created_us = ?, updated_us = ? WHERE name = ?`, append(teamArgs(c.Put)[1:], c.Name)
	default:
		rc.exec, rc.args = `DELETE FROM agate_teams WHERE name = ?`, []any{c.Name}
	}
	return l.changeRow(ctx, rc, c.Audit)
}
