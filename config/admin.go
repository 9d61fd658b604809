package config

import (
	"net"
	"time"
)

// Admin configures the admin API (/admin/v1: client keys, usage, request records;
// docs/admin-api.md). It is on when Keys has an entry, and needs the ledger (ledger.type
// sqlite or postgres): the keys it manages are kept in the ledger's database, shared by
// every replica of a postgres ledger. It takes effect at start; a reload does not
// change it.
type Admin struct {
	// Keys maps an administrator's name (the actor of the audit records) to its
	// credential. Client keys are never admin keys: they get 401 on every admin route.
	Keys map[string]AdminKey `koanf:"keys"`
	// Listen is a separate host:port serving /admin/v1 only (an internal network).
	// Empty (the default) serves it on server.listen.
	Listen string `koanf:"listen"`
	// Resync is how often each replica checks the database for key changes (a version
	// counter: one small query). Default 1s: a change is in force on every replica
	// within about that.
	Resync time.Duration `koanf:"resync"`
	// Console is the browser console under /console (config/console.go).
	Console Console `koanf:"console"`
}

// AdminKey is an administrator's credential: the lowercase hex SHA-256 of the bearer
// token (64 characters); the token itself is never in the config.
type AdminKey struct {
	KeySHA256 string `koanf:"key_sha256"`
}

const defaultAdminResync = time.Second

// AdminOn reports whether the admin API is configured.
func (a Admin) AdminOn() bool { return len(a.Keys) > 0 }

func (c *Config) adminDefaults() {
	if c.Admin.AdminOn() {
		setDefault(&c.Admin.Resync, defaultAdminResync)
		c.consoleDefaults()
	}
}

func (c *Config) validateAdmin(v *validator) {
	a := c.Admin
	if !a.AdminOn() {
		if a.Listen != "" {
			v.addf("admin.listen", "needs admin.keys")
		}
		return
	}
	if !c.Ledger.LedgerOn() {
		v.addf("admin.keys", "the admin API keeps its keys in the ledger's database: set ledger.type (sqlite or postgres)")
	}
	for name, k := range a.Keys {
		v.name("admin.keys", name, false)
		if !isSHA256Hex(k.KeySHA256) {
			v.addf("admin.keys."+name+".key_sha256", "must be 64 lowercase hex digits (the SHA-256 of the token)")
		}
	}
	if a.Listen != "" {
		if _, _, err := net.SplitHostPort(a.Listen); err != nil {
			v.addf("admin.listen", "invalid address %q (want host:port or :port)", a.Listen)
		}
	}
	v.nonNegativeDuration("admin.resync", a.Resync)
	c.validateConsole(v)
}
