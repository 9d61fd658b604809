package translate

import (
	"strconv"
	"strings"
	"unsafe"

	"github.com/tidwall/gjson"
)

// geminiRawString returns the value of a raw JSON string, "" if raw is not one.
func geminiRawString(raw string) string {
	if len(raw) < 2 || raw[0] != '"' {
		return ""
	}
	if strings.IndexByte(raw, '\\') < 0 {
		return raw[1 : len(raw)-1]
	}
	return gjson.Parse(raw).Str
}

// geminiFields calls fn with each key and raw value of the JSON object obj, which must be
// valid JSON (the decoder validates every event first). Keys are compared unescaped only
// when they need no unescaping, which Gemini's field names never do.
func geminiFields(obj string, fn func(key, raw string)) {
	i := strings.IndexByte(obj, '{')
	if i < 0 {
		return
	}
	i++
	for i < len(obj) {
		i = geminiSkipSpace(obj, i)
		if i >= len(obj) || obj[i] != '"' {
			return
		}
		kEnd := geminiStringEnd(obj, i)
		key := obj[i+1 : kEnd-1]
		i = geminiSkipSpace(obj, kEnd)
		if i >= len(obj) || obj[i] != ':' {
			return
		}
		i = geminiSkipSpace(obj, i+1)
		vEnd := geminiValueEnd(obj, i)
		fn(key, obj[i:vEnd])
		i = geminiSkipSpace(obj, vEnd)
		if i >= len(obj) || obj[i] != ',' {
			return
		}
		i++
	}
}

// geminiElements calls fn with each raw element of the JSON array arr (valid JSON) until
// fn returns false.
func geminiElements(arr string, fn func(raw string) bool) {
	if !strings.HasPrefix(arr, "[") {
		return
	}
	i := 1
	for i < len(arr) {
		i = geminiSkipSpace(arr, i)
		if i >= len(arr) || arr[i] == ']' {
			return
		}
		end := geminiValueEnd(arr, i)
		if !fn(arr[i:end]) {
			return
		}
		i = geminiSkipSpace(arr, end)
		if i >= len(arr) || arr[i] != ',' {
			return
		}
		i++
	}
}

func geminiSkipSpace(s string, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\n' || s[i] == '\r' || s[i] == '\t') {
		i++
	}
	return i
}

// geminiStringEnd returns the index after the string starting at s[i] == '"'.
func geminiStringEnd(s string, i int) int {
	j := i + 1
	// Keys and most values are short: look at them a byte at a time, then eight at a time.
	for n := min(len(s), j+16); j < n; j++ {
		switch s[j] {
		case '"':
			return j + 1
		case '\\':
			j++
		}
	}
	for j < len(s) {
		j = plainPrefix(s, j)
		if j >= len(s) {
			break
		}
		switch s[j] {
		case '"':
			return j + 1
		case '\\':
			j += 2
		default:
			j++ // a control character; the event was validated before scanning
		}
	}
	return len(s)
}

// geminiValueEnd returns the index after the JSON value starting at s[i].
func geminiValueEnd(s string, i int) int {
	if i >= len(s) {
		return i
	}
	switch s[i] {
	case '"':
		return geminiStringEnd(s, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(s); j++ {
			switch s[j] {
			case '"':
				j = geminiStringEnd(s, j) - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1
				}
			}
		}
		return len(s)
	}
	j := i
	for j < len(s) && s[j] != ',' && s[j] != '}' && s[j] != ']' && s[j] != ' ' && s[j] != '\n' && s[j] != '\r' && s[j] != '\t' {
		j++
	}
	return j
}

// geminiSJSONPath turns a JSONPath such as $.a.b[0] or $['a.b'] into an sjson path.
func geminiSJSONPath(p string) string {
	if !strings.HasPrefix(p, "$") {
		return ""
	}
	p = p[1:]
	var b strings.Builder
	seg := func(s string, escape bool) {
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		for i := 0; i < len(s); i++ {
			c := s[i]
			if escape && (c == '.' || c == '*' || c == '?' || c == '|' || c == '#' || c == '@' || c == '\\' || c == ':' || c == '!' || c == '=') {
				b.WriteByte('\\')
			}
			b.WriteByte(c)
		}
	}
	for len(p) > 0 {
		switch p[0] {
		case '.':
			p = p[1:]
			end := strings.IndexAny(p, ".[")
			if end < 0 {
				end = len(p)
			}
			seg(p[:end], true)
			p = p[end:]
		case '[':
			end := strings.IndexByte(p, ']')
			if end < 0 {
				return ""
			}
			in := p[1:end]
			p = p[end+1:]
			if len(in) >= 2 && (in[0] == '\'' || in[0] == '"') && in[len(in)-1] == in[0] {
				seg(in[1:len(in)-1], true)
			} else {
				if _, err := strconv.Atoi(in); err != nil {
					return ""
				}
				seg(in, false)
			}
		default:
			return ""
		}
	}
	return b.String()
}

// unquote returns the value of the raw JSON string rawQuoted without allocating: the raw text when it
// has no escapes, else the text unescaped into a buffer the decoder reuses (valid until
// the next part).
func (d *geminiStream) unquote(rawQuoted string) string {
	raw := rawQuoted[1 : len(rawQuoted)-1]
	if strings.IndexByte(raw, '\\') < 0 {
		return raw
	}
	b := d.text[:0]
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if c != '\\' || i+1 >= len(raw) {
			b = append(b, c)
			continue
		}
		i++
		switch raw[i] {
		case 'n':
			b = append(b, '\n')
		case 't':
			b = append(b, '\t')
		case 'r':
			b = append(b, '\r')
		case 'b':
			b = append(b, '\b')
		case 'f':
			b = append(b, '\f')
		case 'u':
			// Rare (non-ASCII is sent as UTF-8): let gjson decode the \u escapes.
			d.text = b[:0]
			return gjson.Parse(rawQuoted).Str
		default: // " \ /
			b = append(b, raw[i])
		}
	}
	d.text = b
	return geminiBytesString(b)
}

// geminiObjectAt walks the JSON object starting at s[i] == '{' (valid JSON) and returns
// the index after it. fn gets each key and the index of its value, and returns the index
// after the value, or -1 to have it skipped: callers descend into the values they read
// instead of finding their ends first, so each byte is scanned once.
func geminiObjectAt(s string, i int, fn func(key string, v int) int) int {
	i++
	for {
		i = geminiSkipSpace(s, i)
		if i >= len(s) {
			return len(s)
		}
		if s[i] == '}' {
			return i + 1
		}
		if s[i] != '"' {
			return len(s)
		}
		kEnd := geminiStringEnd(s, i)
		key := s[i+1 : kEnd-1]
		i = geminiSkipSpace(s, kEnd)
		if i >= len(s) || s[i] != ':' {
			return len(s)
		}
		i = geminiSkipSpace(s, i+1)
		end := fn(key, i)
		if end < 0 {
			end = geminiValueEnd(s, i)
		}
		i = geminiSkipSpace(s, end)
		if i >= len(s) {
			return len(s)
		}
		switch s[i] {
		case ',':
			i++
		case '}':
			return i + 1
		default:
			return len(s)
		}
	}
}

// geminiArrayAt walks the JSON array starting at s[i] == '[' (valid JSON) and returns the
// index after it. fn gets the index of each element and returns the index after it, or
// -1 to have it skipped; ok false stops the walk.
func geminiArrayAt(s string, i int, fn func(v int) (end int, ok bool)) int {
	i++
	for {
		i = geminiSkipSpace(s, i)
		if i >= len(s) {
			return len(s)
		}
		if s[i] == ']' {
			return i + 1
		}
		end, ok := fn(i)
		if !ok {
			return len(s)
		}
		if end < 0 {
			end = geminiValueEnd(s, i)
		}
		i = geminiSkipSpace(s, end)
		if i >= len(s) {
			return len(s)
		}
		switch s[i] {
		case ',':
			i++
		case ']':
			return i + 1
		default:
			return len(s)
		}
	}
}

// geminiFieldsIn walks the value at s[v] as geminiFields walks a raw value: an object
// directly, anything else (where geminiFields looks for the first '{') through
// geminiFields. It returns the index after the value.
func geminiFieldsIn(s string, v int, fn func(key string, v int) int) int {
	if v < len(s) && s[v] == '{' {
		return geminiObjectAt(s, v, fn)
	}
	end := geminiValueEnd(s, v)
	base := uintptr(unsafe.Pointer(unsafe.StringData(s)))
	geminiFields(s[v:end], func(k, raw string) {
		if len(raw) == 0 {
			return
		}
		// raw is a substring of s: its start is its offset in s.
		fn(k, int(uintptr(unsafe.Pointer(unsafe.StringData(raw)))-base))
	})
	return end
}
