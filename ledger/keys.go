package ledger

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agate-gateway/agate/internal/redact"
)

// The ledger's database also holds the client keys the admin API manages (schema
// version 2): agate_keys (one row per key, its secret as SHA-256 only), agate_audit (one
// row per change) and agate_keys_version (a counter every change bumps in its own
// transaction, which replicas poll to see a change within a second).

// Key is a client key kept in the database. Its secret is never stored: Digest is its
// SHA-256 (hex). During a rotation's grace period PrevDigest, valid until PrevUntil,
// authenticates too.
type Key struct {
	Name       string
	Digest     string
	PrevDigest string
	PrevUntil  time.Time
	Models     []string
	Tools      []string
	Team       string
	// Limits: requests and tokens per minute, concurrent requests (0: none).
	RequestsPerMinute, TokensPerMinute, Concurrent int
	// Budget: tokens and USD per BudgetPeriod (0: none; period 0: the default).
	BudgetTokens int
	BudgetUSD    float64
	BudgetPeriod time.Duration
	// ExpiresAt is when the key stops working; zero: never.
	ExpiresAt time.Time
	// Metadata is the caller's JSON object, kept and returned verbatim ("" when none).
	Metadata string
	Disabled bool
	Created  time.Time
	Updated  time.Time
}

// Valid reports whether k authenticates at now (not disabled, not expired).
func (k *Key) Valid(now time.Time) bool {
	return !k.Disabled && (k.ExpiresAt.IsZero() || now.Before(k.ExpiresAt))
}

// Audit is one change made through the admin API: who made it, what, and the key's
// view before and after (JSON written by the caller; never a secret or digest).
type Audit struct {
	ID            int64
	Time          time.Time
	Actor, Action string
	Target        string
	Before, After string
}

// ErrNotFound and ErrExists are the key store's errors for a missing or duplicate name.
var (
	ErrNotFound = errors.New("ledger: no such key")
	ErrExists   = errors.New("ledger: a key of that name exists")
)

// keysDDL is schema version 2 (both databases).
func keysDDL(id, bigint, boolean, double string) string {
	return `CREATE TABLE agate_keys (
  name TEXT PRIMARY KEY,
  digest TEXT NOT NULL UNIQUE,
  prev_digest TEXT NOT NULL,
  prev_until_us ` + bigint + ` NOT NULL,
  models TEXT NOT NULL,
  tools TEXT NOT NULL,
  team TEXT NOT NULL,
  requests_per_minute INTEGER NOT NULL,
  tokens_per_minute INTEGER NOT NULL,
  concurrent INTEGER NOT NULL,
  budget_tokens ` + bigint + ` NOT NULL,
  budget_usd ` + double + ` NOT NULL,
  budget_period_s ` + bigint + ` NOT NULL,
  expires_us ` + bigint + ` NOT NULL,
  metadata TEXT NOT NULL,
  disabled ` + boolean + ` NOT NULL,
  created_us ` + bigint + ` NOT NULL,
  updated_us ` + bigint + ` NOT NULL
);
CREATE TABLE agate_audit (
  id ` + id + `,
  ts_us ` + bigint + ` NOT NULL,
  actor TEXT NOT NULL,
  action TEXT NOT NULL,
  target TEXT NOT NULL,
  before TEXT NOT NULL,
  after TEXT NOT NULL
);
CREATE TABLE agate_keys_version (id INTEGER PRIMARY KEY, version ` + bigint + ` NOT NULL);
INSERT INTO agate_keys_version (id, version) VALUES (1, 0);
`
}

const keyColumns = `name, digest, prev_digest, prev_until_us, models, tools, team, requests_per_minute, tokens_per_minute,
  concurrent, budget_tokens, budget_usd, budget_period_s, expires_us, metadata, disabled, created_us, updated_us`

func micros(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMicro()
}

func fromMicros(us int64) time.Time {
	if us == 0 {
		return time.Time{}
	}
	return time.UnixMicro(us).UTC()
}

// list joins names with newlines (names hold none: the admin API checks them).
func list(s []string) string { return strings.Join(s, "\n") }

func unlist(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

func keyArgs(k *Key) []any {
	return []any{k.Name, k.Digest, k.PrevDigest, micros(k.PrevUntil), list(k.Models), list(k.Tools), k.Team,
		k.RequestsPerMinute, k.TokensPerMinute, k.Concurrent, k.BudgetTokens, k.BudgetUSD, int64(k.BudgetPeriod / time.Second),
		micros(k.ExpiresAt), k.Metadata, k.Disabled, micros(k.Created), micros(k.Updated)}
}

type scanner interface{ Scan(dest ...any) error }

func scanKey(row scanner) (Key, error) {
	var k Key
	var prevUntil, period, expires, created, updated int64
	var models, tools string
	err := row.Scan(&k.Name, &k.Digest, &k.PrevDigest, &prevUntil, &models, &tools, &k.Team, &k.RequestsPerMinute,
		&k.TokensPerMinute, &k.Concurrent, &k.BudgetTokens, &k.BudgetUSD, &period, &expires, &k.Metadata, &k.Disabled,
		&created, &updated)
	k.PrevUntil, k.ExpiresAt, k.Created, k.Updated = fromMicros(prevUntil), fromMicros(expires), fromMicros(created), fromMicros(updated)
	k.Models, k.Tools, k.BudgetPeriod = unlist(models), unlist(tools), time.Duration(period)*time.Second
	return k, err
}

// NewSecret returns a new client key secret ("agk_" and 64 hex digits) and its digest.
func NewSecret() (secret, digest string) {
	var b [32]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	secret = "agk_" + hex.EncodeToString(b[:])
	return secret, Digest(secret)
}

// Digest is the hex SHA-256 of a secret, as keys store it.
func Digest(secret string) string {
	d := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(d[:])
}

// Keys returns every database key, by name.
func (l *Ledger) Keys(ctx context.Context) ([]Key, error) {
	return queryAll(ctx, l.st.db, "keys", `SELECT `+keyColumns+` FROM agate_keys ORDER BY name`, scanKey)
}

// Key returns the database key name, or ErrNotFound.
func (l *Ledger) Key(ctx context.Context, name string) (Key, error) {
	k, err := scanKey(l.st.db.QueryRowContext(ctx, l.st.d.bind(`SELECT `+keyColumns+` FROM agate_keys WHERE name = ?`), name))
	if errors.Is(err, sql.ErrNoRows) {
		return Key{}, ErrNotFound
	}
	return k, err
}

// KeysVersion returns the counter every key change bumps: a replica that sees it move
// reads the keys again.
func (l *Ledger) KeysVersion(ctx context.Context) (int64, error) {
	var v int64
	err := l.st.db.QueryRowContext(ctx, `SELECT version FROM agate_keys_version WHERE id = 1`).Scan(&v)
	return v, err
}

// KeyChange is one change to the keys: the key written (nil to delete Name), and its
// audit record.
type KeyChange struct {
	Name   string
	Create bool
	Put    *Key
	Audit  Audit
}

// ChangeKey applies c in one transaction with its audit record and the version bump:
// Create inserts (ErrExists when the name or digest is taken), otherwise Put replaces
// the key Name and a nil Put deletes it (ErrNotFound when there is none).
func (l *Ledger) ChangeKey(ctx context.Context, c KeyChange) error {
	rc := rowChange{what: "key " + c.Name, errExists: ErrExists, errNotFound: ErrNotFound}
	switch {
	case c.Create:
		rc.taken, rc.takenArgs = `SELECT COUNT(*) FROM agate_keys WHERE name = ? OR digest = ?`, []any{c.Put.Name, c.Put.Digest}
		rc.exec, rc.args = `INSERT INTO agate_keys (`+keyColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, keyArgs(c.Put)
	case c.Put != nil:
		rc.exec, rc.args = `UPDATE agate_keys SET digest = ?, prev_digest = ?, prev_until_us = ?, models = ?, tools = ?,
  team = ?, requests_per_minute = ?, tokens_per_minute = ?, concurrent = ?, budget_tokens = ?, budget_usd = ?, budget_period_s = ?,
  expires_us = ?, metadata = ?, disabled = ?, created_us = ?, updated_us = ? WHERE name = ?`, append(keyArgs(c.Put)[1:], c.Name)
	default:
		rc.exec, rc.args = `DELETE FROM agate_keys WHERE name = ?`, []any{c.Name}
	}
	return l.changeRow(ctx, rc, c.Audit)
}

// rowChange is the write of one key or team: exec with args, after, for a create, the
// count of taken (takenArgs) found nothing in use (else errExists); an exec that
// affects no row is errNotFound.
type rowChange struct {
	what                   string
	taken                  string
	takenArgs              []any
	exec                   string
	args                   []any
	errExists, errNotFound error
}

// changeRow applies c in one transaction with its audit record and the version bump.
func (l *Ledger) changeRow(ctx context.Context, c rowChange, a Audit) error {
	tx, err := l.st.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }()
	if c.taken != "" {
		var n int
		if err := tx.QueryRowContext(ctx, l.st.d.bind(c.taken), c.takenArgs...).Scan(&n); err != nil {
			return err
		}
		if n > 0 {
			return c.errExists
		}
	}
	res, err := tx.ExecContext(ctx, l.st.d.bind(c.exec), c.args...)
	if err != nil {
		return fmt.Errorf("ledger: writing %s: %w", c.what, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return c.errNotFound
	}
	return l.finishChange(ctx, tx, a)
}

// queryAll runs q and scans each row with scan; what names the rows in errors.
func queryAll[T any](ctx context.Context, db *sql.DB, what, q string, scan func(scanner) (T, error)) ([]T, error) {
	rows, err := db.QueryContext(ctx, q)
	if err != nil {
		return nil, fmt.Errorf("ledger: reading %s: %w", what, err)
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, fmt.Errorf("ledger: reading %s: %w", what, err)
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// finishChange writes a key's or team's change's audit record, bumps the version,
// notifies the listeners (PostgreSQL) and commits tx.
func (l *Ledger) finishChange(ctx context.Context, tx *sql.Tx, a Audit) error {
	if _, err := tx.ExecContext(ctx, l.st.d.bind(`INSERT INTO agate_audit (ts_us, actor, action, target, before, after) VALUES (?, ?, ?, ?, ?, ?)`),
		a.Time.UnixMicro(), a.Actor, a.Action, a.Target, a.Before, a.After); err != nil {
		return fmt.Errorf("ledger: writing the audit record: %w", err)
	}
	if _, err := tx.ExecContext(ctx, `UPDATE agate_keys_version SET version = version + 1 WHERE id = 1`); err != nil {
		return err
	}
	if l.st.d.dollar { // delivered to the listeners (WatchKeys) when the transaction commits
		if _, err := tx.ExecContext(ctx, `SELECT pg_notify('`+keysChannel+`', '')`); err != nil {
			return err
		}
	}
	return tx.Commit()
}

// AuditLog returns the audit records, newest first, at most limit (default 100).
func (l *Ledger) AuditLog(ctx context.Context, target string, limit int) ([]Audit, error) {
	if limit <= 0 || limit > 1000 {
		limit = 100
	}
	q, args := `SELECT id, ts_us, actor, action, target, before, after FROM agate_audit`, []any{}
	if target != "" {
		q, args = q+` WHERE target = ?`, append(args, target)
	}
	rows, err := l.st.db.QueryContext(ctx, l.st.d.bind(q+fmt.Sprintf(` ORDER BY id DESC LIMIT %d`, limit)), args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Audit
	for rows.Next() {
		var a Audit
		var ts int64
		if err := rows.Scan(&a.ID, &ts, &a.Actor, &a.Action, &a.Target, &a.Before, &a.After); err != nil {
			return nil, err
		}
		a.Time = time.UnixMicro(ts).UTC()
		out = append(out, a)
	}
	return out, rows.Err()
}

// keysChannel is the PostgreSQL notification channel of key changes.
const keysChannel = "agate_keys"

// WatchKeys calls changed whenever another replica changes a key, as PostgreSQL tells
// it (LISTEN agate_keys; ChangeKey notifies in its transaction), until ctx ends: on a
// dedicated connection, made again a second after it fails. On SQLite, which has no
// other writers, it returns at once. A change missed while the connection is down is
// seen by KeysVersion, which callers poll all the same.
func (l *Ledger) WatchKeys(ctx context.Context, changed func()) {
	if !l.st.d.dollar {
		return
	}
	for ctx.Err() == nil {
		err := l.listen(ctx, changed)
		if ctx.Err() != nil {
			return
		}
		l.opts.Logger.Warn("ledger: listening for key changes failed; retrying", "error", redact.Mask(err.Error()))
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

func (l *Ledger) listen(ctx context.Context, changed func()) error {
	conn, err := pgx.Connect(ctx, l.opts.DSN)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "LISTEN "+keysChannel); err != nil {
		return err
	}
	changed() // anything missed while not listening
	for {
		if _, err := conn.WaitForNotification(ctx); err != nil {
			return err
		}
		changed()
	}
}
