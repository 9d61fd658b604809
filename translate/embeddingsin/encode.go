package embeddingsin

import (
	"encoding/base64"
	"encoding/binary"
	"math"
	"math/bits"
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

// base64Pairs maps each 12 bits to their two standard base64 digits, the first in the
// low byte: the encoder writes two digits a lookup, where encoding/base64 writes one
// (BenchmarkBase64). Built once; never written after.
var base64Pairs = func() (t [4096]uint16) {
	const digits = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
	for i := range t {
		t[i] = uint16(digits[i>>6]) | uint16(digits[i&63])<<8
	}
	return t
}()

// AppendBase64 appends the standard base64 (with padding) of v's numbers as little-endian
// IEEE 754 float32 bytes: what OpenAI answers for encoding_format "base64", and what the
// SDKs decode (the Node SDK into a Float32Array).
func AppendBase64(dst []byte, v []float32) []byte {
	n := base64.StdEncoding.EncodedLen(4 * len(v))
	dst = slices.Grow(dst, n)
	out := dst[len(dst) : len(dst)+n]
	// Three numbers are 12 bytes, 16 digits with no padding. Their bytes 0-5 and 6-11,
	// each read as a big-endian word's top 48 bits, are 8 digits: 4 lookups.
	for len(v) >= 3 && len(out) >= 16 {
		a, b, c := uint64(math.Float32bits(v[0])), uint64(math.Float32bits(v[1])), uint64(math.Float32bits(v[2]))
		x := bits.ReverseBytes64(a | b<<32)
		y := bits.ReverseBytes64(b>>16 | c<<16)
		binary.LittleEndian.PutUint64(out, digits8(x))
		binary.LittleEndian.PutUint64(out[8:], digits8(y))
		out, v = out[16:], v[3:]
	}
	var buf [8]byte
	for i, f := range v {
		binary.LittleEndian.PutUint32(buf[4*i:], math.Float32bits(f))
	}
	base64.StdEncoding.Encode(out, buf[:4*len(v)])
	return dst[:len(dst)+n]
}

// digits8 returns the 8 base64 digits of x's top 48 bits, the first in the low byte.
func digits8(x uint64) uint64 {
	return uint64(base64Pairs[x>>52]) | uint64(base64Pairs[x>>40&0xfff])<<16 |
		uint64(base64Pairs[x>>28&0xfff])<<32 | uint64(base64Pairs[x>>16&0xfff])<<48
}
