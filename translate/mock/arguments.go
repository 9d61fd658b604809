package mock

import (
	"github.com/agate-gateway/agate/internal/jsonx"
)

// maxSchemaDepth bounds how deep Arguments follows nested objects and arrays: a
// schema is client input, and the arguments of a deeper one are cut to {} or [].
const maxSchemaDepth = 8

// Arguments returns JSON arguments that satisfy the JSON Schema schema as far as a
// mock can tell: for an object, every required property (every property when the
// schema names none required) with the first of its const, default, examples, example
// or enum, else a value of its type ("example" for a string, or a date, date-time,
// email, uri or uuid for those formats; 1 for a number or integer, or its minimum;
// true; a one-element array of its items; an object filled the same way). A schema
// that does not parse, or none, gives "{}". Property names and strings are copied as
// the schema escapes them. It reads the schema with jsonx and allocates the result only.
func Arguments(schema string) string {
	if schema == "" {
		return "{}"
	}
	sc := jsonx.NewScanner(schema)
	out := value(&sc, nil, 0)
	if sc.Failed() || len(out) == 0 || out[0] != '{' {
		return "{}"
	}
	return string(out)
}

// schemaOf is what value needs of one schema object.
type schemaOf struct {
	typ, format, items, properties, required string
	chosen                                   string // a const, default, example or enum's first: raw JSON
	minimum                                  string
}

// value appends a value for the schema at sc's cursor to dst and moves past it.
func value(sc *jsonx.Scanner, dst []byte, depth int) []byte {
	var s schemaOf
	var v jsonx.Value
	n := 0
	for sc.NextField(&n) {
		v = jsonx.Value{}
		if !sc.Value(&v) {
			return dst
		}
		switch sc.Key() {
		case "type":
			if v.Kind == jsonx.String {
				s.typ = v.Str
			} else if v.Kind == jsonx.Array { // ["string","null"]: the first
				s.typ = firstString(v.Raw)
			}
		case "format":
			s.format = v.Str
		case "items":
			s.items = v.Raw
		case "properties":
			s.properties = v.Raw
		case "required":
			s.required = v.Raw
		case "minimum":
			s.minimum = v.Raw
		case "const":
			s.chosen = v.Raw
		case "default":
			if s.chosen == "" {
				s.chosen = v.Raw
			}
		case "example":
			if s.chosen == "" {
				s.chosen = v.Raw
			}
		case "examples", "enum":
			if s.chosen == "" && v.Kind == jsonx.Array {
				s.chosen = firstRaw(v.Raw)
			}
		}
	}
	if sc.Failed() {
		return dst
	}
	if s.chosen != "" {
		return append(dst, s.chosen...)
	}
	if s.typ == "" && s.properties != "" {
		s.typ = "object"
	}
	switch s.typ {
	case "object":
		return object(dst, s, depth)
	case "array":
		if s.items == "" || s.items[0] != '{' || depth >= maxSchemaDepth {
			return append(dst, "[]"...)
		}
		isc := jsonx.NewScanner(s.items)
		dst = append(dst, '[')
		dst = value(&isc, dst, depth+1)
		return append(dst, ']')
	case "integer", "number":
		if s.minimum != "" {
			return append(dst, s.minimum...)
		}
		return append(dst, '1')
	case "boolean":
		return append(dst, "true"...)
	case "null":
		return append(dst, "null"...)
	}
	switch s.format { // a string, or no type at all
	case "date":
		return append(dst, `"2026-01-01"`...)
	case "date-time":
		return append(dst, `"2026-01-01T00:00:00Z"`...)
	case "email":
		return append(dst, `"user@example.com"`...)
	case "uri", "url":
		return append(dst, `"https://example.com"`...)
	case "uuid":
		return append(dst, `"00000000-0000-4000-8000-000000000000"`...)
	}
	return append(dst, `"example"`...)
}

// object appends an object for schema s: its required properties, or all of them.
func object(dst []byte, s schemaOf, depth int) []byte {
	dst = append(dst, '{')
	if s.properties == "" || s.properties[0] != '{' || depth >= maxSchemaDepth {
		return append(dst, '}')
	}
	psc := jsonx.NewScanner(s.properties)
	n, wrote := 0, 0
	for psc.NextField(&n) {
		name := psc.Key()
		if psc.Peek() != '{' || (s.required != "" && !listed(s.required, name)) {
			if !psc.Skip() {
				break
			}
			continue
		}
		if wrote > 0 {
			dst = append(dst, ',')
		}
		wrote++
		dst = jsonx.AppendString(dst, name)
		dst = append(dst, ':')
		dst = value(&psc, dst, depth+1)
	}
	return append(dst, '}')
}

// listed reports whether the JSON array of strings raw holds name.
func listed(raw, name string) bool {
	sc := jsonx.NewScanner(raw)
	var v jsonx.Value
	for n := 0; sc.NextElem(&n); {
		v = jsonx.Value{}
		if !sc.Value(&v) {
			return false
		}
		if v.Kind == jsonx.String && v.Str == name {
			return true
		}
	}
	return false
}

// firstRaw returns the raw JSON of the first element of the array raw, "" if none.
func firstRaw(raw string) string {
	sc := jsonx.NewScanner(raw)
	var v jsonx.Value
	for n := 0; sc.NextElem(&n); {
		if sc.Value(&v) {
			return v.Raw
		}
		break
	}
	return ""
}

// firstString returns the first string of the JSON array raw that is not "null".
func firstString(raw string) string {
	sc := jsonx.NewScanner(raw)
	var v jsonx.Value
	for n := 0; sc.NextElem(&n); {
		v = jsonx.Value{}
		if !sc.Value(&v) {
			return ""
		}
		if v.Kind == jsonx.String && v.Str != "null" {
			return v.Str
		}
	}
	return ""
}
