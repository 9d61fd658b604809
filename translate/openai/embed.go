package openai

import (
	"fmt"

	"github.com/agate-gateway/agate/internal/jsonx"
	"github.com/agate-gateway/agate/translate"
)

// OpenAI's embeddings (POST /embeddings), for a request the proxy translates (a route
// with backends of other types among its fallbacks; all-OpenAI routes are passed through
// by translate/embeddingsin): the inputs as an array, the vectors asked for as floats
// (the answer is then re-encoded for the client), each data element placed by its index.

var _ translate.Embedder = openAIChat{}

// maxEmbedBatch is the most inputs OpenAI takes in one request.
const maxEmbedBatch = translate.MaxEmbedInputs

// EmbedPath is /embeddings.
func (openAIChat) EmbedPath(string) string { return "/embeddings" }

// EmbedLimits are OpenAI's: 2,048 inputs (its token bound, 300,000 a request, is left
// to the upstream's answer).
func (openAIChat) EmbedLimits(string) translate.EmbedLimits {
	return translate.EmbedLimits{Inputs: maxEmbedBatch}
}

// AppendEmbedRequest writes an embeddings request for inputs; task_type has no place in
// OpenAI's and is left out.
func (openAIChat) AppendEmbedRequest(dst []byte, req *translate.EmbedRequest, inputs []translate.EmbedInput, opts *translate.EmbedOptions) ([]byte, error) {
	dst = append(dst, `{"model":`...)
	dst = jsonx.AppendString(dst, opts.UpstreamModel)
	dst = append(dst, `,"input":[`...)
	for i := range inputs {
		if i > 0 {
			dst = append(dst, ',')
		}
		if !req.Tokens {
			dst = jsonx.AppendString(dst, inputs[i].Text)
			continue
		}
		dst = append(dst, '[')
		for j, id := range inputs[i].Tokens {
			if j > 0 {
				dst = append(dst, ',')
			}
			dst = jsonx.AppendInt(dst, int(id))
		}
		dst = append(dst, ']')
	}
	dst = append(dst, `],"encoding_format":"float"`...)
	if req.Dimensions > 0 {
		dst = append(dst, `,"dimensions":`...)
		dst = jsonx.AppendInt(dst, req.Dimensions)
	}
	if req.User != "" {
		dst = append(dst, `,"user":`...)
		dst = jsonx.AppendString(dst, req.User)
	}
	return append(dst, '}'), nil
}

// DecodeEmbeddings reads an embeddings list of float vectors.
func (openAIChat) DecodeEmbeddings(body []byte, n int, out *translate.Embeddings) error {
	sc := jsonx.NewScanner(jsonx.View(body))
	root, ok := sc.IndexRoot()
	if !ok {
		return fmt.Errorf("%w: the embeddings answer is not JSON", translate.ErrUpstream)
	}
	vectors := make([][]float32, n)
	var err error
	i := 0
	sc.Each(sc.Get(root, "data"), func(_ string, el jsonx.Value) bool {
		at := i
		if idx := sc.Get(el, "index"); idx.Kind == jsonx.Number {
			at = int(idx.Int())
		}
		if at < 0 || at >= n || vectors[at] != nil {
			err = fmt.Errorf("%w: data[%d].index is out of range or repeated", translate.ErrUpstream, i)
			return false
		}
		v, ok := translate.AppendVector(nil, &sc, sc.Get(el, "embedding"))
		if !ok {
			err = fmt.Errorf("%w: data[%d].embedding is not an array of numbers", translate.ErrUpstream, i)
			return false
		}
		vectors[at] = v
		i++
		return true
	})
	if err == nil && i != n {
		err = fmt.Errorf("%w: the embeddings answer has %d vectors for %d inputs", translate.ErrUpstream, i, n)
	}
	if err != nil {
		return err
	}
	out.Vectors = append(out.Vectors, vectors...)
	out.PromptTokens += int(max(0, sc.Path(root, "usage", "prompt_tokens").Int()))
	return nil
}
