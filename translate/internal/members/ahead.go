package members

import "strings"

// ModelAhead is a validate-only first pass's guess at a request's top-level model when
// its walk reaches the messages or input array before the model, as SDKs that sort their
// members write them (openai-python, anthropic-sdk-python): the value of the last
// `"model":` member of body, found by a search from its end (the SDKs write it behind
// the array, before tools), when it is a string without escapes. A quote inside a
// JSON string is escaped, so what the search finds is a member; but it may be one inside
// a later value (a tool's schema), or the body may be invalid: ok is then false, or the
// guess wrong. A caller uses it only to stop early, at the cost of a full parse it would
// have made anyway, and asks about the model it reads if it reads another.
func ModelAhead(body string) (model string, ok bool) {
	const key = `"model"`
	i := lastKey(body)
	if i < 0 {
		return "", false
	}
	i = skipSpace(body, i+len(key))
	if i >= len(body) || body[i] != ':' {
		return "", false
	}
	i = skipSpace(body, i+1)
	if i >= len(body) || body[i] != '"' {
		return "", false
	}
	end := strings.IndexByte(body[i+1:], '"')
	if end < 0 {
		return "", false
	}
	model = body[i+1 : i+1+end]
	if strings.IndexByte(model, '\\') >= 0 {
		return "", false
	}
	return model, true
}

// lastKey returns the offset of the last `"model"` in body, or -1. It searches backwards
// from the end (the member lies behind the history, before the tools, so the search
// costs the tail's length, not the history's), a window of seven bytes at a time
// (Horspool's rule, backwards): the byte at the window's start decides how far the next
// window may start before it without passing a match, seven bytes when it is none of
// the key's, so that it reads about one byte in four of a JSON text.
func lastKey(body string) int {
	const key = `"model"`
	for i := len(body) - len(key); i >= 0; {
		// The shift puts the nearest byte of key[1:] equal to body[i] over it.
		switch body[i] {
		case '"':
			if body[i:i+len(key)] == key {
				return i
			}
			i -= 6
		case 'm':
			i--
		case 'o':
			i -= 2
		case 'd':
			i -= 3
		case 'e':
			i -= 4
		case 'l':
			i -= 5
		default:
			i -= 7
		}
	}
	return -1
}

// skipSpace returns the offset of the first byte at or after i that is not JSON
// whitespace.
func skipSpace(s string, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r') {
		i++
	}
	return i
}

// ModelAsk asks a first pass's caller about the request's model (ParseHead's passes):
// at the model member, or before the array that the SDKs that sort their members write
// ahead of it (ModelAhead's guess), and once for each model. The zero value, or a nil
// Passes, asks nothing and answers true.
type ModelAsk struct {
	Passes func(model string) bool
	asked  bool
	model  string
}

// Model asks about model, read at the top-level model member, unless it was asked about.
func (a *ModelAsk) Model(model string) bool {
	if a.Passes == nil || a.asked && a.model == model {
		return true
	}
	a.asked, a.model = true, model
	return a.Passes(model)
}

// Ahead asks about ModelAhead's guess in body, when no model was asked about yet: called
// at the array that decides the pass's cost, false means it is not worth walking.
func (a *ModelAsk) Ahead(body string) bool {
	if a.Passes == nil || a.asked {
		return true
	}
	m, ok := ModelAhead(body)
	return !ok || a.Model(m)
}
