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
	return appendPassMembers(append(dst, '{'), body, model, nil, false)
}

// CloudPass is how a cloud's Claude endpoint takes a passed-through Messages body
// (AppendCloudPassBody): the model is in the URL and the API version in the body, as the
// clouds document it (Vertex AI's rawPredict and streamRawPredict; Bedrock's InvokeModel
// and InvokeModelWithResponseStream) and the Anthropic SDK's vertex and bedrock options
// send it.
type CloudPass struct {
	// Version is the body's anthropic_version (vertex-2023-10-16, bedrock-2023-05-31).
	Version string
	// NoStream leaves "stream" out: Bedrock's operation says whether the answer streams.
	NoStream bool
	// Betas, when not empty, is the anthropic_beta member: anthropic-beta names,
	// comma-separated (Bedrock takes the betas in the body, not in a header).
	Betas string
}

// AppendCloudPassBody appends body, a request Parse accepted, as c's endpoint takes it:
// anthropic_version first, then the client's members as AppendPassBody writes them, but
// for model (the URL names it), stream under NoStream, and the client's own
// anthropic_version and anthropic_beta (the gateway's to set: a client's anthropic_beta
// would pass by the backend's allowed_betas), then anthropic_beta from c.Betas.
func AppendCloudPassBody(dst, body []byte, c CloudPass) []byte {
	dst = append(dst, `{"anthropic_version":`...)
	dst = jsonx.AppendString(dst, c.Version)
	dst = appendPassMembers(dst, body, "", &c, true)
	if c.Betas == "" {
		return dst
	}
	dst = dst[:len(dst)-1] // the closing brace
	dst = append(dst, `,"anthropic_beta":[`...)
	for i, name := range strings.Split(c.Betas, ",") {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = jsonx.AppendString(dst, name)
	}
	return append(dst, "]}"...)
}

// appendPassMembers appends the members of body and its closing brace: model's value
// replaced by model, or, for a cloud, the members c's endpoint does not take left out.
// comma says a member was written before them.
func appendPassMembers(dst, body []byte, model string, c *CloudPass, comma bool) []byte {
	sc := jsonx.NewScanner(jsonx.View(body))
	s := sc.Input()
	var v jsonx.Value
	for n := 0; ; {
		from := sc.Pos()
		if !sc.NextField(&n) {
			break
		}
		// The name as sent: from its opening quote to the colon before the cursor.
		name := s[from : sc.Pos()-1]
		name = strings.TrimRight(name[strings.IndexByte(name, '"'):], " \t\r\n")
		if !sc.Value(&v) {
			break
		}
		key := sc.Key()
		if c != nil && (key == "model" || key == "anthropic_version" || key == "anthropic_beta" || key == "stream" && c.NoStream) {
			continue
		}
		if comma {
			dst = append(dst, ',')
		}
		comma = true
		dst = append(dst, name...)
		dst = append(dst, ':')
		if key == "model" {
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
	end := 0                // the end of the member before, the opening brace at first
	for i := range fields { // by pointer: a Member is 64 bytes
		f := &fields[i]
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

// ReadAnswer reads an upstream's whole answer in one walk: ok reports whether it is one
// JSON object (IsObject), and model is where the value of its first model member lies
// (End 0 when it has none), for AppendModelAt.
func ReadAnswer(body []byte) (model translate.Span, ok bool) {
	sc := jsonx.NewScanner(jsonx.View(body))
	var v [1]jsonx.Value
	root, ok := sc.RootMembers([]string{"model"}, v[:])
	if !ok || root.Kind != jsonx.Object {
		return model, false
	}
	if m := v[0]; m.Exists() {
		model = translate.Span{Start: m.At, End: m.At + len(m.Raw)}
	}
	return model, true
}

// AppendModelAt appends body, a whole answer ReadAnswer read, with the value at model
// (its span of the first model member, End not 0) replaced by name as a JSON string,
// written as it is: ok is false, and nothing appended, when name has a byte JSON escapes
// (a quote, a backslash, a control character) or one outside ASCII, for the caller's
// general way.
func AppendModelAt(dst, body []byte, model translate.Span, name string) (out []byte, ok bool) {
	for i := 0; i < len(name); i++ {
		if c := name[i]; c < ' ' || c > '~' || c == '"' || c == '\\' {
			return dst, false
		}
	}
	dst = append(dst, body[:model.Start]...)
	dst = append(append(append(dst, '"'), name...), '"')
	return append(dst, body[model.End:]...), true
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
