package embeddingsin

import (
	"errors"
	"slices"

	"github.com/agate-gateway/agate/internal/jsonx"
)

// AppendForward appends the client's body (a request Parse accepted) with its model
// member's value replaced by upstreamModel: the passthrough's upstream request. Every
// other member is copied as the client wrote it.
func AppendForward(dst []byte, body, upstreamModel string) []byte {
	return appendModelReplaced(dst, body, upstreamModel, nil)
}

// ErrNotEmbeddings is RewriteAnswer's error for an upstream answer that is not an
// embeddings list: not a JSON object, or one without a data array.
var ErrNotEmbeddings = errors.New("answered with a body that is not an embeddings list")

// RewriteAnswer appends an OpenAI upstream's embeddings answer with its model member's
// value replaced by model (the client-facing name), and returns the input tokens its
// usage reports (0 when none). Everything else, the vectors in whichever encoding the
// client asked for, is copied as it came.
func RewriteAnswer(dst, body []byte, model string) ([]byte, int, error) {
	var a answer
	out := appendModelReplaced(dst, jsonx.View(body), model, &a)
	if !a.ok || a.data != jsonx.Array {
		return dst, 0, ErrNotEmbeddings
	}
	return out, a.promptTokens, nil
}

// answer is what RewriteAnswer reads of an upstream's answer while it copies it.
type answer struct {
	ok           bool
	data         jsonx.Kind
	promptTokens int
}

// appendModelReplaced copies the JSON object body member by member, the model member's
// value replaced by model (added first when body has none); a reads the answer's data
// and usage when not nil. Only a body that is one JSON object is copied whole (a.ok).
func appendModelReplaced(dst []byte, body, model string, a *answer) []byte {
	sc := jsonx.NewScanner(body)
	if sc.Peek() != '{' {
		return dst
	}
	out := slices.Grow(dst, len(body)+len(model)+16)
	out = append(out, `{"model":`...)
	out = jsonx.AppendString(out, model)
	var v jsonx.Value
	for n := 0; sc.NextField(&n); {
		k := sc.Key()
		if !sc.ValueRaw(&v) {
			break
		}
		if a != nil {
			switch k {
			case "data":
				a.data = v.Kind
			case "usage":
				a.promptTokens = usagePrompt(v.Raw)
			}
		}
		if k == "model" {
			continue
		}
		out = append(out, ',')
		out = jsonx.AppendString(out, k)
		out = append(out, ':')
		out = append(out, v.Raw...)
	}
	if sc.Failed() || !sc.AtEnd() {
		return dst
	}
	if a != nil {
		a.ok = true
	}
	return append(out, '}')
}

// usagePrompt returns usage.prompt_tokens of the usage object raw, 0 when absent.
func usagePrompt(raw string) int {
	sc := jsonx.NewScanner(raw)
	root, ok := sc.Root()
	if !ok {
		return 0
	}
	return int(max(0, sc.Get(root, "prompt_tokens").Int()))
}
