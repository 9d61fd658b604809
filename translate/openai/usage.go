package openai

import (
	"github.com/agate-gateway/agate/internal/jsonx"
	"github.com/agate-gateway/agate/translate"
)

// usageCompact reads the usage object that starts at s[at] ('{') when it is written the
// way OpenAI and the servers that copy it write one: no whitespace; member names of
// lower-case ASCII letters, digits and underscores; values that are null, an integer of 1
// to 18 digits (no sign, fraction or exponent), or, one level down only, an object whose
// members are such names with null or such integers (the details objects). It returns what
// usageAt reads of it (the first member of each name; null, an object where a count is
// read and a missing count read as 0) and the offset just past the object. For anything
// else ok is false and the caller reads the object with the scanner (usageGeneral), which
// gives the same usage and end for every object this accepts
// (FuzzUsageCompactMatchesGeneral): what it accepts is valid JSON, since every byte it
// takes is one the grammar allows there.
//
// OpenAI's names are compared as constants (knownName), others read eight bytes at a
// time (compactName, jsonx.PlainEnd); no call a member but those: the scanner's member loop took the
// bench answer's usage (13 members, two objects) 3.7 K instructions.
func usageCompact(s string, at int) (u translate.Usage, end int, ok bool) {
	var seen [4]bool
	i := at + 1
	if i < len(s) && s[i] == '}' {
		return u, i + 1, true
	}
	for {
		// slot: which count of u the member is, if it is the first of its name.
		slot, j, ok := knownName(s, i)
		if !ok {
			return translate.Usage{}, 0, false
		}
		if slot > completionDetails {
			slot = other // a details object's member, not a usage's
		}
		i = j
		if slot != other {
			if seen[slot] {
				slot = other
			} else {
				seen[slot] = true
			}
		}
		var n int
		if i < len(s) && s[i] == '{' {
			want := other // the member of a details object whose count is read
			switch slot {
			case promptDetails:
				want = cachedTokens
			case completionDetails:
				want = reasoningTokens
			}
			if n, i, ok = compactCounts(s, i, want); !ok {
				return translate.Usage{}, 0, false
			}
			if slot < promptDetails {
				n = 0 // an object where a count is read reads as 0 (Value.Int)
			}
		} else {
			if n, i, ok = compactInt(s, i); !ok {
				return translate.Usage{}, 0, false
			}
			if slot >= promptDetails {
				n = 0 // a details member that is not an object has no count
			}
		}
		switch slot {
		case promptTokens:
			u.PromptTokens = n
		case completionTokens:
			u.CompletionTokens = n
		case promptDetails:
			u.CachedTokens = n
		case completionDetails:
			u.ReasoningTokens = n
		}
		if i >= len(s) {
			return translate.Usage{}, 0, false
		}
		switch s[i] {
		case ',':
			i++
		case '}':
			return u, i + 1, true
		default:
			return translate.Usage{}, 0, false
		}
	}
}

// compactCounts reads the object at s[i] ('{') whose members are compactName's names
// with compactInt's values, and returns the count of its first member that knownName
// names want (0 when there is none, or it is null, or want is other) and the offset
// past the object.
func compactCounts(s string, i int, want int) (n, end int, ok bool) {
	i++
	if i < len(s) && s[i] == '}' {
		return 0, i + 1, true
	}
	found := false
	for {
		id, j, ok := knownName(s, i)
		if !ok {
			return 0, 0, false
		}
		var x int
		if x, i, ok = compactInt(s, j); !ok {
			return 0, 0, false
		}
		if !found && want != other && id == want {
			n, found = x, true
		}
		if i >= len(s) {
			return 0, 0, false
		}
		switch s[i] {
		case ',':
			i++
		case '}':
			return n, i + 1, true
		default:
			return 0, 0, false
		}
	}
}

// The names, quoted and with their colons, of the members OpenAI writes in a usage object
// and its details: knownName compares them as constants.
const (
	qPromptTokens      = `"prompt_tokens":`
	qPromptDetails     = `"prompt_tokens_details":`
	qCompletionTokens  = `"completion_tokens":`
	qCompletionDetails = `"completion_tokens_details":`
	qCachedTokens      = `"cached_tokens":`
	qTotalTokens       = `"total_tokens":`
	qAudioTokens       = `"audio_tokens":`
	qAcceptedTokens    = `"accepted_prediction_tokens":`
	qReasoningTokens   = `"reasoning_tokens":`
	qRejectedTokens    = `"rejected_prediction_tokens":`
)

// The members whose counts a usage reports, as knownName names them; other is any other
// name.
const (
	other = iota - 1
	promptTokens
	completionTokens
	promptDetails
	completionDetails
	cachedTokens
	reasoningTokens
)

// knownName is compactName for the names OpenAI writes (the q* constants), each
// compared as a constant; any other name is compactName's to read. It returns which
// counted member the name is (other when none) in place of the name.
func knownName(s string, i int) (id, next int, ok bool) {
	r := s[i:]
	q, id := "", other
	if len(r) > 1 {
		switch r[1] {
		case 'p':
			switch {
			case len(r) >= len(qPromptDetails) && r[:len(qPromptDetails)] == qPromptDetails:
				q, id = qPromptDetails, promptDetails
			case len(r) >= len(qPromptTokens) && r[:len(qPromptTokens)] == qPromptTokens:
				q, id = qPromptTokens, promptTokens
			}
		case 'c':
			switch {
			case len(r) >= len(qCompletionTokens) && r[:len(qCompletionTokens)] == qCompletionTokens:
				q, id = qCompletionTokens, completionTokens
			case len(r) >= len(qCompletionDetails) && r[:len(qCompletionDetails)] == qCompletionDetails:
				q, id = qCompletionDetails, completionDetails
			case len(r) >= len(qCachedTokens) && r[:len(qCachedTokens)] == qCachedTokens:
				q, id = qCachedTokens, cachedTokens
			}
		case 't':
			if len(r) >= len(qTotalTokens) && r[:len(qTotalTokens)] == qTotalTokens {
				q = qTotalTokens
			}
		case 'a':
			switch {
			case len(r) >= len(qAudioTokens) && r[:len(qAudioTokens)] == qAudioTokens:
				q = qAudioTokens
			case len(r) >= len(qAcceptedTokens) && r[:len(qAcceptedTokens)] == qAcceptedTokens:
				q = qAcceptedTokens
			}
		case 'r':
			switch {
			case len(r) >= len(qReasoningTokens) && r[:len(qReasoningTokens)] == qReasoningTokens:
				q, id = qReasoningTokens, reasoningTokens
			case len(r) >= len(qRejectedTokens) && r[:len(qRejectedTokens)] == qRejectedTokens:
				q = qRejectedTokens
			}
		}
	}
	if q == "" {
		_, next, ok = compactName(s, i) // not a q* name, so none of the counted ones
		return other, next, ok
	}
	return id, i + len(q), true
}

// compactName reads a member's name and colon at s[i], `"name":`, whose bytes are
// printable ASCII other than a backslash (jsonx.PlainEnd: the name is its literal, and
// valid JSON): it returns the name and the offset after the colon. ok is false for
// anything else.
func compactName(s string, i int) (name string, next int, ok bool) {
	if i >= len(s) || s[i] != '"' {
		return "", 0, false
	}
	if j := jsonx.PlainEnd(s, i+1); j >= 0 && j+1 < len(s) && s[j+1] == ':' {
		return s[i+1 : j], j + 2, true
	}
	return "", 0, false
}

// compactInt reads null (0) or an integer of 1 to 18 digits without sign, fraction,
// exponent or leading zero at s[i]: its value and the offset after it. ok is false for
// anything else, a number it does not take included (the scanner reads those).
func compactInt(s string, i int) (n, next int, ok bool) {
	if i+4 <= len(s) && s[i:i+4] == "null" {
		return 0, i + 4, true
	}
	v, end := jsonx.PlainUint(s, i)
	if end < 0 {
		return 0, 0, false
	}
	return int(v), end, true
}
