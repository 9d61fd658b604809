package responsesin

import (
	"github.com/agate-gateway/agate/internal/jsonx"
	"github.com/agate-gateway/agate/translate"
)

// ReadAnswer is ReadResponse that also finds, in the same walk, where the Response's
// model lies in body when it is a string (for AppendModelAt); its End is 0 otherwise.
//
// One pass of the scanner's member loop checks the whole body and reads the members it
// reports, the first of each name: object and id decoded, error, output and model as
// written (only their kind, text and place are wanted), the usage by bytes when it is
// written compactly (usageCompact) and by the member loop otherwise. Every other member
// is skipped as it is checked. It reads what RootMembers and usage read of any body
// (FuzzReadAnswerMatchesByMembers): RootMembers compared each member's name with six
// and decoded each value it kept, and the usage was walked again, 19 K instructions of
// the bench's 1.7 KB answer (#55).
func ReadAnswer(body []byte) (u Upstream, kind Body, model translate.Span) {
	sc := jsonx.NewScanner(jsonx.View(body))
	if sc.Peek() != '{' {
		if _, ok := sc.Root(); !ok {
			return Upstream{}, BodyNotJSON, model
		}
		return Upstream{}, BodyOther, model // a scalar or an array has no members
	}
	at := sc.Pos()
	in := sc.Input()
	var object, errv, output, usage, id, mod jsonx.Value
	compact := false // the usage was read by usageCompact into u.Usage
	for n := 0; sc.NextField(&n); {
		var ok bool
		switch sc.Key() {
		case "object":
			ok = sc.First(&object)
		case "id":
			ok = sc.First(&id)
		case "error":
			ok = firstRaw(&sc, &errv)
		case "output":
			ok = firstRaw(&sc, &output)
		case "model":
			ok = firstRaw(&sc, &mod)
		case "usage":
			if usage.Kind != jsonx.Missing {
				ok = sc.Skip()
				break
			}
			if sc.Peek() == '{' { // Peek moves past whitespace before the value (OpenAI indents)
				p := sc.Pos()
				if cu, end, cok := usageCompact(in, p); cok {
					usage.Set(jsonx.Object, in[p:end], p, "")
					u.Usage, compact, ok = cu, true, true
					sc.Seek(end)
					break
				}
			}
			ok = sc.Value(&usage)
		default:
			ok = sc.Skip()
		}
		if !ok {
			return Upstream{}, BodyNotJSON, translate.Span{}
		}
	}
	if sc.Failed() || !sc.AtEnd() {
		return Upstream{}, BodyNotJSON, translate.Span{}
	}
	if object.Str != "response" {
		if errv.Kind == jsonx.Object {
			return Upstream{}, BodyError, model
		}
		return Upstream{}, BodyOther, model
	}
	if mod.At > 0 && mod.Kind == jsonx.String {
		model = translate.Span{Start: mod.At, End: mod.At + len(mod.Raw)}
	}
	u.Response, u.Output, u.ID = in[at:sc.Pos()], output.Raw, id.Str
	if !compact {
		u.Usage = readUsage(&sc, usage) // moves the cursor
	}
	return u, BodyResponse, model
}

// firstRaw is Scanner.First with the value read as ValueRaw reads it.
func firstRaw(sc *jsonx.Scanner, v *jsonx.Value) bool {
	if v.Kind != jsonx.Missing {
		return sc.Skip()
	}
	return sc.ValueRaw(v)
}

// usageCompact reads the usage object that starts at s[at] ('{') when it is written the
// way OpenAI's Responses API writes one, compact or indented (JSON whitespace between the
// tokens: OpenAI indents a whole answer, streams and other servers do not); member names that are plain
// strings (printable ASCII, no backslash: jsonx.PlainEnd); values that are null, an
// integer of 1 to 18 digits (no sign, fraction or exponent: jsonx.PlainUint), or, one
// level down only, an object of such names with null or such integers (the details). It
// returns what readUsage reads of it (the first member of each name; null, an object where
// a count is read, a count that is not in an object where a details object is read, all
// 0) and the offset just past the object. For anything else ok is false and the caller
// reads the object with the scanner, which gives the same usage and end for every object
// this accepts (FuzzUsageCompactMatchesScanner): what it accepts is valid JSON, since
// every byte it takes is one the grammar allows there.
func usageCompact(s string, at int) (u translate.Usage, end int, ok bool) {
	var seen [4]bool
	i := space(s, at+1)
	if i < len(s) && s[i] == '}' {
		return u, i + 1, true
	}
	for {
		name, j, ok := usageName(s, space(s, i))
		if !ok {
			return translate.Usage{}, 0, false
		}
		slot := -1 // which count of u the member is, if it is the first of its name
		want := "" // the member of a details object whose count is read
		switch name {
		case "input_tokens":
			slot = 0
		case "output_tokens":
			slot = 1
		case "input_tokens_details":
			slot, want = 2, "cached_tokens"
		case "output_tokens_details":
			slot, want = 3, "reasoning_tokens"
		}
		if slot >= 0 {
			if seen[slot] {
				slot = -1
			} else {
				seen[slot] = true
			}
		}
		i = space(s, j)
		var n int64
		if i < len(s) && s[i] == '{' {
			if n, i, ok = compactCounts(s, i, want); !ok {
				return translate.Usage{}, 0, false
			}
			if slot < 2 {
				n = 0 // an object where a count is read reads as 0 (Value.Int)
			}
		} else {
			if n, i, ok = compactInt(s, i); !ok {
				return translate.Usage{}, 0, false
			}
			if slot >= 2 {
				n = 0 // a details member that is not an object has no count
			}
		}
		switch slot {
		case 0:
			u.PromptTokens = int(n)
		case 1:
			u.CompletionTokens = int(n)
		case 2:
			u.CachedTokens = int(n)
		case 3:
			u.ReasoningTokens = int(n)
		}
		if i = space(s, i); i >= len(s) {
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

// compactCounts reads the object at s[i] ('{') whose members are plainName's names with
// compactInt's values, and returns the count of its first member named want (0 when
// there is none or it is null; want "" reads none) and the offset past the object.
func compactCounts(s string, i int, want string) (n int64, end int, ok bool) {
	i = space(s, i+1)
	if i < len(s) && s[i] == '}' {
		return 0, i + 1, true
	}
	found := false
	for {
		name, j, ok := usageName(s, space(s, i))
		if !ok {
			return 0, 0, false
		}
		var x int64
		if x, i, ok = compactInt(s, space(s, j)); !ok {
			return 0, 0, false
		}
		if !found && want != "" && name == want {
			n, found = x, true
		}
		if i = space(s, i); i >= len(s) {
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

// space returns the offset of the first byte at or after s[i] that is not JSON
// whitespace. Inlined where the byte is not one (compact JSON): no loop there.
func space(s string, i int) int {
	if i < len(s) && s[i] > ' ' {
		return i
	}
	return spaceRun(s, i)
}

// spaceRun is space past a run of whitespace.
func spaceRun(s string, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\n' || s[i] == '\r' || s[i] == '\t') {
		i++
	}
	return i
}

// The names, quoted and with their colons, of the members OpenAI writes in a Response's
// usage and its details: usageName compares them as constants.
var usageNames = [...]string{
	`"input_tokens":`, `"input_tokens_details":`, `"cached_tokens":`, `"output_tokens":`,
	`"output_tokens_details":`, `"reasoning_tokens":`, `"total_tokens":`,
}

// usageName is plainName for the names OpenAI writes (usageNames), each compared as a
// constant first (plainName's byte reading cost ~150 instructions a name); any other name,
// or one with whitespace before its colon, is plainName's to read.
func usageName(s string, i int) (name string, next int, ok bool) {
	if i+1 < len(s) {
		var q string
		switch s[i+1] {
		case 'i':
			q = usageNames[0]
			if len(s)-i > len(usageNames[1]) && s[i+len(q)-2] == '_' {
				q = usageNames[1]
			}
		case 'c':
			q = usageNames[2]
		case 'o':
			q = usageNames[3]
			if len(s)-i > len(usageNames[4]) && s[i+len(q)-2] == '_' {
				q = usageNames[4]
			}
		case 'r':
			q = usageNames[5]
		case 't':
			q = usageNames[6]
		}
		if q != "" && len(s)-i >= len(q) && s[i:i+len(q)] == q {
			return q[1 : len(q)-2], i + len(q), true
		}
	}
	return plainName(s, i)
}

// plainName reads a member's name and colon at s[i], `"name":` (whitespace allowed
// before the colon), whose bytes are printable ASCII other than a backslash
// (jsonx.PlainEnd: the name is its literal): it returns the name and the offset after the
// colon. ok is false for anything else.
func plainName(s string, i int) (name string, next int, ok bool) {
	if i >= len(s) || s[i] != '"' {
		return "", 0, false
	}
	j := jsonx.PlainEnd(s, i+1)
	if j < 0 {
		return "", 0, false
	}
	if k := space(s, j+1); k < len(s) && s[k] == ':' {
		return s[i+1 : j], k + 1, true
	}
	return "", 0, false
}

// compactInt reads null (0) or an integer jsonx.PlainUint takes at s[i]: its value and
// the offset after it. ok is false for anything else (the scanner reads those).
func compactInt(s string, i int) (n int64, next int, ok bool) {
	if i+4 <= len(s) && s[i:i+4] == "null" {
		return 0, i + 4, true
	}
	v, end := jsonx.PlainUint(s, i)
	if end < 0 {
		return 0, 0, false
	}
	return v, end, true
}
