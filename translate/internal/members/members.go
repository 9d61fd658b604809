// Package members checks the member names of JSON objects that client dialects read with
// gjson (the Responses and Messages parsers): a name given twice, or a known field's name in
// another case, is refused, because such a body reads differently to different JSON
// decoders and may be forwarded upstream as it is. It imports only the core translate
// package and gjson.
package members

import (
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/agate-gateway/agate/translate"
	"github.com/tidwall/gjson"
)

// Check applies the chat parser's member-name rule to obj: an object that names a
// member twice, or names one of known (a space-separated list of lower-case ASCII names)
// in another case ("MODEL"), reads differently to different JSON decoders (gjson and the
// gateway take the first, most libraries the last, Go's encoding/json any case), and the
// body may be forwarded as it is to a responses backend, so what reaches the upstream
// must be what the gateway authorized. base is the object's param path, "" at the top
// level. A value that is not an object passes.
func Check(obj gjson.Result, base, known string) error {
	if !obj.IsObject() {
		return nil
	}
	var err error
	seen := make(map[string]struct{}, 8)
	obj.ForEach(func(k, _ gjson.Result) bool {
		name := k.Str
		if _, dup := seen[name]; dup {
			err = keyError(base, name, translate.CodeDuplicateKey, "")
			return false
		}
		seen[name] = struct{}{}
		if plainLower(name) {
			return true
		}
		for names := known; names != ""; {
			field, rest, _ := strings.Cut(names, " ")
			if strings.EqualFold(name, field) {
				err = keyError(base, name, translate.CodeKeyCase, field)
				return false
			}
			names = rest
		}
		return true
	})
	return err
}

func keyError(base, k, code, field string) error {
	k = clip(k)
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

// plainLower reports whether s is ASCII without upper-case letters: such a name equals a
// lower-case ASCII field name ignoring case only if it equals it exactly (Unicode folds no
// other ASCII rune onto one, only U+017F and U+212A from outside ASCII).
func plainLower(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= utf8.RuneSelf || c >= 'A' && c <= 'Z' {
			return false
		}
	}
	return true
}

// clip cuts a client-supplied name to 64 bytes (at a rune start) for error messages.
func clip(s string) string {
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
