package gemini

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/agate-gateway/agate/internal/jsonx"
	"github.com/agate-gateway/agate/translate"
)

// Vertex AI's text embeddings (publishers/google/models/{model}:predict), which are not
// the Gemini API's batchEmbedContents: a request is
// {"instances":[{"content":...,"task_type":...}],"parameters":{"outputDimensionality":N}}
// and its answer {"predictions":[{"embeddings":{"values":[...],"statistics":
// {"token_count":N,"truncated":false}}}],"metadata":{"billableCharacterCount":N}}, one
// prediction an instance in order (Google's Text embeddings API reference; task_type and
// token_count are snake_case there, in an otherwise camelCase API, and tokenCount is read
// too). gemini-embedding-* models take one instance a request; the text-embedding and
// text-multilingual-embedding models 250 instances and 20,000 tokens.

// VertexEmbedder is the embeddings side of a vertex backend whose publisher is google.
type VertexEmbedder struct {
	// Prefix is the publisher's model path up to the model id:
	// /v1/projects/{p}/locations/{l}/publishers/google/models/.
	Prefix string
}

var _ translate.Embedder = VertexEmbedder{}

// The bounds of one predict request (Google's Text embeddings API reference).
const (
	vertexEmbedInstances = 250
	vertexEmbedTokens    = 20000
)

// EmbedPath is the model's :predict.
func (v VertexEmbedder) EmbedPath(upstreamModel string) string {
	return v.Prefix + url.PathEscape(upstreamModel) + ":predict"
}

// EmbedLimits are one instance for the gemini-embedding models, else 250 instances and
// 20,000 tokens.
func (VertexEmbedder) EmbedLimits(upstreamModel string) translate.EmbedLimits {
	if strings.HasPrefix(upstreamModel, "gemini-embedding") {
		return translate.EmbedLimits{Inputs: 1}
	}
	return translate.EmbedLimits{Inputs: vertexEmbedInstances, Tokens: vertexEmbedTokens}
}

// AppendEmbedRequest writes a predict body. Vertex embeds text only: token-id inputs are
// an error; user has no place and is left out.
func (VertexEmbedder) AppendEmbedRequest(dst []byte, req *translate.EmbedRequest, inputs []translate.EmbedInput, opts *translate.EmbedOptions) ([]byte, error) {
	if req.Tokens {
		return dst, translate.Errorf("input", "token-id inputs are not supported by the vertex backend: send text")
	}
	dst = append(dst, `{"instances":[`...)
	for i := range inputs {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"content":`...)
		dst = jsonx.AppendString(dst, inputs[i].Text)
		if opts.TaskType != "" {
			dst = append(dst, `,"task_type":`...)
			dst = jsonx.AppendString(dst, opts.TaskType)
		}
		dst = append(dst, '}')
	}
	dst = append(dst, ']')
	if req.Dimensions > 0 {
		dst = append(dst, `,"parameters":{"outputDimensionality":`...)
		dst = jsonx.AppendInt(dst, req.Dimensions)
		dst = append(dst, '}')
	}
	return append(dst, '}'), nil
}

// DecodeEmbeddings reads a predict answer: a prediction an input, in order; its tokens
// are the sum of the predictions' statistics.
func (VertexEmbedder) DecodeEmbeddings(body []byte, n int, out *translate.Embeddings) error {
	sc := jsonx.NewScanner(jsonx.View(body))
	root, ok := sc.IndexRoot()
	if !ok {
		return fmt.Errorf("%w: the embeddings answer is not JSON", translate.ErrUpstream)
	}
	got, tokens := 0, 0
	var err error
	sc.Each(sc.Get(root, "predictions"), func(_ string, el jsonx.Value) bool {
		e := sc.Get(el, "embeddings")
		v, ok := translate.AppendVector(nil, &sc, sc.Get(e, "values"))
		if !ok {
			err = fmt.Errorf("%w: predictions[%d].embeddings.values is not an array of numbers", translate.ErrUpstream, got)
			return false
		}
		out.Vectors = append(out.Vectors, v)
		stats := sc.Get(e, "statistics")
		count := sc.Get(stats, "token_count")
		if !count.Exists() {
			count = sc.Get(stats, "tokenCount")
		}
		tokens += int(max(0, count.Int()))
		got++
		return true
	})
	if err != nil {
		out.Vectors = out.Vectors[:len(out.Vectors)-got]
		return err
	}
	if got != n {
		out.Vectors = out.Vectors[:len(out.Vectors)-got]
		return fmt.Errorf("%w: the embeddings answer has %d predictions for %d inputs", translate.ErrUpstream, got, n)
	}
	out.PromptTokens += tokens
	return nil
}
