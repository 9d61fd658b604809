// Package console is the browser console of the gateway: its static assets (plain ES
// modules, embedded with go:embed, no build step) served under /console, and the
// administrators' sign-in sessions.
//
// The console is a client of the admin API (/admin/v1) and nothing more: the pages read
// and change keys, usage and request records through it. What this package adds is the
// way a browser authenticates: POST /console/session with the admin token answers an
// HttpOnly, SameSite=Strict session cookie and a CSRF token (the synchronizer token of
// the session, also readable by GET /console/session from the console's own origin);
// the admin API accepts the cookie in place of the bearer token (Console.Session), and a
// change (any method but GET and HEAD) only with the session's token in the
// X-CSRF-Token header.
//
// Sessions live in this process only (a replica's restart signs everyone out), at most
// Options.MaxSessions at once, each for Options.TTL from its sign-in. Every answer carries
// a strict Content-Security-Policy (script-src 'self', no inline script or style), and the
// pages render every value from the database or a client as text.
package console
