package proxy

import (
	"errors"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/agate-gateway/agate/config"
	"github.com/agate-gateway/agate/internal/jsonx"
	"github.com/agate-gateway/agate/ledger"
)

// keyNamePattern is what a database key's name may be: it is a metric label and a path
// segment.
var keyNamePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// Bounds of a key's fields.
const (
	maxKeyListLen     = 256
	maxKeyListItem    = 256
	maxTeamLen        = 64
	maxMetadataBytes  = 4096
	defaultRotateWait = time.Hour
	maxRotateWait     = 720 * time.Hour
)

// keyPatch is a create or update body: each field set only when the body had it.
type keyPatch struct {
	name                 *string
	models, tools        *[]string
	team                 *string
	rpm, tpm, concurrent *int
	budgetTokens         *int
	budgetUSD            *float64
	budgetPeriod         *time.Duration
	expiresAt            *time.Time // zero: no expiry
	metadata             *string
	disabled             *bool
	grace                *time.Duration
}

// parseKeyPatch reads body, a JSON object of the members allowed (a subset of name,
// models, tools, team, limits, budget, expires_at, metadata, disabled, grace).
func parseKeyPatch(body []byte, allowed ...string) (*keyPatch, error) {
	p := &keyPatch{}
	if len(strings.TrimSpace(string(body))) == 0 {
		return p, nil
	}
	sc := jsonx.NewScanner(string(body))
	root, ok := sc.IndexRoot()
	if !ok || root.Kind != jsonx.Object {
		return nil, badRequest("", "the body must be a JSON object")
	}
	var err error
	sc.Each(root, func(member string, v jsonx.Value) bool {
		if !slices.Contains(allowed, member) {
			err = badRequest(member, "unknown or read-only member "+strconv.Quote(truncate(member, 64))+" (allowed: "+strings.Join(allowed, ", ")+")")
			return false
		}
		err = p.set(&sc, member, v)
		return err == nil
	})
	return p, err
}

func (p *keyPatch) set(sc *jsonx.Scanner, member string, v jsonx.Value) error {
	str := func(field string, max int) (*string, error) {
		if v.Kind != jsonx.String || len(v.Str) > max || strings.ContainsAny(v.Str, "\n\x00") {
			return nil, badRequest(field, "must be a string of at most "+strconv.Itoa(max)+" bytes")
		}
		s := v.Str
		return &s, nil
	}
	var err error
	switch member {
	case "name":
		p.name, err = str("name", 64)
	case "team":
		p.team, err = str("team", maxTeamLen)
	case "models", "tools":
		var l []string
		if v.Kind != jsonx.Array {
			return badRequest(member, "must be an array of strings")
		}
		sc.Each(v, func(_ string, el jsonx.Value) bool {
			if el.Kind != jsonx.String || el.Str == "" || len(el.Str) > maxKeyListItem || strings.ContainsAny(el.Str, "\n\x00") || len(l) == maxKeyListLen {
				err = badRequest(member, "must be at most "+strconv.Itoa(maxKeyListLen)+" non-empty strings of at most "+strconv.Itoa(maxKeyListItem)+" bytes")
				return false
			}
			l = append(l, el.Str)
			return true
		})
		if member == "models" {
			p.models = &l
		} else {
			p.tools = &l
		}
	case "limits":
		err = p.object(sc, v, "limits", map[string]func(jsonx.Value) error{
			"requests_per_minute": intField("limits.requests_per_minute", &p.rpm),
			"tokens_per_minute":   intField("limits.tokens_per_minute", &p.tpm),
			"concurrent":          intField("limits.concurrent", &p.concurrent),
		})
	case "budget":
		err = p.object(sc, v, "budget", map[string]func(jsonx.Value) error{
			"tokens": intField("budget.tokens", &p.budgetTokens),
			"usd": func(v jsonx.Value) error {
				if v.Kind != jsonx.Number || v.Float() < 0 {
					return badRequest("budget.usd", "must be a number, not negative")
				}
				f := v.Float()
				p.budgetUSD = &f
				return nil
			},
			"period": durationField("budget.period", &p.budgetPeriod),
		})
	case "grace":
		err = durationField("grace", &p.grace)(v)
	case "expires_at":
		var t time.Time
		if v.Kind != jsonx.Null {
			if v.Kind != jsonx.String {
				return badRequest("expires_at", "must be an RFC 3339 time or null")
			}
			if t, err = time.Parse(time.RFC3339, v.Str); err != nil {
				return badRequest("expires_at", "must be an RFC 3339 time (2026-12-31T00:00:00Z) or null")
			}
		}
		p.expiresAt = &t
	case "metadata":
		m := ""
		if v.Kind != jsonx.Null {
			if v.Kind != jsonx.Object || len(v.Raw) > maxMetadataBytes {
				return badRequest("metadata", "must be a JSON object of at most 4096 bytes, or null")
			}
			m = v.Raw
		}
		p.metadata = &m
	case "disabled":
		if !v.IsBool() {
			return badRequest("disabled", "must be true or false")
		}
		b := v.Kind == jsonx.True
		p.disabled = &b
	}
	return err
}

func (p *keyPatch) object(sc *jsonx.Scanner, v jsonx.Value, field string, members map[string]func(jsonx.Value) error) error {
	if v.Kind != jsonx.Object {
		return badRequest(field, "must be an object")
	}
	var err error
	sc.Each(v, func(k string, el jsonx.Value) bool {
		set, ok := members[k]
		if !ok {
			err = badRequest(field+"."+truncate(k, 64), "unknown member")
			return false
		}
		err = set(el)
		return err == nil
	})
	return err
}

func intField(field string, dst **int) func(jsonx.Value) error {
	return func(v jsonx.Value) error {
		n := v.Int()
		if v.Kind != jsonx.Number || n < 0 || n > 1<<40 || strconv.FormatInt(n, 10) != v.Raw {
			return badRequest(field, "must be a whole number, not negative")
		}
		i := int(n)
		*dst = &i
		return nil
	}
}

func durationField(field string, dst **time.Duration) func(jsonx.Value) error {
	return func(v jsonx.Value) error {
		d, err := time.ParseDuration(v.Str)
		if v.Kind != jsonx.String || err != nil || d < 0 {
			return badRequest(field, `must be a duration such as "720h"`)
		}
		*dst = &d
		return nil
	}
}

// apply sets k's fields from p.
func (p *keyPatch) apply(k *ledger.Key) {
	set := func(dst *int, v *int) {
		if v != nil {
			*dst = *v
		}
	}
	if p.models != nil {
		k.Models = *p.models
	}
	if p.tools != nil {
		k.Tools = *p.tools
	}
	if p.team != nil {
		k.Team = *p.team
	}
	set(&k.RequestsPerMinute, p.rpm)
	set(&k.TokensPerMinute, p.tpm)
	set(&k.Concurrent, p.concurrent)
	set(&k.BudgetTokens, p.budgetTokens)
	if p.budgetUSD != nil {
		k.BudgetUSD = *p.budgetUSD
	}
	if p.budgetPeriod != nil {
		k.BudgetPeriod = *p.budgetPeriod
	}
	if p.expiresAt != nil {
		k.ExpiresAt = *p.expiresAt
	}
	if p.metadata != nil {
		k.Metadata = *p.metadata
	}
	if p.disabled != nil {
		k.Disabled = *p.disabled
	}
}

// checkKey holds k to the config's rules for keys (its models' globs, tools that exist,
// usd budgets only on priced models, ...): the rules a config key is held to.
func (s *Server) checkKey(k *ledger.Key) error {
	cfg, teams := s.runtimeTeams() // admin_teams.go: a database team's rules bind its keys too
	merged, _ := withKeys(withTeams(cfg, teams), []ledger.Key{{Name: k.Name, Digest: k.Digest, Models: k.Models, Tools: k.Tools, Team: k.Team,
		RequestsPerMinute: k.RequestsPerMinute, TokensPerMinute: k.TokensPerMinute, Concurrent: k.Concurrent,
		BudgetTokens: k.BudgetTokens, BudgetUSD: k.BudgetUSD, BudgetPeriod: k.BudgetPeriod}}, time.Now())
	return entryRefusal(merged.Validate(), "keys."+k.Name)
}

// entryRefusal is the 400 of the config's problems err that concern the entry at prefix
// ("keys.<name>", "teams.<name>"), naming the first one's field; nil when none does (the
// config's own problems are not the entry's).
func entryRefusal(err error, prefix string) error {
	if err == nil {
		return nil
	}
	var msgs []string
	for _, line := range strings.Split(err.Error(), "\n") {
		if strings.Contains(line, prefix) {
			msgs = append(msgs, strings.TrimPrefix(line, "config: "))
		}
	}
	if len(msgs) == 0 {
		return nil
	}
	return badRequest(strings.SplitN(strings.TrimPrefix(msgs[0], prefix+"."), ":", 2)[0], strings.Join(msgs, "; "))
}

// appendKeyView appends the API's view of k: never its secret or digest.
func appendKeyView(b []byte, k *ledger.Key, now time.Time) []byte {
	b = jsonx.AppendString(append(b, `{"name":`...), k.Name)
	b = append(b, `,"source":"database","read_only":false`...)
	b = appendStrings(append(b, `,"models":`...), k.Models)
	b = appendStrings(append(b, `,"tools":`...), k.Tools)
	b = jsonx.AppendString(append(b, `,"team":`...), k.Team)
	b = appendLimits(b, k.RequestsPerMinute, k.TokensPerMinute, k.Concurrent, k.BudgetTokens, k.BudgetUSD, k.BudgetPeriod)
	b = appendTime(append(b, `,"expires_at":`...), k.ExpiresAt)
	b = append(b, `,"metadata":`...)
	if k.Metadata == "" {
		b = append(b, "null"...)
	} else {
		b = append(b, k.Metadata...)
	}
	b = strconv.AppendBool(append(b, `,"disabled":`...), k.Disabled)
	rotating := time.Time{}
	if k.PrevDigest != "" && now.Before(k.PrevUntil) {
		rotating = k.PrevUntil
	}
	b = appendTime(append(b, `,"previous_secret_valid_until":`...), rotating)
	b = appendTime(append(b, `,"created_at":`...), k.Created)
	b = appendTime(append(b, `,"updated_at":`...), k.Updated)
	return append(b, '}')
}

// appendConfigKeyView appends the view of a config file's key (read-only).
func appendConfigKeyView(b []byte, name string, k config.Key) []byte {
	b = jsonx.AppendString(append(b, `{"name":`...), name)
	b = append(b, `,"source":"config","read_only":true`...)
	b = appendStrings(append(b, `,"models":`...), k.Models)
	b = appendStrings(append(b, `,"tools":`...), k.Tools)
	b = jsonx.AppendString(append(b, `,"team":`...), k.Team)
	b = appendLimits(b, k.Limits.RequestsPerMinute, k.Limits.TokensPerMinute, k.Limits.Concurrent, k.Budget.Tokens, k.Budget.USD, k.Budget.Period)
	return append(b, `,"expires_at":null,"metadata":null,"disabled":false,"previous_secret_valid_until":null,"created_at":null,"updated_at":null}`...)
}

func appendLimits(b []byte, rpm, tpm, conc, tokens int, usd float64, period time.Duration) []byte {
	b = strconv.AppendInt(append(b, `,"limits":{"requests_per_minute":`...), int64(rpm), 10)
	b = strconv.AppendInt(append(b, `,"tokens_per_minute":`...), int64(tpm), 10)
	b = strconv.AppendInt(append(b, `,"concurrent":`...), int64(conc), 10)
	b = strconv.AppendInt(append(b, `},"budget":{"tokens":`...), int64(tokens), 10)
	b = strconv.AppendFloat(append(b, `,"usd":`...), usd, 'f', -1, 64)
	p := ""
	if period > 0 {
		p = period.String()
	}
	return append(jsonx.AppendString(append(b, `,"period":`...), p), '}')
}

func appendStrings(b []byte, l []string) []byte {
	b = append(b, '[')
	for i, s := range l {
		if i > 0 {
			b = append(b, ',')
		}
		b = jsonx.AppendString(b, s)
	}
	return append(b, ']')
}

func appendTime(b []byte, t time.Time) []byte {
	if t.IsZero() {
		return append(b, "null"...)
	}
	return jsonx.AppendString(b, t.UTC().Format(time.RFC3339))
}

func (s *Server) adminListKeys(a *adminCall) error {
	ctx, cancel := s.adminCtx()
	defer cancel()
	keys, err := s.keyStore.Keys(ctx)
	if err != nil {
		return err
	}
	cfg := s.runtime().cfg
	names := make([]string, 0, len(cfg.Keys))
	for n := range cfg.Keys {
		names = append(names, n)
	}
	sort.Strings(names)
	b := append(make([]byte, 0, 512), `{"data":[`...)
	for i, n := range names {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendConfigKeyView(b, n, cfg.Keys[n])
	}
	now := time.Now()
	for i := range keys {
		if len(names) > 0 || i > 0 {
			b = append(b, ',')
		}
		b = appendKeyView(b, &keys[i], now)
	}
	writeAdminJSON(a.ctx, 200, append(b, "]}"...))
	return nil
}

// dbKey returns the database key of a's {name}: 403 for a config key, 404 for none.
func (s *Server) dbKey(a *adminCall) (ledger.Key, error) {
	if _, ok := s.runtime().cfg.Keys[a.name]; ok {
		return ledger.Key{}, &adminError{status: 403, code: "read_only", msg: "key " + truncate(a.name, 64) + " is in the config file: change it there"}
	}
	ctx, cancel := s.adminCtx()
	defer cancel()
	k, err := s.keyStore.Key(ctx, a.name)
	if errors.Is(err, ledger.ErrNotFound) {
		return k, notFound("no key " + strconv.Quote(truncate(a.name, 64)))
	}
	return k, err
}

func (s *Server) adminGetKey(a *adminCall) error {
	if ck, ok := s.runtime().cfg.Keys[a.name]; ok {
		writeAdminJSON(a.ctx, 200, appendConfigKeyView(nil, a.name, ck))
		return nil
	}
	k, err := s.dbKey(a)
	if err != nil {
		return err
	}
	writeAdminJSON(a.ctx, 200, appendKeyView(nil, &k, time.Now()))
	return nil
}

// change writes c (with its audit record: the key's view before and after) and puts it
// in force on this replica at once; the others see the version move within admin.resync.
func (s *Server) change(a *adminCall, action string, before, after *ledger.Key, create bool) error {
	now := time.Now()
	au := ledger.Audit{Time: now, Actor: a.actor, Action: action}
	c := ledger.KeyChange{Create: create, Put: after, Audit: au}
	if before != nil {
		c.Name, c.Audit.Before = before.Name, string(appendKeyView(nil, before, now))
	}
	if after != nil {
		c.Name, c.Audit.After = after.Name, string(appendKeyView(nil, after, now))
	}
	c.Audit.Target = c.Name
	ctx, cancel := s.adminCtx()
	defer cancel()
	switch err := s.keyStore.ChangeKey(ctx, c); {
	case errors.Is(err, ledger.ErrExists):
		return &adminError{status: 409, code: "exists", msg: "a key named " + strconv.Quote(c.Name) + " exists", field: "name"}
	case errors.Is(err, ledger.ErrNotFound):
		return notFound("no key " + strconv.Quote(c.Name))
	case err != nil:
		return err
	}
	return s.refreshKeys(true)
}

func (s *Server) adminCreateKey(a *adminCall) error {
	p, err := parseKeyPatch(a.ctx.PostBody(), "name", "models", "tools", "team", "limits", "budget", "expires_at", "metadata")
	if err != nil {
		return err
	}
	if p.name == nil || !keyNamePattern.MatchString(*p.name) {
		return badRequest("name", "required: 1 to 64 of A-Z a-z 0-9 . _ - (starting with a letter or digit)")
	}
	if _, ok := s.runtime().cfg.Keys[*p.name]; ok {
		return &adminError{status: 409, code: "exists", msg: "a key named " + strconv.Quote(*p.name) + " is in the config file", field: "name"}
	}
	secret, digest := ledger.NewSecret()
	now := time.Now().UTC().Truncate(time.Microsecond)
	k := ledger.Key{Name: *p.name, Digest: digest, Created: now, Updated: now}
	p.apply(&k)
	if err := s.checkKey(&k); err != nil {
		return err
	}
	if err := s.change(a, "create", nil, &k, true); err != nil {
		return err
	}
	writeKeyWithSecret(a, 201, &k, secret, now)
	return nil
}

// writeKeyWithSecret answers k's view and its new secret, shown this once.
func writeKeyWithSecret(a *adminCall, status int, k *ledger.Key, secret string, now time.Time) {
	b := appendKeyView(append([]byte(nil), `{"key":`...), k, now)
	b = jsonx.AppendString(append(b, `,"secret":`...), secret)
	writeAdminJSON(a.ctx, status, append(b, '}'))
}

func (s *Server) adminUpdateKey(a *adminCall) error {
	before, err := s.dbKey(a)
	if err != nil {
		return err
	}
	p, err := parseKeyPatch(a.ctx.PostBody(), "models", "tools", "team", "limits", "budget", "expires_at", "metadata", "disabled")
	if err != nil {
		return err
	}
	after := before
	p.apply(&after)
	after.Updated = time.Now().UTC().Truncate(time.Microsecond)
	if err := s.checkKey(&after); err != nil {
		return err
	}
	if err := s.change(a, "update", &before, &after, false); err != nil {
		return err
	}
	writeAdminJSON(a.ctx, 200, appendKeyView(nil, &after, time.Now()))
	return nil
}

func (s *Server) adminDisableKey(a *adminCall) error {
	before, err := s.dbKey(a)
	if err != nil {
		return err
	}
	after := before
	after.Disabled, after.Updated = true, time.Now().UTC().Truncate(time.Microsecond)
	if err := s.change(a, "disable", &before, &after, false); err != nil {
		return err
	}
	writeAdminJSON(a.ctx, 200, appendKeyView(nil, &after, time.Now()))
	return nil
}

func (s *Server) adminRotateKey(a *adminCall) error {
	before, err := s.dbKey(a)
	if err != nil {
		return err
	}
	p, err := parseKeyPatch(a.ctx.PostBody(), "grace")
	if err != nil {
		return err
	}
	grace := defaultRotateWait
	if p.grace != nil {
		grace = *p.grace
	}
	if grace > maxRotateWait {
		return badRequest("grace", "at most 720h")
	}
	secret, digest := ledger.NewSecret()
	now := time.Now().UTC().Truncate(time.Microsecond)
	after := before
	after.Digest, after.Updated = digest, now
	after.PrevDigest, after.PrevUntil = "", time.Time{}
	if grace > 0 {
		after.PrevDigest, after.PrevUntil = before.Digest, now.Add(grace)
	}
	if err := s.change(a, "rotate", &before, &after, false); err != nil {
		return err
	}
	writeKeyWithSecret(a, 200, &after, secret, now)
	return nil
}

func (s *Server) adminDeleteKey(a *adminCall) error {
	before, err := s.dbKey(a)
	if err != nil {
		return err
	}
	if err := s.change(a, "delete", &before, nil, false); err != nil {
		return err
	}
	a.ctx.SetStatusCode(204)
	return nil
}
