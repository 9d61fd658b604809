package anthropic

import (
	"github.com/agate-gateway/agate/internal/jsonx"
	"github.com/agate-gateway/agate/translate"
)

// ReadAnswer reads what the Messages passthrough needs of a whole Messages API answer, in
// the one pass that checks it (DecodeResponse's, without its walk of the content and its
// events): ok is false when body is not one JSON object; model is where the value of the
// first model member lies (End 0 when there is none); usage is the usage DecodeResponse
// reports; err is DecodeResponse's error for an error object (type "error"), the
// upstream's error. The passthrough forwarded the body after both a walk of its own and
// DecodeResponse, which read the content's strings and made its events only for the
// usage (#55). FuzzReadAnswerMatchesDecode holds it to that pair. It is a method of the
// Provider New and NewCloud return (their DecodeResponse is one), so that a caller holding
// another provider, or one wrapping this one, keeps its own DecodeResponse.
func (anthropicProvider) ReadAnswer(body []byte) (model translate.Span, usage translate.Usage, ok bool, err error) {
	sc := jsonx.NewScanner(jsonx.View(body))
	if sc.Peek() != '{' {
		return model, usage, false, nil
	}
	var m [len(responseMembers)]jsonx.Value
	var u anthropicUsage
	root, ok := responseRoot(&sc, m[:], &u)
	if !ok {
		return model, usage, false, nil
	}
	if m[respType].Str == "error" {
		return model, usage, true, anthropicErrorEvent(&sc, root)
	}
	if v := m[respModel]; v.Exists() {
		model = translate.Span{Start: v.At, End: v.At + len(v.Raw)}
	}
	return model, u.openai(), true, nil
}
