package messagesin

import (
	"strings"

	"github.com/agate-gateway/agate/internal/jsonx"
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
