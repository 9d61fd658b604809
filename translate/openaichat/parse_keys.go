package openaichat

import (
	"github.com/agate-gateway/agate/translate"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Member names in the objects the parser reads. A JSON object that names a member twice, or
// names one of the fields below in another case, means different things to different
// decoders: gjson and the gateway take the first, most JSON libraries the last, and Go's
// encoding/json (and so many upstreams) the last of any case ("MODEL" sets Model). The
// OpenAI passthrough forwards the client's bytes, so such a body could reach the upstream
// as a different request than the one the gateway authorized and metered. The parser
// rejects both shapes in every object it interprets; forwarded bodies then read the same to
// every decoder.
//
// The lists are space-separated and all lowercase ASCII.
const (
	topLevelFields = "model messages stream stream_options tools tool_choice parallel_tool_calls " +
		"max_tokens max_completion_tokens temperature top_p presence_penalty frequency_penalty stop n seed " +
		"logprobs top_logprobs response_format reasoning_effort user metadata"
	streamOptionsFields  = "include_usage"
	messageFields        = "role content name tool_call_id tool_calls reasoning_content thinking_blocks refusal"
	partFields           = "type text refusal image_url file input_audio"
	toolCallFields       = "id type function"
	toolCallFuncFields   = "name arguments"
	toolFields           = "type function"
	toolChoiceFields     = "type function"
	responseFormatFields = "type json_schema"
)

// Codes of the ParamErrors for ambiguous member names.
const (
	CodeDuplicateKey = translate.CodeDuplicateKey
	CodeKeyCase      = translate.CodeKeyCase
)

// keySet holds the member names seen so far in one JSON object. The zero value is empty.
type keySet struct {
	n    int
	few  [12]string
	many map[string]struct{} // past len(few) names
}

// add records k and reports whether it is new.
func (s *keySet) add(k string) bool {
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

// member checks the name of the object member the scanner is at (sc.Key()): it fails when
// the name was already seen in this object, or equals one of known (a space-separated list)
// only when case is ignored. base returns the object's param path, "" at the top level.
func (p *parser) member(seen *keySet, base func() string, known string) bool {
	k := p.sc.Key()
	if !seen.add(k) {
		return p.keyError(base, k, CodeDuplicateKey, "")
	}
	if plainLower(k) {
		return true
	}
	for names := known; names != ""; {
		name, rest, _ := strings.Cut(names, " ")
		if strings.EqualFold(k, name) {
			return p.keyError(base, k, CodeKeyCase, name)
		}
		names = rest
	}
	return true
}

// memberOf is member for an object read with fields: the known names are the wanted ones.
func (p *parser) memberOf(seen *keySet, base func() string, wants []want) bool {
	k := p.sc.Key()
	if !seen.add(k) {
		return p.keyError(base, k, CodeDuplicateKey, "")
	}
	if plainLower(k) {
		return true
	}
	for _, w := range wants {
		if strings.EqualFold(k, w.key) {
			return p.keyError(base, k, CodeKeyCase, w.key)
		}
	}
	return true
}

func (p *parser) keyError(base func() string, k, code, field string) bool {
	k = clip(k, 64)
	param := k
	if b := base(); b != "" {
		param = b + "." + k
	}
	if code == CodeDuplicateKey {
		p.err = &translate.ParamError{Param: param, Code: code,
			Message: "the key " + strconv.Quote(k) + " appears more than once in the same object: send each field once"}
	} else {
		p.err = &translate.ParamError{Param: param, Code: code,
			Message: "the key " + strconv.Quote(k) + " differs from the field " + strconv.Quote(field) + " only in case: field names are case-sensitive"}
	}
	return false
}

// plainLower reports whether s is ASCII without upper-case letters. Such a name equals a
// known (lower-case ASCII) field name ignoring case only if it equals it exactly: Unicode
// case folding maps no other rune to a lower-case ASCII letter except from outside ASCII
// (U+017F to s, U+212A to k).
func plainLower(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= utf8.RuneSelf || c >= 'A' && c <= 'Z' {
			return false
		}
	}
	return true
}

// clip cuts s to at most n bytes on a rune boundary.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "..."
}

// noBase is the param path of the top-level object.
func noBase() string { return "" }
