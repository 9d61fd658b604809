// Package members holds the gateway's one member-name rule for the JSON objects the client
// dialects interpret (the chat, Responses and Messages parsers): a name given twice, or a
// known field's name in another case, is refused, because such a body reads differently to
// different JSON decoders and may be forwarded upstream as it is. It works on the names an
// internal/jsonx Scanner reads and imports only the core translate package and jsonx.
package members

import (
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/agate-gateway/agate/internal/jsonx"
	"github.com/agate-gateway/agate/translate"
)

// Set holds the member names seen so far in one JSON object. The zero value is empty; a
// Set is not safe for concurrent use.
type Set struct {
	n    int
	few  [12]string
	many map[string]struct{} // past len(few) names
}

// Add records k and reports whether it is new.
func (s *Set) Add(k string) bool {
	if s.many != nil {
		if _, dup := s.many[k]; dup {
			return false
		}
		s.many[k] = struct{}{}
		return true
	}
	for _, v := range s.few[:s.n] {
		if v == k {
			return false
		}
	}
	if s.n < len(s.few) {
		s.few[s.n] = k
		s.n++
		return true
	}
	s.many = make(map[string]struct{}, 4*len(s.few))
	for _, v := range s.few {
		s.many[v] = struct{}{}
	}
	s.many[k] = struct{}{}
	return true
}

// Fold returns the field of known (a space-separated list of lower-case ASCII names) that
// the member name k equals only when case is ignored ("MODEL" for model), or "".
func Fold(k, known string) string {
	if PlainLower(k) {
		return ""
	}
	for names := known; names != ""; {
		field, rest, _ := strings.Cut(names, " ")
		if strings.EqualFold(k, field) {
			return field
		}
		names = rest
	}
	return ""
}

// Check applies the rule to the member name k of an object whose names so far are in seen,
// and adds k to seen: an object that names a member twice, or names one of known in
// another case, reads differently to different JSON decoders (gjson and the gateway take
// the first, most libraries the last, Go's encoding/json any case). base is the object's
// param path, "" at the top level. The error is a *translate.ParamError.
func Check(seen *Set, base, k, known string) error {
	if !seen.Add(k) {
		return Error(base, k, translate.CodeDuplicateKey, "")
	}
	if f := Fold(k, known); f != "" {
		return Error(base, k, translate.CodeKeyCase, f)
	}
	return nil
}

// Read walks the object obj once, applying Check to every member name, and stores the
// value of each name of known (space-separated, lower-case ASCII) in vals at the name's
// position in known; vals must be that long. base returns the object's param path; it is
// called only for an error, so a path is built only for a refused body. A value that is
// not an object has no members and passes. obj must come from sc; Read moves its cursor.
func Read(sc *jsonx.Scanner, obj jsonx.Value, base func() string, known string, vals []jsonx.Value) error {
	if obj.Kind != jsonx.Object {
		return nil
	}
	var seen Set
	sc.Seek(obj.At)
	for n := 0; sc.NextField(&n); {
		k := sc.Key()
		if !seen.Add(k) {
			return Error(base(), k, translate.CodeDuplicateKey, "")
		}
		j, plain := -1, PlainLower(k)
		for i, names := 0, known; names != ""; i++ {
			field, rest, _ := strings.Cut(names, " ")
			if k == field {
				j = i
				break
			}
			if !plain && strings.EqualFold(k, field) {
				return Error(base(), k, translate.CodeKeyCase, field)
			}
			names = rest
		}
		if j >= 0 {
			sc.Value(&vals[j])
		} else {
			sc.Skip()
		}
	}
	return nil
}

// Error returns the ParamError for the member name k that Check refused with code
// (translate.CodeDuplicateKey, or translate.CodeKeyCase with the field it folds to).
func Error(base, k, code, field string) *translate.ParamError {
	k = Clip(k)
	param := k
	if base != "" {
		param = base + "." + k
	}
	if code == translate.CodeDuplicateKey {
		return &translate.ParamError{Param: param, Code: code,
			Message: "the key " + strconv.Quote(k) + " appears more than once in the same object: send each field once"}
	}
	return &translate.ParamError{Param: param, Code: code,
		Message: "the key " + strconv.Quote(k) + " differs from the field " + strconv.Quote(field) + " only in case: field names are case-sensitive"}
}

// PlainLower reports whether s is ASCII without upper-case letters: such a name equals a
// lower-case ASCII field name ignoring case only if it equals it exactly (Unicode folds no
// other ASCII rune onto one, only U+017F and U+212A from outside ASCII).
func PlainLower(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= utf8.RuneSelf || c >= 'A' && c <= 'Z' {
			return false
		}
	}
	return true
}

// Clip cuts a client-supplied name to 64 bytes (at a rune start) for error messages.
func Clip(s string) string {
	const max = 64
	if len(s) <= max {
		return s
	}
	n := max
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "..."
}
