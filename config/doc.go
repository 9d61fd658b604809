// Package config defines Agate's configuration, loads it and keeps it current.
//
// Load reads a YAML file, applies GATEWAY_* environment overrides, expands ${VAR}
// references in string values, rejects unknown keys, fills in defaults and validates the
// result, reporting every problem at once with the dotted path of the field at fault
// (never a secret value). The resulting Config is plain data that is not modified after
// Load returns. Watcher reloads the file when it changes or on demand (SIGHUP) and hands a
// new Config to the caller only when it is valid, so a broken edit never replaces a working
// configuration.
//
// Only the edge reads a Config: cmd/gateway and proxy. The packages built around the server
// (loop, tools, telemetry, limits) take options of their own with their own defaults, and
// proxy/options.go maps the sections to them; the defaults here are the same numbers.
package config
