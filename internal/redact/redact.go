// Package redact masks what looks like a credential in text that leaves the gateway:
// upstream error messages relayed to clients and written to the log. Upstreams quote keys
// back ("Incorrect API key provided: sk-proj-…"), and proxies in front of them echo request
// headers; neither may reach a client or a log line.
package redact

import "strings"

// Mask returns s with every credential-like token replaced:
//
//   - "sk-…" and "sk_…" keys (OpenAI, Anthropic, and the like) become "sk-***";
//   - Google API keys ("AIza…") become "AIza***";
//   - the value after "Bearer " becomes "***";
//   - any other run of 32 or more base64 or hex characters ([A-Za-z0-9+/_-], then any "="
//     padding) that is all hex digits, or mixes digits with upper- and lower-case letters,
//     becomes "***".
//
// A token starts at the beginning of s or after a byte that is not an ASCII letter or
// digit. Ordinary words, model names ("gemini-2.5-flash") and short ids are left alone.
// Mask returns s itself when nothing is masked; it is idempotent and safe for concurrent
// use.
func Mask(s string) string {
	var b strings.Builder
	last := 0 // s[:last] is in b or, while b is empty, unchanged
	for i := 0; i < len(s); {
		if i > 0 && isAlnum(s[i-1]) {
			i++
			continue
		}
		end, keep := token(s, i)
		if end < 0 {
			i++
			continue
		}
		if b.Len() == 0 {
			b.Grow(len(s))
		}
		b.WriteString(s[last:i])
		b.WriteString(s[i : i+keep])
		b.WriteString("***")
		last, i = end, end
	}
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

// token reports whether a credential starts at s[i]: it returns the end of the token and
// how many of its leading bytes to keep, or -1.
func token(s string, i int) (end, keep int) {
	rest := s[i:]
	switch {
	case hasPrefixFold(rest, "bearer ") || hasPrefixFold(rest, "bearer\t"):
		j := i + len("bearer")
		for j < len(s) && (s[j] == ' ' || s[j] == '\t') {
			j++
		}
		k := j
		for k < len(s) && !isValueEnd(s[k]) {
			k++
		}
		if k == j || s[j:k] == "***" {
			return -1, 0
		}
		return k, j - i
	case strings.HasPrefix(rest, "sk-") || strings.HasPrefix(rest, "sk_"):
		k := run(s, i+3, isKeyByte)
		if k-(i+3) < 4 {
			return -1, 0
		}
		return k, 3
	case strings.HasPrefix(rest, "AIza"):
		k := run(s, i+4, isKeyByte)
		if k-(i+4) < 16 {
			return -1, 0
		}
		return k, 4
	}
	// A run is judged whole from its start; inside a run (after a '-', '_', '/' or '+') only
	// the alphanumeric segment that starts here is, so every byte is looked at a bounded
	// number of times.
	in := isTokenByte
	if i > 0 && isTokenByte(s[i-1]) {
		in = isAlnum
	}
	k := run(s, i, in)
	if k-i < 32 || !secretLike(s[i:k]) {
		return -1, 0
	}
	for k < len(s) && s[k] == '=' { // base64 padding
		k++
	}
	return k, 0
}

// secretLike reports whether t is all hex digits or mixes digits and both letter cases.
func secretLike(t string) bool {
	hex, digit, upper, lower := true, false, false, false
	for i := 0; i < len(t); i++ {
		c := t[i]
		switch {
		case c >= '0' && c <= '9':
			digit = true
		case c >= 'a' && c <= 'f':
			lower = true
		case c >= 'A' && c <= 'F':
			upper = true
		case c >= 'g' && c <= 'z':
			lower, hex = true, false
		case c >= 'G' && c <= 'Z':
			upper, hex = true, false
		default:
			hex = false
		}
	}
	return hex || digit && upper && lower
}

func run(s string, i int, in func(byte) bool) int {
	for i < len(s) && in(s[i]) {
		i++
	}
	return i
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

func isKeyByte(c byte) bool { return isAlnum(c) || c == '-' || c == '_' }

func isTokenByte(c byte) bool { return isKeyByte(c) || c == '+' || c == '/' }

// isValueEnd reports whether c ends a header value quoted in text.
func isValueEnd(c byte) bool {
	return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '"' || c == '\'' || c == ',' || c == ';' || c == '\\'
}

func hasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}
