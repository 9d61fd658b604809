package anthropic

import (
	"strings"

	"github.com/agate-gateway/agate/internal/jsonx"
)

// The names, quoted and with their colons, of the members the Messages API writes in a
// usage object (and its cache_creation and server_tool_use objects): countName compares
// them as constants.
const (
	qInputTokens      = `"input_tokens":`
	qOutputTokens     = `"output_tokens":`
	qCacheRead        = `"cache_read_input_tokens":`
	qCacheWrite       = `"cache_creation_input_tokens":`
	qCacheCreation    = `"cache_creation":`
	qServiceTier      = `"service_tier":`
	qServerToolUse    = `"server_tool_use":`
	qIterations       = `"iterations":`
	qEphemeral5m      = `"ephemeral_5m_input_tokens":`
	qEphemeral1h      = `"ephemeral_1h_input_tokens":`
	qWebSearch        = `"web_search_requests":`
	qWebFetchRequests = `"web_fetch_requests":`
)

// mergeCompact is mergeAt for the usage object that starts at s[at] ('{') when it is
// written as the Messages API writes one: no whitespace; member names of printable ASCII
// without a backslash; values that are null, an integer jsonx.PlainUint takes, a string
// whose bytes jsonx.PlainEnd takes, or, one level down only, an object of such names with
// null or such integers (cache_creation, server_tool_use); and no iterations member. It
// merges the counts into u as mergeAt does (every member; a later one of a name replacing
// an earlier; a value that is not a number leaving the count as it was) and returns the
// offset just past the object. For anything else ok is false, u is unchanged, and the
// caller reads the object with the scanner (mergeGeneral), which gives the same counts and
// end for everything this accepts (FuzzMergeCompactMatchesGeneral): what it accepts is
// valid JSON, since every byte it takes is one the grammar allows there.
func (u *anthropicUsage) mergeCompact(s string, at int) (end int, ok bool) {
	c := u.top
	i := at + 1
	if i < len(s) && s[i] == '}' {
		return i + 1, true
	}
	for {
		count, j, ok := c.countName(s, i)
		if !ok {
			return 0, false
		}
		i = j
		if i >= len(s) {
			return 0, false
		}
		switch s[i] {
		case '{':
			if i, ok = plainCounts(s, i); !ok {
				return 0, false
			}
		case '"':
			e := jsonx.PlainEnd(s, i+1)
			if e < 0 {
				return 0, false
			}
			i = e + 1
		case 'n':
			if len(s)-i < 4 || s[i:i+4] != "null" {
				return 0, false
			}
			i += 4
		default:
			n, e := jsonx.PlainUint(s, i)
			if e < 0 {
				return 0, false
			}
			if count != nil {
				*count = int(n)
			}
			i = e
		}
		if i >= len(s) {
			return 0, false
		}
		switch s[i] {
		case ',':
			i++
		case '}':
			u.top = c
			return i + 1, true
		default:
			return 0, false
		}
	}
}

// countName reads a member's name and colon at s[i] for mergeCompact: it returns the
// count of c the name is (nil for another name) and the offset after the colon. The API's
// names are compared as constants, others read by jsonx.PlainEnd. ok is false for a name
// it does not take, and for iterations, whose sums mergeGeneral reads.
func (c *anthropicCounts) countName(s string, i int) (count *int, next int, ok bool) {
	r := s[i:]
	if len(r) > 1 {
		q := ""
		switch r[1] {
		case 'i':
			switch {
			case strings.HasPrefix(r, qInputTokens):
				return &c.input, i + len(qInputTokens), true
			case strings.HasPrefix(r, qIterations):
				return nil, 0, false
			}
		case 'o':
			if strings.HasPrefix(r, qOutputTokens) {
				return &c.output, i + len(qOutputTokens), true
			}
		case 'c':
			switch {
			case strings.HasPrefix(r, qCacheRead):
				return &c.cacheRead, i + len(qCacheRead), true
			case strings.HasPrefix(r, qCacheWrite):
				return &c.cacheWrite, i + len(qCacheWrite), true
			case strings.HasPrefix(r, qCacheCreation):
				q = qCacheCreation
			}
		case 's':
			switch {
			case strings.HasPrefix(r, qServiceTier):
				q = qServiceTier
			case strings.HasPrefix(r, qServerToolUse):
				q = qServerToolUse
			}
		case 'e':
			switch {
			case strings.HasPrefix(r, qEphemeral5m):
				q = qEphemeral5m
			case strings.HasPrefix(r, qEphemeral1h):
				q = qEphemeral1h
			}
		case 'w':
			switch {
			case strings.HasPrefix(r, qWebSearch):
				q = qWebSearch
			case strings.HasPrefix(r, qWebFetchRequests):
				q = qWebFetchRequests
			}
		}
		if q != "" {
			return nil, i + len(q), true
		}
	}
	if len(r) == 0 || r[0] != '"' {
		return nil, 0, false
	}
	e := jsonx.PlainEnd(s, i+1)
	if e < 0 || e+1 >= len(s) || s[e+1] != ':' {
		return nil, 0, false
	}
	name := s[i+1 : e]
	if name == "iterations" {
		return nil, 0, false
	}
	return c.count(name), e + 2, true
}

// plainCounts reads past the object at s[i] ('{') whose members have the names
// countName takes and values that are null or an integer jsonx.PlainUint takes, and
// returns the offset past it. ok is false for anything else.
func plainCounts(s string, i int) (end int, ok bool) {
	i++
	if i < len(s) && s[i] == '}' {
		return i + 1, true
	}
	var none anthropicCounts // a count object's members count nothing of the usage's
	for {
		_, j, ok := none.countName(s, i) // the API's names (ephemeral_5m_input_tokens) as constants
		if !ok {
			return 0, false
		}
		i = j
		if len(s)-i >= 4 && s[i:i+4] == "null" {
			i += 4
		} else if _, i = jsonx.PlainUint(s, i); i < 0 {
			return 0, false
		}
		if i >= len(s) {
			return 0, false
		}
		switch s[i] {
		case ',':
			i++
		case '}':
			return i + 1, true
		default:
			return 0, false
		}
	}
}
