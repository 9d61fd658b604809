package config

import (
	"testing"
	"time"
)

// TestConsole_Config: the console is on with the admin API unless disabled; its
// settings' defaults and their validation, naming the key.
func TestConsole_Config(t *testing.T) {
	admin := "ledger: {type: sqlite}\nadmin: {keys: {ops: {key_sha256: " + sha64 + "}}"
	for _, tc := range []struct {
		name, yaml string
		on         bool
		ttl        time.Duration
		max        int
		want       string
	}{
		{"off without admin", "", false, 0, 0, ""},
		{"on with admin, defaults", admin + "}", true, 8 * time.Hour, 1000, ""},
		{"disabled", admin + ", console: {disabled: true}}", false, 8 * time.Hour, 1000, ""},
		{"set", admin + ", console: {session_ttl: 30m, max_sessions: 5}}", true, 30 * time.Minute, 5, ""},
		{"ttl too short", admin + ", console: {session_ttl: 30s}}", true, 0, 0, "config: admin.console.session_ttl: at least 1m"},
		{"negative max", admin + ", console: {max_sessions: -1}}", true, 0, 0, "config: admin.console.max_sessions: must not be negative"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := Parse([]byte(tc.yaml), nil)
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tc.want {
				t.Fatalf("Parse error %q, want %q", got, tc.want)
			}
			if err != nil {
				return
			}
			if cfg.Admin.ConsoleOn() != tc.on || cfg.Admin.AdminOn() && (cfg.Admin.Console.SessionTTL != tc.ttl || cfg.Admin.Console.MaxSessions != tc.max) {
				t.Errorf("console on %v %+v; want on %v, ttl %s, max %d", cfg.Admin.ConsoleOn(), cfg.Admin.Console, tc.on, tc.ttl, tc.max)
			}
		})
	}
}

// TestConsole_TraceURL: admin.console.trace_url is an absolute http(s) URL with
// {trace_id} in it; anything else is an error naming the key.
func TestConsole_TraceURL(t *testing.T) {
	admin := "ledger: {type: sqlite}\nadmin: {keys: {ops: {key_sha256: " + sha64 + "}}, console: {trace_url: "
	for _, tc := range []struct{ name, url, want string }{
		{"jaeger", "'https://jaeger.example/trace/{trace_id}'", ""},
		{"grafana tempo, in the query", "'http://grafana.local:3000/explore?traceId={trace_id}&orgId=1'", ""},
		{"no placeholder", "'https://jaeger.example/trace/'", "config: admin.console.trace_url: must contain {trace_id}, where the trace id goes"},
		{"relative", "'/trace/{trace_id}'", "config: admin.console.trace_url: an absolute http(s) URL, e.g. https://jaeger.example/trace/{trace_id}"},
		{"script", "'javascript:alert(1)//{trace_id}'", "config: admin.console.trace_url: an absolute http(s) URL, e.g. https://jaeger.example/trace/{trace_id}"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := Parse([]byte(admin+tc.url+"}}"), nil)
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tc.want {
				t.Fatalf("Parse error %q, want %q", got, tc.want)
			}
			if err == nil && cfg.Admin.Console.TraceURL == "" {
				t.Error("trace_url not kept")
			}
		})
	}
}
