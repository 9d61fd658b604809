package converse

import (
	"fmt"
	"strings"

	"github.com/agate-gateway/agate/internal/jsonx"
	"github.com/agate-gateway/agate/translate"
)

// Bedrock's embedding models through InvokeModel (POST /model/{modelId}/invoke), each in
// its own body (the Bedrock user guide's model parameters):
//   - Amazon Titan Text Embeddings (amazon.titan-embed-text-v1, -v2:0, titan-embed-g1-...):
//     one text a request, {"inputText":...,"dimensions":N}, answered
//     {"embedding":[...],"inputTextTokenCount":N};
//   - Cohere Embed v3 and v4 (cohere.embed-english-v3, -multilingual-v3, cohere.embed-v4:0):
//     up to 96 texts, {"texts":[...],"input_type":...,"embedding_types":["float"]} (v4 also
//     "output_dimension"), answered {"embeddings":{"float":[[...]]},...} or, from older
//     models, {"embeddings":[[...]],"response_type":"embeddings_floats"}; no token count
//     in the body.
// Any other model cannot embed: its EmbedLimits are zero.

// Embedder is the embeddings side of a bedrock backend.
type Embedder struct{}

var _ translate.Embedder = Embedder{}

// embedFamily is which of Bedrock's embedding bodies a model id takes.
type embedFamily int

const (
	embedNone embedFamily = iota
	embedTitan
	embedCohere
	embedCohereV4
)

// cohereEmbedTexts is Cohere Embed's most texts a request on Bedrock.
const cohereEmbedTexts = 96

// familyOf tells the family from a model id, a cross-region profile (us.cohere...) or an
// ARN of either.
func familyOf(model string) embedFamily {
	switch {
	case strings.Contains(model, "amazon.titan-embed"):
		return embedTitan
	case strings.Contains(model, "cohere.embed-v4"):
		return embedCohereV4
	case strings.Contains(model, "cohere.embed"):
		return embedCohere
	}
	return embedNone
}

// EmbedPath is the model's InvokeModel.
func (Embedder) EmbedPath(upstreamModel string) string {
	return "/model/" + EscapeModel(upstreamModel) + "/invoke"
}

// EmbedLimits are one text for Titan, 96 for Cohere, and none (cannot embed) for any
// other model.
func (Embedder) EmbedLimits(upstreamModel string) translate.EmbedLimits {
	switch familyOf(upstreamModel) {
	case embedTitan:
		return translate.EmbedLimits{Inputs: 1}
	case embedCohere, embedCohereV4:
		return translate.EmbedLimits{Inputs: cohereEmbedTexts}
	}
	return translate.EmbedLimits{}
}

// cohereInputType is Cohere's input_type for a task type: Cohere's own values as they
// are, Gemini's retrieval, classification and clustering types mapped, and
// search_document otherwise (Cohere's v3 models require one). Case is ignored.
func cohereInputType(task string) string {
	switch t := strings.ToLower(task); t {
	case "search_document", "search_query", "classification", "clustering":
		return t
	case "retrieval_query", "question_answering", "fact_verification", "code_retrieval_query":
		return "search_query"
	}
	return "search_document"
}

// AppendEmbedRequest writes the model family's body. Text only; Cohere v3 takes no
// dimensions.
func (Embedder) AppendEmbedRequest(dst []byte, req *translate.EmbedRequest, inputs []translate.EmbedInput, opts *translate.EmbedOptions) ([]byte, error) {
	if req.Tokens {
		return dst, translate.Errorf("input", "token-id inputs are not supported by the bedrock backend: send text")
	}
	switch familyOf(opts.UpstreamModel) {
	case embedTitan:
		dst = append(dst, `{"inputText":`...)
		dst = jsonx.AppendString(dst, inputs[0].Text)
		if req.Dimensions > 0 {
			dst = append(dst, `,"dimensions":`...)
			dst = jsonx.AppendInt(dst, req.Dimensions)
		}
		return append(dst, '}'), nil
	case embedCohere, embedCohereV4:
		if req.Dimensions > 0 && familyOf(opts.UpstreamModel) == embedCohere {
			return dst, translate.Errorf("dimensions", "model %s takes no dimensions: leave dimensions out", req.Model)
		}
		dst = append(dst, `{"texts":[`...)
		for i := range inputs {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = jsonx.AppendString(dst, inputs[i].Text)
		}
		dst = append(dst, `],"input_type":`...)
		dst = jsonx.AppendString(dst, cohereInputType(opts.TaskType))
		dst = append(dst, `,"embedding_types":["float"]`...)
		if req.Dimensions > 0 {
			dst = append(dst, `,"output_dimension":`...)
			dst = jsonx.AppendInt(dst, req.Dimensions)
		}
		return append(dst, '}'), nil
	}
	return dst, translate.Errorf("model", "model %s cannot embed on bedrock (an amazon.titan-embed or cohere.embed model can)", req.Model)
}

// DecodeEmbeddings reads a Titan answer (one vector and its token count) or a Cohere
// answer (a vector a text, floats by type or as a bare list).
func (Embedder) DecodeEmbeddings(body []byte, n int, out *translate.Embeddings) error {
	sc := jsonx.NewScanner(jsonx.View(body))
	root, ok := sc.IndexRoot()
	if !ok {
		return fmt.Errorf("%w: the embeddings answer is not JSON", translate.ErrUpstream)
	}
	if v := sc.Get(root, "embedding"); v.Exists() { // Titan
		vec, ok := translate.AppendVector(nil, &sc, v)
		if !ok {
			return fmt.Errorf("%w: embedding is not an array of numbers", translate.ErrUpstream)
		}
		if n != 1 {
			return fmt.Errorf("%w: the embeddings answer has 1 vector for %d inputs", translate.ErrUpstream, n)
		}
		out.Vectors = append(out.Vectors, vec)
		out.PromptTokens += int(max(0, sc.Get(root, "inputTextTokenCount").Int()))
		return nil
	}
	list := sc.Get(root, "embeddings")
	if list.Kind == jsonx.Object {
		list = sc.Get(list, "float")
	}
	got := 0
	var err error
	sc.Each(list, func(_ string, el jsonx.Value) bool {
		vec, ok := translate.AppendVector(nil, &sc, el)
		if !ok {
			err = fmt.Errorf("%w: embeddings[%d] is not an array of numbers", translate.ErrUpstream, got)
			return false
		}
		out.Vectors = append(out.Vectors, vec)
		got++
		return true
	})
	if err == nil && got != n {
		err = fmt.Errorf("%w: the embeddings answer has %d vectors for %d inputs", translate.ErrUpstream, got, n)
	}
	if err != nil {
		out.Vectors = out.Vectors[:len(out.Vectors)-got]
		return err
	}
	return nil
}
