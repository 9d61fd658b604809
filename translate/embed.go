package translate

import (
	"strconv"

	"github.com/agate-gateway/agate/internal/jsonx"
)

// Embeddings: OpenAI's POST /v1/embeddings in the core's terms. A client dialect
// (translate/embeddingsin) parses the client's body into an EmbedRequest and writes the
// answer from Embeddings; an upstream whose provider also implements Embedder phrases a
// batch of the inputs for its wire and decodes its answer into Embeddings. Nothing here
// streams: an embeddings answer is one body.

// MaxEmbedInputs bounds the inputs of one embeddings request, as OpenAI does (2,048);
// the client parser counts them before it keeps any.
const MaxEmbedInputs = 2048

// MaxEmbedTokenIDs bounds the token ids of one request, all inputs together (OpenAI takes
// at most 300,000 tokens a request); the client parser counts them as it keeps them.
const MaxEmbedTokenIDs = 1 << 20

// MaxEmbedDimensions bounds a request's dimensions (the largest model of each provider
// answers 3,072).
const MaxEmbedDimensions = 8192

// EmbedRequest is one client's embeddings request.
type EmbedRequest struct {
	// Model is the client-facing model name.
	Model string
	// Inputs are what to embed, in order: each a text or an array of token ids.
	Inputs []EmbedInput
	// Tokens reports whether the inputs are token arrays (OpenAI's input as an array of
	// token arrays, or one token array); they are all of one kind.
	Tokens bool
	// Dimensions asks for vectors of this many numbers; zero means the model's own.
	Dimensions int
	// Base64 asks for each vector as the base64 of its little-endian float32 numbers
	// (encoding_format "base64"), else a JSON array of numbers.
	Base64 bool
	// User is the client's end-user id (user); "" when absent.
	User string
	// TaskType is the extension member task_type (Gemini's taskType, such as
	// RETRIEVAL_QUERY); "" means the route's, if it has one.
	TaskType string
	// Body is the client's body as it came, for a passthrough to an OpenAI upstream.
	Body string
}

// EmbedInput is one input: a text, or token ids when the request's Tokens is set.
type EmbedInput struct {
	Text   string
	Tokens []int64
}

// EstimateTokens is the request's input tokens before an upstream counts them: every
// token of a token array, and a token per four bytes of text (at least one an input).
func (r *EmbedRequest) EstimateTokens() int {
	n := 0
	for i := range r.Inputs {
		n += r.Inputs[i].EstimateTokens()
	}
	return n
}

// EstimateTokens is one input's share of EmbedRequest.EstimateTokens: its token ids, or
// a token per four bytes of its text (at least one).
func (in *EmbedInput) EstimateTokens() int {
	if in.Tokens != nil {
		return len(in.Tokens)
	}
	return max(1, (len(in.Text)+3)/4)
}

// EmbedLimits bound one upstream embeddings request (Embedder.EmbedLimits).
type EmbedLimits struct {
	// Inputs is the most inputs one request may carry (at least one).
	Inputs int
	// Tokens is the most input tokens (estimated, EmbedInput.EstimateTokens) one request
	// may carry, all inputs together; zero is no bound. An input over it alone is sent
	// alone, for the upstream to truncate or refuse.
	Tokens int
}

// Batches splits inputs into consecutive batches within l, in order, calling send with
// each; it stops at send's first error and returns it.
func (l EmbedLimits) Batches(inputs []EmbedInput, send func(batch []EmbedInput) error) error {
	most := max(1, l.Inputs)
	for len(inputs) > 0 {
		n, tokens := 0, 0
		for n < len(inputs) && n < most {
			t := inputs[n].EstimateTokens()
			if n > 0 && l.Tokens > 0 && tokens+t > l.Tokens {
				break
			}
			tokens += t
			n++
		}
		if err := send(inputs[:n]); err != nil {
			return err
		}
		inputs = inputs[n:]
	}
	return nil
}

// Embeddings is an embeddings answer: one vector an input, in the inputs' order, and the
// input tokens the upstream counted.
type Embeddings struct {
	Vectors [][]float32
	// PromptTokens is the upstream's count; zero when it reported none.
	PromptTokens int
}

// EmbedOptions are the route's settings for one upstream embeddings request.
type EmbedOptions struct {
	// UpstreamModel is the model name the upstream knows.
	UpstreamModel string
	// TaskType is the request's task type, else the route's; "" means none.
	TaskType string
}

// Embedder is the optional side of a Provider whose upstream embeds text. The proxy
// splits a request's inputs into batches within EmbedLimits, sends each to
// EmbedPath with the body AppendEmbedRequest wrote, and joins the vectors
// DecodeEmbeddings appended, in order. Upstream errors are the Provider's DecodeError.
type Embedder interface {
	// EmbedPath returns what to append to the backend's base URL for an embeddings
	// request to upstreamModel.
	EmbedPath(upstreamModel string) string
	// EmbedLimits are the bounds of one upstream request to upstreamModel.
	EmbedLimits(upstreamModel string) EmbedLimits
	// AppendEmbedRequest appends to dst the upstream request body for inputs, a batch of
	// req.Inputs. Its errors are *ParamError values naming what the upstream cannot take.
	AppendEmbedRequest(dst []byte, req *EmbedRequest, inputs []EmbedInput, opts *EmbedOptions) ([]byte, error)
	// DecodeEmbeddings decodes an upstream's answer to a batch of n inputs, appending its
	// n vectors in order to out.Vectors and adding the tokens it reports to
	// out.PromptTokens. An answer that is not one vector an input is an error wrapping
	// ErrUpstream, and then nothing is appended to out.
	DecodeEmbeddings(body []byte, n int, out *Embeddings) error
}

// AppendVector appends to dst the numbers of arr, a JSON array of numbers that sc read,
// each rounded to a float32; false when an element is not a number or is out of the
// float32 range.
func AppendVector(dst []float32, sc *jsonx.Scanner, arr jsonx.Value) ([]float32, bool) {
	if arr.Kind != jsonx.Array {
		return dst, false
	}
	ok := true
	sc.Each(arr, func(_ string, el jsonx.Value) bool {
		f, err := strconv.ParseFloat(el.Raw, 32)
		if el.Kind != jsonx.Number || err != nil {
			ok = false
			return false
		}
		dst = append(dst, float32(f))
		return true
	})
	return dst, ok
}
