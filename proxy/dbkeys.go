package proxy

import (
	"context"
	"time"

	"github.com/agate-gateway/agate/config"
	"github.com/agate-gateway/agate/ledger"
)

// KeyStore is the database the admin API keeps client keys in (*ledger.Ledger is one),
// with the ledger's reports it serves.
type KeyStore interface {
	Keys(ctx context.Context) ([]ledger.Key, error)
	Key(ctx context.Context, name string) (ledger.Key, error)
	KeysVersion(ctx context.Context) (int64, error)
	ChangeKey(ctx context.Context, c ledger.KeyChange) error
	AuditLog(ctx context.Context, target string, limit int) ([]ledger.Audit, error)
	Usage(ctx context.Context, q ledger.UsageQuery) ([]ledger.UsageRow, error)
	Requests(ctx context.Context, q ledger.RequestQuery) ([]ledger.Record, string, error)
}

// dbKeySet is the database keys a runtime was built with: their version (KeysVersion),
// and the next time one of them expires or ends its rotation grace, when the runtime
// must be built again (zero: never).
type dbKeySet struct {
	keys    []ledger.Key
	teams   []ledger.Team // admin_teams.go
	version int64
	next    time.Time
}

// prevSuffix names, in the merged config, the entry of a rotated key's previous secret
// (its grace period): a name no key can have (the admin API allows [A-Za-z0-9._-]).
const prevSuffix = "\x00prev"

// configKey is k as a config key authenticated by digest.
func configKey(k *ledger.Key, digest string) config.Key {
	ck := config.Key{KeySHA256: digest, Models: k.Models, Tools: k.Tools, Team: k.Team,
		MaxToolIterations: config.DefaultMaxToolIterations, MaxToolCallsPerTurn: config.DefaultMaxToolCallsPerTurn,
		MaxConcurrentToolCalls: config.DefaultMaxConcurrentToolCalls,
		Limits:                 config.Limits{RequestsPerMinute: k.RequestsPerMinute, TokensPerMinute: k.TokensPerMinute, Concurrent: k.Concurrent},
		Budget:                 config.Budget{Tokens: k.BudgetTokens, USD: k.BudgetUSD, Period: k.BudgetPeriod}}
	if ck.Budget.Period == 0 {
		ck.Budget.Period = 720 * time.Hour // config's default budget period
	}
	return ck
}

// withKeys returns cfg with the database keys valid at now added to its keys (a config
// key of the same name wins), and when the set changes next.
func withKeys(cfg *config.Config, keys []ledger.Key, now time.Time) (*config.Config, time.Time) {
	if len(keys) == 0 {
		return cfg, time.Time{}
	}
	c := *cfg
	c.Keys = make(map[string]config.Key, len(cfg.Keys)+len(keys))
	for n, k := range cfg.Keys {
		c.Keys[n] = k
	}
	var next time.Time
	soonest := func(t time.Time) {
		if !t.IsZero() && t.After(now) && (next.IsZero() || t.Before(next)) {
			next = t
		}
	}
	for i := range keys {
		k := &keys[i]
		if _, clash := cfg.Keys[k.Name]; clash || !k.Valid(now) {
			continue
		}
		soonest(k.ExpiresAt)
		c.Keys[k.Name] = configKey(k, k.Digest)
		if k.PrevDigest != "" && now.Before(k.PrevUntil) {
			c.Keys[k.Name+prevSuffix] = configKey(k, k.PrevDigest)
			soonest(k.PrevUntil)
		}
	}
	return &c, next
}

// runtimeFor builds the runtime of cfg with the database keys of set, leaving out (and
// logging) a database key the config refuses (a tool a reload removed, say).
func (s *Server) runtimeFor(cfg *config.Config, set *dbKeySet, prev *runtime) (*runtime, time.Time, error) {
	if s.keyStore == nil {
		rt, err := buildRuntime(cfg, prev, s.logger, s.cloud)
		return rt, time.Time{}, err
	}
	configured := cfg
	var keys []ledger.Key
	if set != nil {
		keys = set.keys
		cfg = s.withValidTeams(cfg, set.teams) // admin_teams.go; rt.cfg below stays the configured one
	}
	now := time.Now()
	merged, next := withKeys(cfg, keys, now)
	if merged != cfg && merged.Validate() != nil {
		if err := cfg.Validate(); err != nil {
			return nil, time.Time{}, err
		}
		var ok []ledger.Key
		for _, k := range keys {
			one, _ := withKeys(cfg, []ledger.Key{k}, now)
			if err := one.Validate(); err != nil {
				s.logger.Warn("database key left out: the config refuses it", "key", k.Name, "error", err.Error())
				continue
			}
			ok = append(ok, k)
		}
		merged, next = withKeys(cfg, ok, now)
	}
	rt, err := buildRuntime(merged, prev, s.logger, s.cloud)
	if err != nil {
		return nil, time.Time{}, err
	}
	rt.cfg = configured // the config as configured: admin views, reloads and limits read it
	rt.open = false
	for _, k := range rt.keys {
		if len(k.name) > len(prevSuffix) && k.name[len(k.name)-len(prevSuffix):] == prevSuffix {
			k.name = k.name[:len(k.name)-len(prevSuffix)]
		}
	}
	return rt, next, nil
}

// syncKeys reads the database keys when their version moved (or a key's expiry or grace
// passed) and swaps in a runtime with them: every Resync until stop closes. Cached
// authentications belong to the runtime they were made under (connCredential), so the
// swap invalidates them.
func (s *Server) syncKeys(every time.Duration, stop <-chan struct{}) {
	defer close(s.keysDone)
	tick := time.NewTicker(every)
	defer tick.Stop()
	// A key store that is told of changes (PostgreSQL LISTEN/NOTIFY: ledger.WatchKeys)
	// wakes the loop at once; the ticker remains the resync.
	wake := make(chan struct{}, 1)
	if w, ok := s.keyStore.(interface {
		WatchKeys(ctx context.Context, changed func())
	}); ok {
		ctx, cancel := context.WithCancel(s.baseCtx)
		watched := make(chan struct{})
		defer func() { cancel(); <-watched }()
		go func() {
			defer close(watched)
			w.WatchKeys(ctx, func() {
				select {
				case wake <- struct{}{}:
				default:
				}
			})
		}()
	}
	for {
		select {
		case <-stop:
			return
		case <-wake:
			if err := s.refreshKeys(false); err != nil {
				s.logger.Warn("reading the database keys failed; keeping the last ones", "error", err.Error())
			}
		case <-tick.C:
			if err := s.refreshKeys(false); err != nil {
				s.logger.Warn("reading the database keys failed; keeping the last ones", "error", err.Error())
			}
		}
	}
}

// refreshKeys reloads the database keys if they changed (or force) and rebuilds the
// runtime with them.
func (s *Server) refreshKeys(force bool) error {
	ctx, cancel := context.WithTimeout(s.baseCtx, 5*time.Second)
	defer cancel()
	v, err := s.keyStore.KeysVersion(ctx)
	if err != nil {
		return err
	}
	cur := s.dbKeys.Load()
	if !force && cur != nil && cur.version == v && (cur.next.IsZero() || time.Now().Before(cur.next)) {
		return nil
	}
	keys, err := s.keyStore.Keys(ctx)
	if err != nil {
		return err
	}
	teams, err := s.dbTeams(ctx) // admin_teams.go
	if err != nil {
		return err
	}
	s.applyMu.Lock()
	defer s.applyMu.Unlock()
	if cur := s.dbKeys.Load(); cur != nil && cur.version > v {
		return nil // a newer set went in meanwhile (an admin request's, or the poller's)
	}
	set := &dbKeySet{keys: keys, teams: teams, version: v}
	rt, next, err := s.runtimeFor(s.runtime().cfg, set, s.runtime())
	if err != nil {
		return err
	}
	set.next = next
	s.seedGranted(s.runtime(), rt) // budgetseed.go
	s.dbKeys.Store(set)
	s.rt.Store(rt)
	return nil
}
