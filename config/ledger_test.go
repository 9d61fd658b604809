package config

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// sha64 is a valid key_sha256 (of "x").
const sha64 = "2d711642b726b04401627ca9fbac32f5c8530fb1903cc4db02258717921a4881"

func TestLedger_Validation(t *testing.T) {
	for _, tc := range []struct {
		name, yaml, want string
	}{
		{"off by default", ``, ""},
		{"sqlite", "ledger: {type: sqlite}", ""},
		{"unknown type", "ledger: {type: mysql}", `config: ledger.type: "mysql" is not one of off, sqlite, postgres`},
		{"postgres without url", "ledger: {type: postgres}", "config: ledger.url: required for ledger.type postgres"},
		{"postgres with a bad url, not quoted", "ledger: {type: postgres, url: 'mysql://u:secret@h/db'}", "config: ledger.url: must be a postgres:// or postgresql:// URL"},
		{"url without postgres", "ledger: {type: sqlite, url: 'postgres://h/db'}", "config: ledger.url: only for ledger.type postgres"},
		{"path without sqlite", "ledger: {path: x.db}", "config: ledger.path: only for ledger.type sqlite"},
		{"negative retention", "ledger: {type: sqlite, retention: -1h}", "config: ledger.retention: must not be negative"},
		{"negative rollup retention", "ledger: {type: sqlite, rollups: {hour: -1h}}", "config: ledger.rollups.hour: must not be negative"},
		{"admin", "ledger: {type: sqlite}\nadmin: {keys: {ops: {key_sha256: " + sha64 + "}}, listen: '127.0.0.1:9091'}", ""},
		{"admin without the ledger", "admin: {keys: {ops: {key_sha256: " + sha64 + "}}}", "config: admin.keys: the admin API keeps its keys in the ledger's database: set ledger.type (sqlite or postgres)"},
		{"admin key not a digest", "ledger: {type: sqlite}\nadmin: {keys: {ops: {key_sha256: secret}}}", "config: admin.keys.ops.key_sha256: must be 64 lowercase hex digits (the SHA-256 of the token)"},
		{"admin listen without keys", "admin: {listen: ':9091'}", "config: admin.listen: needs admin.keys"},
		{"admin listen not an address", "ledger: {type: sqlite}\nadmin: {keys: {ops: {key_sha256: " + sha64 + "}}, listen: '9091'}", `config: admin.listen: invalid address "9091" (want host:port or :port)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.yaml), nil)
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tc.want {
				t.Errorf("Parse error %q, want %q", got, tc.want)
			}
		})
	}
}

func TestLedger_DefaultsAndPathBesideTheConfig(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "gateway.yaml")
	if err := os.WriteFile(path, []byte("ledger: {type: sqlite}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := Load(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := Ledger{Type: "sqlite", Path: filepath.Join(dir, "agate-ledger.db"), SpoolPath: filepath.Join(dir, "agate-ledger.db.spool"),
		MaxContentBytes: 2048, QueueSize: 65536, BatchSize: 2000, FlushInterval: time.Second, SpoolMaxBytes: 64 << 20,
		Retention: 720 * time.Hour, Rollups: LedgerRollups{Minute: 48 * time.Hour, Hour: 2160 * time.Hour}}
	if cfg.Ledger != want {
		t.Errorf("ledger config\n got %+v\nwant %+v", cfg.Ledger, want)
	}
	abs, err := Parse([]byte("ledger: {type: postgres, url: 'postgres://h/db', spool_path: off}"), nil)
	if err != nil || abs.Ledger.SpoolPath != "off" {
		t.Errorf("spool_path off: %q, %v", abs.Ledger.SpoolPath, err)
	}
}
