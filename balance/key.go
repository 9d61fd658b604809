package balance

import (
	"math/bits"

	"github.com/agate-gateway/agate/translate"
)

// The affinity keys. A key is a 64-bit hash, the same in every process (Redis shares
// them), never 0 (which means none). Two conversations that hash alike share a
// deployment: harmless, the key only routes.

const (
	hashSeed = 0x9e3779b97f4a7c15
	hashMul  = 0xbf58476d1ce4e5b9
	hashMix  = 0x94d049bb133111eb
)

// hasher is a streaming 64-bit hash of strings, read from the string without copying it:
// four independent lanes over each 32 bytes (so the multiplications overlap), then eight
// bytes a step.
type hasher struct{ h uint64 }

func (h *hasher) word(w uint64) {
	h.h = bits.RotateLeft64((h.h^w)*hashMul, 29)
}

// le64 reads the eight bytes of s at i, little endian (one load once compiled).
func le64(s string, i int) uint64 {
	_ = s[i+7]
	return uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
		uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
}

// str adds s, with its length so that field boundaries count.
func (h *hasher) str(s string) {
	h.word(uint64(len(s)))
	if len(s) >= 32 {
		a, b, c, d := h.h, h.h^hashMix, h.h+hashSeed, h.h^hashMul
		for len(s) >= 32 {
			a = bits.RotateLeft64((a^le64(s, 0))*hashMul, 29)
			b = bits.RotateLeft64((b^le64(s, 8))*hashMul, 29)
			c = bits.RotateLeft64((c^le64(s, 16))*hashMul, 29)
			d = bits.RotateLeft64((d^le64(s, 24))*hashMul, 29)
			s = s[32:]
		}
		h.h = a
		h.word(b)
		h.word(c)
		h.word(d)
	}
	for len(s) >= 8 {
		h.word(le64(s, 0))
		s = s[8:]
	}
	var w uint64
	for i := 0; i < len(s); i++ {
		w |= uint64(s[i]) << (8 * i)
	}
	h.word(w)
}

// sum returns the hash, finalized (splitmix64's), never 0.
func (h *hasher) sum() uint64 {
	x := h.h
	x ^= x >> 30
	x *= hashMul
	x ^= x >> 27
	x *= hashMix
	x ^= x >> 31
	if x == 0 {
		x = 1
	}
	return x
}

// PrefixKey returns the affinity key of the conversation req belongs to: a hash of what
// every turn of it starts with, the tools and the messages up to and including the first
// user message (the system and developer prompts before it included): what a provider's
// prompt cache holds first. Every turn of a conversation that keeps its start has the
// same key; ids the client chose play no part.
func PrefixKey(req *translate.Request) uint64 {
	h := hasher{h: hashSeed}
	for i := range req.Tools {
		t := &req.Tools[i]
		h.str(t.Name)
		h.str(t.Description)
		h.str(t.Parameters)
		if t.Builtin != nil {
			h.str(t.Builtin.Raw)
		}
	}
	h.word(uint64(len(req.Tools)))
	for i := range req.Messages {
		m := &req.Messages[i]
		h.str(m.Role)
		for j := range m.Content {
			p := &m.Content[j]
			h.word(uint64(p.Type))
			h.str(p.Text)
			if p.Media != nil {
				h.str(p.Media.URL)
				h.str(p.Media.FileData)
				h.str(p.Media.FileID)
				h.str(p.Media.AudioData)
			}
		}
		if m.Role == translate.RoleUser {
			break
		}
	}
	return h.sum()
}

// StringKey returns the affinity key of a session id or user name s (kind tells the
// sources apart: a header's name, or "user"); 0 when s is empty.
func StringKey(kind, s string) uint64 {
	if s == "" {
		return 0
	}
	h := hasher{h: hashSeed ^ 1}
	h.str(kind)
	h.str(s)
	return h.sum()
}
