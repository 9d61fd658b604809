package mock

import (
	"context"
	"encoding/binary"
	"hash/fnv"
	"math"

	"github.com/agate-gateway/agate/translate"
)

// DefaultEmbedDimensions is the length of the mock's vectors when the request asks for none.
const DefaultEmbedDimensions = 256

// maxEmbedNumbers bounds the numbers of one mock answer (inputs times dimensions): 2M
// float32s, some 20 MB of JSON.
const maxEmbedNumbers = 1 << 21

// Embed answers an embeddings request as the mock: for each input a unit vector of
// req.Dimensions numbers (DefaultEmbedDimensions when zero), a function of the input alone
// (its text or token ids, FNV-1a-hashed to seed a SplitMix64 sequence), so equal inputs
// embed equally whatever the model; the usage is the request's estimate.
func (Provider) Embed(ctx context.Context, req *translate.EmbedRequest) (*translate.Embeddings, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	dims := req.Dimensions
	if dims == 0 {
		dims = DefaultEmbedDimensions
	}
	if len(req.Inputs)*dims > maxEmbedNumbers {
		return nil, translate.Errorf("dimensions", "the mock answers at most %d numbers (inputs times dimensions)", maxEmbedNumbers)
	}
	out := &translate.Embeddings{Vectors: make([][]float32, len(req.Inputs)), PromptTokens: req.EstimateTokens()}
	flat := make([]float32, len(req.Inputs)*dims)
	for i := range req.Inputs {
		v := flat[i*dims : (i+1)*dims : (i+1)*dims]
		fill(v, seed(&req.Inputs[i]))
		out.Vectors[i] = v
	}
	return out, nil
}

func seed(in *translate.EmbedInput) uint64 {
	h := fnv.New64a()
	if in.Tokens == nil {
		h.Write([]byte(in.Text))
		return h.Sum64()
	}
	var b [8]byte
	for _, id := range in.Tokens {
		binary.LittleEndian.PutUint64(b[:], uint64(id))
		h.Write(b[:])
	}
	return h.Sum64() ^ 1 // a token array never seeds like a text
}

// fill writes a unit vector drawn from s into v.
func fill(v []float32, s uint64) {
	var norm float64
	for i := range v {
		s += 0x9e3779b97f4a7c15 // SplitMix64
		z := s
		z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
		z = (z ^ z>>27) * 0x94d049bb133111eb
		z ^= z >> 31
		f := float64(z>>11)/(1<<53)*2 - 1
		v[i] = float32(f)
		norm += f * f
	}
	if norm == 0 {
		return
	}
	scale := 1 / math.Sqrt(norm)
	for i := range v {
		v[i] = float32(float64(v[i]) * scale)
	}
}
