package config

import "time"

// Console configures the browser console served under /console (docs/console.md). It is
// on whenever the admin API is (admin.keys), on the same listener as /admin/v1 (admin.listen
// when set), unless Disabled. The console is a client of the admin API: an administrator
// signs in with the admin token, which buys a session cookie kept on this replica.
type Console struct {
	// Disabled turns the console off while the admin API stays on.
	Disabled bool `koanf:"disabled"`
	// SessionTTL is how long a sign-in lasts, from the sign-in (default 8h).
	SessionTTL time.Duration `koanf:"session_ttl"`
	// MaxSessions bounds the sessions held at once (default 1000); a sign-in beyond it
	// ends the session closest to its end.
	MaxSessions int `koanf:"max_sessions"`
}

const (
	defaultConsoleSessionTTL  = 8 * time.Hour
	defaultConsoleMaxSessions = 1000
)

// ConsoleOn reports whether the console is served.
func (a Admin) ConsoleOn() bool { return a.AdminOn() && !a.Console.Disabled }

func (c *Config) consoleDefaults() {
	setDefault(&c.Admin.Console.SessionTTL, defaultConsoleSessionTTL)
	setDefault(&c.Admin.Console.MaxSessions, defaultConsoleMaxSessions)
}

func (c *Config) validateConsole(v *validator) {
	v.nonNegativeDuration("admin.console.session_ttl", c.Admin.Console.SessionTTL)
	v.nonNegative("admin.console.max_sessions", c.Admin.Console.MaxSessions)
	if c.Admin.Console.SessionTTL > 0 && c.Admin.Console.SessionTTL < time.Minute {
		v.addf("admin.console.session_ttl", "at least 1m")
	}
}
