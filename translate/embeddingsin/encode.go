package embeddingsin

import (
	"encoding/base64"
	"encoding/binary"
	"math"
	"slices"
	"strconv"

	"github.com/agate-gateway/agate/internal/jsonx"
	"github.com/agate-gateway/agate/translate"
)

// AppendBody appends OpenAI's embeddings answer for e to dst: a list of one embedding
// object an input, in order, each vector as JSON numbers or, with base64, as the base64
// of its little-endian float32 bytes; model is the client-facing model; the usage's
// prompt_tokens and total_tokens are both promptTokens.
func AppendBody(dst []byte, model string, e *translate.Embeddings, b64 bool, promptTokens int) []byte {
	size := 96 + len(model)
	for _, v := range e.Vectors {
		size += 48 + len(v)*12
	}
	dst = slices.Grow(dst, size)
	dst = append(dst, `{"object":"list","data":[`...)
	for i, v := range e.Vectors {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"object":"embedding","index":`...)
		dst = strconv.AppendInt(dst, int64(i), 10)
		dst = append(dst, `,"embedding":`...)
		if b64 {
			dst = append(dst, '"')
			dst = AppendBase64(dst, v)
			dst = append(dst, '"')
		} else {
			dst = AppendFloats(dst, v)
		}
		dst = append(dst, '}')
	}
	dst = append(dst, `],"model":`...)
	dst = jsonx.AppendString(dst, model)
	dst = append(dst, `,"usage":{"prompt_tokens":`...)
	dst = strconv.AppendInt(dst, int64(promptTokens), 10)
	dst = append(dst, `,"total_tokens":`...)
	dst = strconv.AppendInt(dst, int64(promptTokens), 10)
	return append(dst, "}}"...)
}

// AppendFloats appends v as a JSON array of numbers, each the shortest decimal that reads
// back as the same float32. A number that is not finite (never in a decoded answer) is 0.
func AppendFloats(dst []byte, v []float32) []byte {
	dst = append(dst, '[')
	for i, f := range v {
		if i > 0 {
			dst = append(dst, ',')
		}
		if math.IsInf(float64(f), 0) || math.IsNaN(float64(f)) {
			f = 0
		}
		dst = strconv.AppendFloat(dst, float64(f), 'g', -1, 32)
	}
	return append(dst, ']')
}

// base64Block is how many float32 numbers AppendBase64 encodes at a time: 48 bytes, a
// multiple of 3, so that each block's base64 has no padding and blocks join.
const base64Block = 12

// AppendBase64 appends the standard base64 (with padding) of v's numbers as little-endian
// IEEE 754 float32 bytes: what OpenAI answers for encoding_format "base64", and what the
// SDKs decode (the Node SDK into a Float32Array).
func AppendBase64(dst []byte, v []float32) []byte {
	enc := base64.StdEncoding
	start := len(dst)
	dst = slices.Grow(dst, enc.EncodedLen(4*len(v)))
	dst = dst[:start+enc.EncodedLen(4*len(v))]
	out := dst[start:]
	var buf [4 * base64Block]byte
	for len(v) >= base64Block {
		for i := range base64Block {
			binary.LittleEndian.PutUint32(buf[4*i:], math.Float32bits(v[i]))
		}
		enc.Encode(out, buf[:])
		out, v = out[64:], v[base64Block:]
	}
	for i, f := range v {
		binary.LittleEndian.PutUint32(buf[4*i:], math.Float32bits(f))
	}
	enc.Encode(out, buf[:4*len(v)])
	return dst
}
