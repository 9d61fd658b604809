package translate

import (
	"encoding/base64"
	"encoding/binary"
	"hash/crc32"
	"io"
	"strings"
)

// SealedPrefix starts every string SealBlock makes: the format's name and version.
const SealedPrefix = "agate1."

// Flags of a sealed block's first byte.
const sealedFlate = 1 // the fields are deflate-compressed

// maxSealedState bounds what OpenBlock inflates.
const maxSealedState = 8 << 20

// SealBlock returns b as one opaque string a client keeps and sends back, for client
// dialects whose wire has a place for opaque reasoning state (the OpenAI Responses
// reasoning item's encrypted_content): SealedPrefix, b.Dialect, ".", then in unpadded
// base64url a flags byte, b's other fields (compressed when it pays) and a CRC-32 of the
// dialect and what precedes it. The dialect travels in the clear so that an encoder can
// drop another dialect's state; the checksum makes a damaged or hand-edited string read
// as no state at all. It is not a secret: the upstream's own signatures are what stop
// forged reasoning. b.Dialect must be set.
func SealBlock(b *ThinkingBlock) string {
	fields := make([]byte, 0, 16+len(b.Type)+len(b.Thinking)+len(b.Signature)+len(b.Data)+len(b.ID)+len(b.CallID))
	for _, f := range [...]string{b.Type, b.Thinking, b.Signature, b.Data, b.ID, b.CallID} {
		fields = binary.AppendUvarint(fields, uint64(len(f)))
		fields = append(fields, f...)
	}
	body := make([]byte, 1, 1+len(fields)+4)
	if z, ok := compressed(fields); ok {
		body[0] |= sealedFlate
		fields = z
	}
	body = append(body, fields...)
	body = binary.BigEndian.AppendUint32(body, sealedSum(b.Dialect, body))
	var s strings.Builder
	s.Grow(len(SealedPrefix) + len(b.Dialect) + 1 + base64.RawURLEncoding.EncodedLen(len(body)))
	s.WriteString(SealedPrefix)
	s.WriteString(b.Dialect)
	s.WriteByte('.')
	enc := base64.NewEncoder(base64.RawURLEncoding, &s)
	enc.Write(body)
	enc.Close()
	return s.String()
}

func sealedSum(dialect string, body []byte) uint32 {
	h := crc32.NewIEEE()
	io.WriteString(h, dialect)
	h.Write([]byte{0})
	h.Write(body)
	return h.Sum32()
}

// OpenBlock undoes SealBlock. It reports false, with no error, for anything SealBlock did
// not make: another server's encrypted_content, a damaged or edited string. The returned
// block does not alias s.
func OpenBlock(s string) (ThinkingBlock, bool) {
	a := NewAllowance(maxSealedState)
	b, ok, _ := a.OpenBlock(s)
	return b, ok
}

// OpenBlock is the package's OpenBlock for one of a request's sealed blocks: its
// compressed fields are inflated under a (see Allowance). over reports that they
// inflate beyond what a has left: the caller refuses the request (StateTooLarge), naming
// the block's field.
func (a *Allowance) OpenBlock(s string) (_ ThinkingBlock, ok, over bool) {
	var b ThinkingBlock
	rest, ok := strings.CutPrefix(s, SealedPrefix)
	if !ok {
		return b, false, false
	}
	dot := strings.IndexByte(rest, '.')
	if dot < 1 || dot > 32 || !sealedDialectName(rest[:dot]) {
		return b, false, false
	}
	dialect := rest[:dot]
	body, err := base64.RawURLEncoding.DecodeString(rest[dot+1:])
	if err != nil || len(body) < 5 {
		return b, false, false
	}
	n := len(body) - 4
	if binary.BigEndian.Uint32(body[n:]) != sealedSum(dialect, body[:n]) {
		return b, false, false
	}
	flags, fields := body[0], body[1:n]
	switch flags {
	case 0:
	case sealedFlate:
		var over bool
		if fields, over = a.inflateWithin(fields, maxSealedState); fields == nil {
			return b, false, over
		}
	default:
		return b, false, false
	}
	b.Dialect = dialect
	for _, dst := range [...]*string{&b.Type, &b.Thinking, &b.Signature, &b.Data, &b.ID, &b.CallID} {
		l, k := binary.Uvarint(fields)
		if k <= 0 || l > uint64(len(fields)-k) {
			return ThinkingBlock{}, false, false
		}
		*dst = string(fields[k : k+int(l)])
		fields = fields[k+int(l):]
	}
	if len(fields) != 0 {
		return ThinkingBlock{}, false, false
	}
	return b, true, false
}

// sealedDialectName reports whether s can be a dialect name in a sealed block.
func sealedDialectName(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '_' && c != '-' {
			return false
		}
	}
	return true
}
