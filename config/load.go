package config

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-viper/mapstructure/v2"
	"github.com/knadh/koanf/parsers/yaml"
	"github.com/knadh/koanf/providers/env/v2"
	"github.com/knadh/koanf/providers/rawbytes"
	"github.com/knadh/koanf/v2"
)

// EnvPrefix starts the names of environment variables that override file values:
// GATEWAY_SERVER__LISTEN=:9090 sets server.listen, GATEWAY_BACKENDS__CLAUDE__API_KEY sets
// backends.claude.api_key. After the prefix the name is lowercased and "__" separates
// the levels, so a map entry whose name has capitals cannot be addressed this way.
//
// Every configurable value sits at least two levels deep, so a name with no "__" after
// the prefix is not an override and is ignored: EnvConfigPath, and variables that other
// software sets for a service called "gateway" (Kubernetes' GATEWAY_PORT, say).
const EnvPrefix = "GATEWAY_"

// EnvConfigPath names the environment variable that holds the configuration file's path
// (the gateway's -config flag defaults to it). It is not an override.
const EnvConfigPath = "GATEWAY_CONFIG"

// envLevelSep separates levels in an override's name after EnvPrefix.
const envLevelSep = "__"

// Load reads the YAML file at path and returns the configuration it describes, with the
// overrides and ${VAR} references resolved against environ, defaults filled in and
// everything validated. environ holds "NAME=value" entries as returned by os.Environ; a
// later entry for the same name wins. Load never reads the process environment itself.
//
// The error, if any, lists every problem found, one per line, each naming the field by its
// dotted path (models.fast.backend); it never contains a secret value. An empty file is an
// error (Parse accepts an empty document).
func Load(path string, environ []string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	return loadBytes(path, data, environ)
}

// loadBytes is Load for the bytes read from the file at path.
func loadBytes(path string, data []byte, environ []string) (*Config, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		// Most likely a file caught halfway through being rewritten; as a configuration it
		// would silently drop every backend and model.
		return nil, fmt.Errorf("config: %s is empty", path)
	}
	cfg, err := Parse(data, environ)
	if err == nil {
		cfg.ledgerBeside(filepath.Dir(path))
	}
	return cfg, err
}

// Parse is Load for a configuration already in memory, such as a YAML document written
// inline by a test. An empty document is a valid configuration with nothing but defaults.
//
// The steps, in order:
//
//  1. The YAML is parsed.
//  2. Every environ entry named EnvPrefix+SECTION__KEY... sets the value at its path (see
//     EnvPrefix), creating map entries as needed; names without "__" are ignored. Such values are plain strings converted to the
//     field's type; they cannot set a list, and they are taken literally (no ${VAR}).
//  3. In every string value from the file, ${NAME} is replaced by the value of NAME in
//     environ and ${NAME:-default} by that value or, when NAME is unset or empty, by
//     default (which ends at the first "}"). $${ stands for a literal ${; any other $ is
//     kept. An unset NAME without a default is an error: a silently empty key or
//     policy would be dangerous. Replaced text is not expanded again, and expansion
//     happens after parsing, so a value cannot change the structure of the file.
//  4. The result is decoded into Config: an unknown key anywhere is an error, names match
//     exactly (case-sensitive), and durations must be strings with a unit ("30s").
//  5. If any of the steps above found a problem, those problems are the error. Otherwise
//     defaults are filled in (see the field comments) and Validate runs.
func Parse(data []byte, environ []string) (*Config, error) {
	ko := koanf.New(".")
	if err := ko.Load(rawbytes.Provider(data), yaml.Parser()); err != nil {
		return nil, fmt.Errorf("config: parsing yaml: %w%s", err, tabHint(data))
	}

	var problems []error
	overrides := map[string]string{} // dotted path -> the variable that set it
	provider := env.Provider(envLevelSep, env.Opt{
		Prefix:      EnvPrefix,
		EnvironFunc: func() []string { return environ },
		TransformFunc: func(name, value string) (string, any) {
			key := strings.ToLower(strings.TrimPrefix(name, EnvPrefix))
			if !strings.Contains(key, envLevelSep) {
				return "", nil // not an override (GATEWAY_CONFIG, GATEWAY_PORT...)
			}
			levels := strings.Split(key, envLevelSep)
			if slices.Contains(levels, "") {
				problems = append(problems, fmt.Errorf("config: environment variable %s: empty level in name (levels are separated by %q)", name, envLevelSep))
				return "", nil
			}
			overrides[strings.Join(levels, ".")] = name
			return key, value
		},
	})
	if err := ko.Load(provider, nil); err != nil {
		return nil, fmt.Errorf("config: reading environment overrides: %w", err)
	}

	raw := ko.Raw()
	problems = append(problems, expandTree(raw, "", lookupFunc(environ), overrides)...)

	var c Config
	decoded, err := decode(raw, &c)
	if err != nil {
		return nil, err
	}
	for _, p := range decoded {
		if name, ok := overrides[p.path]; ok {
			p.msg += " (set by " + name + ")"
		}
		problems = append(problems, p)
	}

	if len(problems) > 0 {
		// Validating now would add noise: a field that failed to decode drops its whole
		// map entry, and every reference to that entry would be reported as unknown.
		return nil, joinSorted(problems)
	}
	c.applyDefaults(raw)
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return &c, nil
}

// tabHint names the first line of data indented with a tab, which YAML does not allow
// and its parser reports only as a character that "cannot start any token"; "" when
// there is none.
func tabHint(data []byte) string {
	for i, line := range bytes.Split(data, []byte("\n")) {
		indent := line[:len(line)-len(bytes.TrimLeft(line, " \t"))]
		if bytes.IndexByte(indent, '\t') >= 0 {
			return fmt.Sprintf(" (line %d has a tab: YAML indents with spaces only)", i+1)
		}
	}
	return ""
}

// unusedPrefix starts the message of mapstructure's ErrorUnused (pinned by a test).
const unusedPrefix = "has invalid keys: "

// mapProvider is a koanf.Provider for a configuration map that is already built.
type mapProvider map[string]any

func (m mapProvider) Read() (map[string]any, error) { return m, nil }
func (m mapProvider) ReadBytes() ([]byte, error) {
	return nil, errors.New("config: map provider has no bytes")
}

// decode decodes raw into c strictly and returns the problems found, each naming a field.
// The error is for failures that are not about the configuration.
func decode(raw map[string]any, c *Config) ([]*fieldError, error) {
	ko := koanf.New(".")
	if err := ko.Load(mapProvider(raw), nil); err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	err := ko.UnmarshalWithConf("", c, koanf.UnmarshalConf{
		DecoderConfig: &mapstructure.DecoderConfig{
			// No weak typing: it read `tools: true` as ["1"] and `models: "*"` as ["*"].
			// typeHook converts what must be converted (the environment's strings, numbers
			// written where text is meant) and names the expected type otherwise.
			DecodeHook:  mapstructure.ComposeDecodeHookFunc(durationHook, dateStringHook, typeHook),
			ErrorUnused: true,
			TagName:     "koanf",
			MatchName:   func(mapKey, fieldName string) bool { return mapKey == fieldName },
		},
	})
	rootName := reflect.TypeOf(*c).String()
	var problems []*fieldError
	var walk func(error)
	walk = func(err error) {
		if joined, ok := err.(interface{ Unwrap() []error }); ok {
			for _, e := range joined.Unwrap() {
				walk(e)
			}
			return
		}
		de, ok := err.(*mapstructure.DecodeError)
		if !ok {
			if inner := errors.Unwrap(err); inner != nil {
				walk(inner) // the decoder wraps its joined errors in a summary
			} else {
				problems = append(problems, &fieldError{msg: err.Error(), bare: true})
			}
			return
		}
		parent, msg := dottedPath(de.Name()), de.Unwrap().Error()
		if parent == rootName {
			parent = "" // mapstructure ≥ v2.5 names the root by its type
		}
		// ErrorUnused reports the unknown keys of one map as `has invalid keys: a, b`;
		// name each by its full path. Any other wording is kept as it is.
		if keys, ok := strings.CutPrefix(msg, unusedPrefix); ok {
			for key := range strings.SplitSeq(keys, ", ") {
				path := joinPath(parent, key)
				problems = append(problems, &fieldError{path: path, msg: fmt.Sprintf("unknown field %q", path), bare: true})
			}
			return
		}
		problems = append(problems, &fieldError{path: parent, msg: msg})
	}
	if err != nil {
		walk(err)
	}
	return problems, nil
}

// dottedPath turns a mapstructure field name such as models[fast].fallbacks[0] into the
// path users write: models.fast.fallbacks[0].
func dottedPath(name string) string {
	var b strings.Builder
	for i := 0; i < len(name); i++ {
		if name[i] != '[' {
			b.WriteByte(name[i])
			continue
		}
		end := strings.IndexByte(name[i:], ']')
		if end < 0 {
			b.WriteString(name[i:])
			break
		}
		key := name[i+1 : i+end]
		if isIndex(key) {
			b.WriteString(name[i : i+end+1])
		} else {
			b.WriteByte('.')
			b.WriteString(key)
		}
		i += end
	}
	return b.String()
}

func isIndex(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

var durationType = reflect.TypeFor[time.Duration]()

// durationHook decodes durations from strings with a unit. A bare number is rejected
// (except 0) because the decoder would read "ttl: 600" as 600 nanoseconds.
func durationHook(from, to reflect.Type, data any) (any, error) {
	if to != durationType {
		return data, nil
	}
	switch from.Kind() {
	case reflect.String:
		s := strings.TrimSpace(data.(string))
		d, err := time.ParseDuration(s)
		if err != nil {
			return nil, fmt.Errorf("invalid duration %q (want a number with a unit, such as \"30s\")", s)
		}
		return d, nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64:
		if reflect.ValueOf(data).IsZero() {
			return time.Duration(0), nil
		}
		return nil, fmt.Errorf("duration %v has no unit (write a string such as \"30s\")", data)
	}
	return data, nil
}

var timeType = reflect.TypeFor[time.Time]()

// dateStringHook decodes a YAML date into a string field as it was written: YAML reads
// "api_version: 2024-10-21" (azure) as a timestamp, and an api-version is a string. It
// runs before typeHook, which would refuse a timestamp where text is meant.
func dateStringHook(from, to reflect.Type, data any) (any, error) {
	if from != timeType || to.Kind() != reflect.String {
		return data, nil
	}
	t := data.(time.Time)
	if t.Equal(t.Truncate(24*time.Hour)) && t.Location() == time.UTC {
		return t.Format(time.DateOnly), nil
	}
	return t.Format(time.RFC3339Nano), nil
}

// typeHook converts a string to the number or boolean a field holds (an environment
// override is always a string, and so is a ${VAR}), and a number or boolean written
// where text is meant to its text; it refuses anything else that is not of the field's
// type with a message that shows the value (clipped) and names the type expected, such
// as `"lots" is not an integer` or `must be a list, not a string (write ["*"])`.
func typeHook(from, to reflect.Type, data any) (any, error) {
	if to == durationType || data == nil {
		return data, nil
	}
	fk, tk := from.Kind(), to.Kind()
	if fk == tk {
		return data, nil
	}
	s, isString := data.(string)
	shown := strconv.Quote(clipValue(fmt.Sprint(data)))
	switch tk {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if isString {
			n, err := strconv.ParseInt(strings.TrimSpace(s), 10, to.Bits())
			if err != nil {
				return nil, fmt.Errorf("%s is not an integer", shown)
			}
			return n, nil
		}
		if f, ok := data.(float64); ok {
			if f != float64(int64(f)) {
				return nil, fmt.Errorf("must be an integer, not a number %s", shown)
			}
			return int64(f), nil
		}
		if isNumber(fk) {
			return data, nil // mapstructure converts between integer kinds
		}
		return nil, fmt.Errorf("must be an integer, not %s %s", yamlKind(fk), shown)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if isString {
			n, err := strconv.ParseUint(strings.TrimSpace(s), 10, to.Bits())
			if err != nil {
				return nil, fmt.Errorf("%s is not a non-negative integer", shown)
			}
			return n, nil
		}
		if f, ok := data.(float64); ok && f != float64(int64(f)) {
			return nil, fmt.Errorf("must be a non-negative integer, not a number %s", shown)
		}
		if isNumber(fk) {
			return data, nil
		}
		return nil, fmt.Errorf("must be a non-negative integer, not %s %s", yamlKind(fk), shown)
	case reflect.Float32, reflect.Float64:
		if isString {
			f, err := strconv.ParseFloat(strings.TrimSpace(s), to.Bits())
			if err != nil {
				return nil, fmt.Errorf("%s is not a number", shown)
			}
			return f, nil
		}
		if isNumber(fk) {
			return data, nil
		}
		return nil, fmt.Errorf("must be a number, not %s %s", yamlKind(fk), shown)
	case reflect.Bool:
		if isString {
			b, err := strconv.ParseBool(strings.TrimSpace(s))
			if err != nil {
				return nil, fmt.Errorf("%s is not true or false", shown)
			}
			return b, nil
		}
		return nil, fmt.Errorf("must be true or false, not %s %s", yamlKind(fk), shown)
	case reflect.String:
		if isNumber(fk) || fk == reflect.Bool {
			return fmt.Sprint(data), nil
		}
		return nil, fmt.Errorf("must be a string, not %s", yamlKind(fk))
	case reflect.Slice, reflect.Array:
		if fk == reflect.Slice || fk == reflect.Array {
			return data, nil
		}
		if isString || isNumber(fk) {
			return nil, fmt.Errorf("must be a list, not %s (write [%s])", yamlKind(fk), shown)
		}
		return nil, fmt.Errorf("must be a list, not %s", yamlKind(fk))
	case reflect.Map, reflect.Struct:
		if fk == reflect.Map {
			return data, nil
		}
		return nil, fmt.Errorf("must be a mapping of keys to values, not %s", yamlKind(fk))
	}
	return data, nil
}

// isNumber reports whether k is a numeric kind.
func isNumber(k reflect.Kind) bool {
	return (k >= reflect.Int && k <= reflect.Uint64) || k == reflect.Float32 || k == reflect.Float64
}

// yamlKind names a decoded YAML value's kind as a user wrote it.
func yamlKind(k reflect.Kind) string {
	switch {
	case k == reflect.String:
		return "a string"
	case k == reflect.Bool:
		return "a boolean"
	case isNumber(k):
		return "a number"
	case k == reflect.Slice || k == reflect.Array:
		return "a list"
	case k == reflect.Map:
		return "a mapping"
	}
	return "a " + k.String()
}

// clipValue shortens a shown value to 40 bytes.
func clipValue(s string) string {
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}

// lookupFunc returns a lookup in environ where the last entry for a name wins.
func lookupFunc(environ []string) func(string) (string, bool) {
	vars := make(map[string]string, len(environ))
	for _, kv := range environ {
		if name, value, ok := strings.Cut(kv, "="); ok {
			vars[name] = value
		}
	}
	return func(name string) (string, bool) {
		v, ok := vars[name]
		return v, ok
	}
}

// expandTree expands ${VAR} references in place in every string of node, except in the
// values set by environment overrides, and returns the problems found.
func expandTree(node map[string]any, path string, lookup func(string) (string, bool), overrides map[string]string) []error {
	var problems []error
	var walk func(v any, path string) any
	walk = func(v any, path string) any {
		switch v := v.(type) {
		case map[string]any:
			for k, x := range v {
				v[k] = walk(x, joinPath(path, k))
			}
		case []any:
			for i, x := range v {
				v[i] = walk(x, fmt.Sprintf("%s[%d]", path, i))
			}
		case string:
			if _, ok := overrides[path]; ok {
				return v
			}
			s, err := expand(v, lookup)
			if err != nil {
				problems = append(problems, &fieldError{path: path, msg: err.Error()})
				return ""
			}
			return s
		}
		return v
	}
	walk(node, path)
	return problems
}

func joinPath(parent, key string) string {
	if parent == "" {
		return key
	}
	return parent + "." + key
}

// expand resolves the ${NAME} and ${NAME:-default} references in s. Its errors never
// quote s, which may be a secret.
func expand(s string, lookup func(string) (string, bool)) (string, error) {
	if !strings.Contains(s, "${") {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		switch {
		case strings.HasPrefix(s[i:], "$${"):
			b.WriteString("${")
			i += 3
		case strings.HasPrefix(s[i:], "${"):
			end := strings.IndexByte(s[i+2:], '}')
			if end < 0 {
				return "", fmt.Errorf(`unterminated "${" at byte %d (write "$${" for a literal "${")`, i)
			}
			name, def, hasDef := strings.Cut(s[i+2:i+2+end], ":-")
			if !isEnvName(name) {
				return "", fmt.Errorf(`invalid variable reference at byte %d (want ${NAME} or ${NAME:-default})`, i)
			}
			v, ok := lookup(name)
			switch {
			case hasDef && v == "":
				b.WriteString(def)
			case ok:
				b.WriteString(v)
			default:
				return "", fmt.Errorf("environment variable %s is not set (write ${%s:-} to allow an empty value)", name, name)
			}
			i += 2 + end + 1
		default:
			b.WriteByte(s[i])
			i++
		}
	}
	return b.String(), nil
}

// isEnvName reports whether s is a portable environment variable name.
func isEnvName(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		switch {
		case r == '_', 'A' <= r && r <= 'Z', 'a' <= r && r <= 'z':
		case '0' <= r && r <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}
