package ledger_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agate-gateway/agate/ledger"
)

// TestLedger_Teams: teams are created, read, replaced and deleted, each change audited
// and bumping the version replicas poll; names are unique.
func TestLedger_Teams(t *testing.T) {
	databases(t, func(t *testing.T, opts ledger.Options) {
		l := open(t, opts)
		ctx := context.Background()
		now := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
		eng := ledger.Team{Name: "eng", Models: []string{"claude-*", "gpt-5"}, RequestsPerMinute: 60, Concurrent: 4,
			BudgetTokens: 1000, BudgetUSD: 12.5, BudgetPeriod: 24 * time.Hour, Created: now, Updated: now}
		audit := func(action string) ledger.Audit {
			return ledger.Audit{Time: now, Actor: "root", Action: action, Target: "eng", After: "{}"}
		}
		v0, _ := l.KeysVersion(ctx)
		if err := l.ChangeTeam(ctx, ledger.TeamChange{Name: "eng", Create: true, Put: &eng, Audit: audit("team_create")}); err != nil {
			t.Fatal(err)
		}
		if err := l.ChangeTeam(ctx, ledger.TeamChange{Name: "eng", Create: true, Put: &eng, Audit: audit("team_create")}); !errors.Is(err, ledger.ErrTeamExists) {
			t.Errorf("second create: %v, want ErrTeamExists", err)
		}
		got, err := l.Team(ctx, "eng")
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(eng, got); diff != "" {
			t.Errorf("team (-want +got):\n%s", diff)
		}
		upd := eng
		upd.Models, upd.TokensPerMinute = nil, 500
		if err := l.ChangeTeam(ctx, ledger.TeamChange{Name: "eng", Put: &upd, Audit: audit("team_update")}); err != nil {
			t.Fatal(err)
		}
		all, err := l.Teams(ctx)
		if err != nil || len(all) != 1 || all[0].TokensPerMinute != 500 || all[0].Models != nil {
			t.Errorf("Teams = %+v, %v; want eng updated", all, err)
		}
		if err := l.ChangeTeam(ctx, ledger.TeamChange{Name: "eng", Audit: audit("team_delete")}); err != nil {
			t.Fatal(err)
		}
		if _, err := l.Team(ctx, "eng"); !errors.Is(err, ledger.ErrTeamNotFound) {
			t.Errorf("after delete: %v, want ErrTeamNotFound", err)
		}
		if err := l.ChangeTeam(ctx, ledger.TeamChange{Name: "eng", Audit: audit("team_delete")}); !errors.Is(err, ledger.ErrTeamNotFound) {
			t.Errorf("deleting none: %v, want ErrTeamNotFound", err)
		}
		if v, _ := l.KeysVersion(ctx); v != v0+3 {
			t.Errorf("version moved %d, want 3 (one per change)", v-v0)
		}
		if log, err := l.AuditLog(ctx, "eng", 10); err != nil || len(log) != 3 || log[0].Action != "team_delete" {
			t.Errorf("audit log: %+v, %v", log, err)
		}
	})
}
