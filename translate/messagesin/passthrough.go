package messagesin

import (
	"strings"

	"github.com/agate-gateway/agate/internal/jsonx"
	"github.com/agate-gateway/agate/translate"
	"github.com/agate-gateway/agate/translate/internal/members"
)

// What the passthrough to an anthropic backend and count_tokens read of the bodies they
// forward and receive, so that the proxy parses no JSON itself.

// AppendPassBody appends body, a request Parse (or ParseCountTokens) accepted, with its
// top-level model set to model and its other members as the client sent them (names
// spelled as sent, values byte for byte; whitespace between members dropped). Parse has
// checked that no member is named twice or in another case, so every decoder reads the
// same request.
func AppendPassBody(dst, body []byte, model string) []byte {
	sc := jsonx.NewScanner(jsonx.View(body))
	s := sc.Input()
	dst = append(dst, '{')
	var v jsonx.Value
	for n := 0; ; {
		from := sc.Pos()
		if !sc.NextField(&n) {
			break
		}
		if n > 1 {
			dst = append(dst, ',')
		}
		// The name as sent: from its opening quote to the colon before the cursor.
		name := s[from : sc.Pos()-1]
		name = strings.TrimRight(name[strings.IndexByte(name, '"'):], " \t\r\n")
		dst = append(dst, name...)
		dst = append(dst, ':')
		if !sc.Value(&v) {
			break
		}
		if sc.Key() == "model" {
			dst = jsonx.AppendString(dst, model)
		} else {
			dst = append(dst, v.Raw...)
		}
	}
	return append(dst, '}')
}

// PassBody is where the passthrough's body (AppendPassBody) differs from a body the
// parser read (ParsePass): in the model's value alone, when the body is compact at the
// top level (no whitespace between its members, nothing after its closing brace, as the
// SDKs write it), which saves AppendPassBody's walk over the whole body. The zero
// PassBody knows nothing, and Append walks.
type PassBody struct {
	// model is the top-level model's value in the body; its end is 0 when the body is
	// not compact.
	model translate.Span
}

// passBody returns the PassBody of s, whose top-level members, in order, are fields.
func passBody(s string, fields []members.Member) PassBody {
	if len(s) < 2 || s[0] != '{' || s[len(s)-1] != '}' {
		return PassBody{}
	}
	var model translate.Span
	end := 0 // the end of the member before, the opening brace at first
	for _, f := range fields {
		// Compact: a comma (none for the first), the name's literal, a colon, the value.
		at := f.V.At
		if at < end+4 || end > 0 && s[end] != ',' || s[end+1] != '"' || s[at-2] != '"' || s[at-1] != ':' {
			return PassBody{}
		}
		if f.Name == "model" {
			model = translate.Span{Start: at, End: at + len(f.V.Raw)}
		}
		end = at + len(f.V.Raw)
	}
	if end != len(s)-1 || model.End == 0 {
		return PassBody{}
	}
	return PassBody{model: model}
}

// Append is AppendPassBody(dst, body, model) for the body ParsePass read when it returned
// p: the model's value spliced in when the body is compact, else the walk.
func (p PassBody) Append(dst, body []byte, model string) []byte {
	if p.model.End == 0 || p.model.End > len(body) {
		return AppendPassBody(dst, body, model)
	}
	dst = append(dst, body[:p.model.Start]...)
	dst = jsonx.AppendString(dst, model)
	return append(dst, body[p.model.End:]...)
}

// IsObject reports whether body, an upstream's answer, is one JSON object.
func IsObject(body []byte) bool {
	sc := jsonx.NewScanner(jsonx.View(body))
	v, ok := sc.Root()
	return ok && v.Kind == jsonx.Object
}

// ReadTokenCount reads the number member field of the JSON object raw, an upstream's
// answer to a token count (input_tokens from Anthropic, totalTokens from Gemini); ok is
// false when raw is not JSON or the member is not a number.
func ReadTokenCount(raw []byte, field string) (n int, ok bool) {
	sc := jsonx.NewScanner(jsonx.View(raw))
	root, ok := sc.Root()
	if !ok {
		return 0, false
	}
	v := sc.Get(root, field)
	if v.Kind != jsonx.Number {
		return 0, false
	}
	return int(v.Int()), true
}
