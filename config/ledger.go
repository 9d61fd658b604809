package config

import (
	"net/url"
	"path/filepath"
	"time"
)

// Ledger configures the usage ledger: one record per client request (key, team, model,
// tokens, cost, status, latencies) in a database, with per-minute, per-hour and per-day
// rollups that usage reports read (docs/ledger.md). It takes effect at start; a reload
// does not change it.
//
// It is off unless configured: a gateway writes no file it was not asked to (its config
// may sit on a read-only volume), and the quick start keeps working from a read-only
// checkout. `ledger: {type: sqlite}` is the zero-setup choice.
type Ledger struct {
	// Type is "off" (the default; also when empty), "sqlite" (an embedded database in the file Path; one
	// gateway process) or "postgres" (the database of URL, shared by replicas).
	Type string `koanf:"type"`
	// Path is the SQLite file. Default "agate-ledger.db"; a relative path is taken
	// relative to the directory of the config file.
	Path string `koanf:"path"`
	// URL is the PostgreSQL database, postgres://user:password@host:port/db?sslmode=…
	// (usually "${LEDGER_URL}"). Required for type postgres; never logged or included in
	// errors.
	URL string `koanf:"url"`
	// CaptureContent keeps the request's last user text and the answer's text in each
	// record, masked (credential-like tokens) and cut to MaxContentBytes. Default false:
	// records hold no prompt or completion.
	CaptureContent bool `koanf:"capture_content"`
	// MaxContentBytes bounds each captured text. Default 2048 (also when 0).
	MaxContentBytes int `koanf:"max_content_bytes"`
	// QueueSize bounds the records waiting to be written; a record beyond is dropped and
	// counted in gateway_ledger_dropped_total{reason="queue_full"}. Default 65536. The
	// queue's memory follows what waits (blocks of 256 records, reused once written), not
	// this bound.
	QueueSize int `koanf:"queue_size"`
	// BatchSize is the most records one transaction writes, and how many waiting records
	// wake the writer before FlushInterval. Default 2000.
	BatchSize int `koanf:"batch_size"`
	// FlushInterval is the longest a record waits for its batch to fill. Default 1s.
	FlushInterval time.Duration `koanf:"flush_interval"`
	// SpoolPath is the local file batches go to while the database cannot be written,
	// written back once it can. Default: Path + ".spool" for sqlite, "agate-ledger.spool"
	// beside the config file for postgres; "off" spools nothing (such batches are
	// dropped and counted).
	SpoolPath string `koanf:"spool_path"`
	// SpoolMaxBytes bounds the spool file. Default 64 MiB (67108864).
	SpoolMaxBytes int64 `koanf:"spool_max_bytes"`
	// Retention is how long raw records are kept. Default 720h (30 days); the pruner
	// deletes older ones in small batches every 10 minutes.
	Retention time.Duration `koanf:"retention"`
	// Rollups are the retentions of the rollups.
	Rollups LedgerRollups `koanf:"rollups"`
}

// LedgerRollups are the retentions of the ledger's rollups. Negative is invalid.
type LedgerRollups struct {
	// Minute rollups: default 48h.
	Minute time.Duration `koanf:"minute"`
	// Hour rollups: default 2160h (90 days).
	Hour time.Duration `koanf:"hour"`
	// Day rollups: default 0, kept for ever (a row per key, team, model and status a day).
	Day time.Duration `koanf:"day"`
}

// The ledger's defaults.
const (
	defaultLedgerPath            = "agate-ledger.db"
	defaultLedgerSpool           = "agate-ledger.spool"
	defaultLedgerMaxContentBytes = 2048
	defaultLedgerQueueSize       = 65536
	defaultLedgerBatchSize       = 2000
	defaultLedgerFlushInterval   = time.Second
	defaultLedgerSpoolMaxBytes   = 64 << 20
	defaultLedgerRetention       = 720 * time.Hour
	defaultLedgerMinute          = 48 * time.Hour
	defaultLedgerHour            = 2160 * time.Hour
)

var ledgerTypes = []string{"off", "sqlite", "postgres"}

// LedgerOn reports whether l turns the ledger on (type sqlite or postgres).
func (l Ledger) LedgerOn() bool { return l.Type == "sqlite" || l.Type == "postgres" }

func (c *Config) ledgerDefaults() {
	l := &c.Ledger
	if !l.LedgerOn() {
		return // off: nothing to default (Type stays "", which means off)
	}
	if l.Type == "sqlite" {
		setDefault(&l.Path, defaultLedgerPath)
	}
	if l.SpoolPath == "" {
		l.SpoolPath = defaultLedgerSpool
		if l.Type == "sqlite" {
			l.SpoolPath = l.Path + ".spool"
		}
	}
	setDefault(&l.MaxContentBytes, defaultLedgerMaxContentBytes)
	setDefault(&l.QueueSize, defaultLedgerQueueSize)
	setDefault(&l.BatchSize, defaultLedgerBatchSize)
	setDefault(&l.FlushInterval, defaultLedgerFlushInterval)
	setDefault(&l.SpoolMaxBytes, defaultLedgerSpoolMaxBytes)
	setDefault(&l.Retention, defaultLedgerRetention)
	setDefault(&l.Rollups.Minute, defaultLedgerMinute)
	setDefault(&l.Rollups.Hour, defaultLedgerHour)
}

// ledgerBeside makes the ledger's relative file paths relative to dir, the config
// file's directory (Load).
func (c *Config) ledgerBeside(dir string) {
	l := &c.Ledger
	if l.Path != "" && !filepath.IsAbs(l.Path) {
		l.Path = filepath.Join(dir, l.Path)
	}
	if l.SpoolPath != "" && l.SpoolPath != "off" && !filepath.IsAbs(l.SpoolPath) {
		l.SpoolPath = filepath.Join(dir, l.SpoolPath)
	}
}

func (c *Config) validateLedger(v *validator) {
	l := c.Ledger
	if l.Type != "" { // a config built in code, not defaulted: off
		v.oneOf("ledger.type", l.Type, ledgerTypes)
	}
	switch {
	case l.Type == "postgres" && l.URL == "":
		v.addf("ledger.url", "required for ledger.type postgres")
	case l.Type == "postgres":
		if u, err := url.Parse(l.URL); err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
			v.addf("ledger.url", "must be a postgres:// or postgresql:// URL") // the value may hold a password: not quoted
		}
	case l.URL != "":
		v.addf("ledger.url", "only for ledger.type postgres")
	}
	if l.Path != "" && l.Type != "sqlite" {
		v.addf("ledger.path", "only for ledger.type sqlite")
	}
	v.nonNegative("ledger.max_content_bytes", l.MaxContentBytes)
	v.nonNegative("ledger.queue_size", l.QueueSize)
	v.nonNegative("ledger.batch_size", l.BatchSize)
	v.nonNegativeDuration("ledger.flush_interval", l.FlushInterval)
	if l.SpoolMaxBytes < 0 {
		v.addf("ledger.spool_max_bytes", "must not be negative")
	}
	v.nonNegativeDuration("ledger.retention", l.Retention)
	v.nonNegativeDuration("ledger.rollups.minute", l.Rollups.Minute)
	v.nonNegativeDuration("ledger.rollups.hour", l.Rollups.Hour)
	v.nonNegativeDuration("ledger.rollups.day", l.Rollups.Day)
}
