package config

import (
	"net/url"
	"strings"
	"time"
)

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
	// TraceURL is the address of a trace in the operator's trace UI, with {trace_id} where
	// the trace id goes (e.g. "https://jaeger.example/trace/{trace_id}"): the request
	// detail links a record's trace there. Empty (the default): no link, the id is shown.
	// An absolute http or https URL.
	TraceURL string `koanf:"trace_url"`
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
	if t := c.Admin.Console.TraceURL; t != "" {
		u, err := url.Parse(strings.ReplaceAll(t, "{trace_id}", "0"))
		switch {
		case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
			v.addf("admin.console.trace_url", "an absolute http(s) URL, e.g. https://jaeger.example/trace/{trace_id}")
		case !strings.Contains(t, "{trace_id}"):
			v.addf("admin.console.trace_url", "must contain {trace_id}, where the trace id goes")
		case len(t) > 2048:
			v.addf("admin.console.trace_url", "at most 2048 bytes")
		}
	}
}
