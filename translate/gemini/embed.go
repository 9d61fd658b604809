package gemini

import (
	"fmt"
	"net/url"

	"github.com/agate-gateway/agate/internal/jsonx"
	"github.com/agate-gateway/agate/translate"
)

// The Gemini API's embeddings: models/{model}:batchEmbedContents, one request a text, each
// {"model":"models/{model}","content":{"parts":[{"text":...}]}} with outputDimensionality
// and taskType when asked; the answer {"embeddings":[{"values":[...]}],...} in the
// requests' order, with usageMetadata.promptTokenCount from the gemini-embedding-2 models
// on (recorded: testdata/fixtures/gemini/embeddings). A single text is a batch of one,
// so embedContent is never needed.

var _ translate.Embedder = geminiProvider{}

// maxEmbedBatch is the most requests batchEmbedContents takes at once.
const maxEmbedBatch = 100

// EmbedPath is the model's batchEmbedContents.
func (geminiProvider) EmbedPath(upstreamModel string) string {
	return "/v1beta/models/" + url.PathEscape(upstreamModel) + ":batchEmbedContents"
}

// EmbedLimits are batchEmbedContents': 100 requests.
func (geminiProvider) EmbedLimits(string) translate.EmbedLimits {
	return translate.EmbedLimits{Inputs: maxEmbedBatch}
}

// AppendEmbedRequest writes a batchEmbedContents body. Gemini embeds text only: token-id
// inputs are an error; user has no place and is left out.
func (geminiProvider) AppendEmbedRequest(dst []byte, req *translate.EmbedRequest, inputs []translate.EmbedInput, opts *translate.EmbedOptions) ([]byte, error) {
	if req.Tokens {
		return dst, translate.Errorf("input", "token-id inputs are not supported by the gemini backend: send text")
	}
	dst = append(dst, `{"requests":[`...)
	for i := range inputs {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"model":`...)
		dst = jsonx.AppendString(dst, "models/"+opts.UpstreamModel)
		dst = append(dst, `,"content":{"parts":[{"text":`...)
		dst = jsonx.AppendString(dst, inputs[i].Text)
		dst = append(dst, `}]}`...)
		if req.Dimensions > 0 {
			dst = append(dst, `,"outputDimensionality":`...)
			dst = jsonx.AppendInt(dst, req.Dimensions)
		}
		if opts.TaskType != "" {
			dst = append(dst, `,"taskType":`...)
			dst = jsonx.AppendString(dst, opts.TaskType)
		}
		dst = append(dst, '}')
	}
	return append(dst, "]}"...), nil
}

// DecodeEmbeddings reads a batchEmbedContents answer.
func (geminiProvider) DecodeEmbeddings(body []byte, n int, out *translate.Embeddings) error {
	sc := jsonx.NewScanner(jsonx.View(body))
	root, ok := sc.IndexRoot()
	if !ok {
		return fmt.Errorf("%w: the embeddings answer is not JSON", translate.ErrUpstream)
	}
	embeddings := sc.Get(root, "embeddings")
	got, start := 0, len(out.Vectors)
	var err error
	sc.Each(embeddings, func(_ string, el jsonx.Value) bool {
		v, ok := translate.AppendVector(nil, &sc, sc.Get(el, "values"))
		if !ok {
			err = fmt.Errorf("%w: embeddings[%d].values is not an array of numbers", translate.ErrUpstream, got)
			return false
		}
		out.Vectors = append(out.Vectors, v)
		got++
		return true
	})
	if err == nil && got != n {
		err = fmt.Errorf("%w: the embeddings answer has %d vectors for %d inputs", translate.ErrUpstream, got, n)
	}
	if err != nil {
		out.Vectors = out.Vectors[:start] // nothing of a refused answer is kept
		return err
	}
	out.PromptTokens += int(max(0, sc.Path(root, "usageMetadata", "promptTokenCount").Int()))
	return nil
}
