package gemini

import (
	"encoding/base64"
	"encoding/binary"
	"strings"

	"github.com/agate-gateway/agate/internal/jsonx"
	"github.com/agate-gateway/agate/translate"
)

// geminiDataURL splits a base64 data: URL into its MIME type (application/octet-stream
// when it names none) and data.
func geminiDataURL(u string) (mime, data string, ok bool) {
	mime, data, ok = translate.ParseDataURL(u)
	if ok && mime == "" {
		mime = "application/octet-stream"
	}
	return mime, data, ok
}

// geminiMIMEFromName guesses a MIME type from a file name or URL extension, "" if unknown.
func geminiMIMEFromName(name string) string {
	if i := strings.IndexAny(name, "?#"); i >= 0 {
		name = name[:i]
	}
	dot := strings.LastIndexByte(name, '.')
	if dot < 0 || strings.IndexByte(name[dot:], '/') >= 0 {
		return ""
	}
	switch strings.ToLower(name[dot+1:]) {
	case "png":
		return "image/png"
	case "jpg", "jpeg":
		return "image/jpeg"
	case "webp":
		return "image/webp"
	case "gif":
		return "image/gif"
	case "heic":
		return "image/heic"
	case "pdf":
		return "application/pdf"
	case "txt":
		return "text/plain"
	case "wav":
		return "audio/wav"
	case "mp3":
		return "audio/mp3"
	case "mp4":
		return "video/mp4"
	}
	return ""
}

// geminiAudioMIME returns the MIME type Gemini takes for an OpenAI input_audio format.
func geminiAudioMIME(format string) string {
	switch strings.ToLower(format) {
	case "wav":
		return "audio/wav"
	case "mp3", "mpeg":
		return "audio/mp3"
	case "aiff":
		return "audio/aiff"
	case "aac":
		return "audio/aac"
	case "ogg":
		return "audio/ogg"
	case "flac":
		return "audio/flac"
	case "pcm16", "pcm":
		return "audio/pcm"
	case "webm":
		return "audio/webm"
	}
	return ""
}

// geminiCarry is the state a Gemini tool call id carries to the next turn.
type geminiCarry struct {
	// upstreamID: the id is Gemini's own FunctionCall.id, to be sent back.
	upstreamID bool
	// callSig is the thoughtSignature of the functionCall part.
	callSig string
	// textSig is the thoughtSignature of a non-call part that preceded the call.
	textSig string
}

// Flags of the carried state's first byte.
const (
	carryUpstreamID = 1 << iota
	carryCallSigB64 // callSig stored decoded from standard base64
	carryTextSigB64 // textSig stored decoded from standard base64
)

// appendGeminiCarry encodes c: a flags byte, the call signature with a uvarint length,
// then the text signature. Signatures that are standard base64 (they always are) are
// stored decoded, a quarter smaller.
func appendGeminiCarry(dst []byte, c geminiCarry) []byte {
	if !c.upstreamID && c.callSig == "" && c.textSig == "" {
		return dst
	}
	at := len(dst)
	dst = append(dst, 0)
	flags := byte(0)
	if c.upstreamID {
		flags |= carryUpstreamID
	}
	call, ok := decodeStdBase64(c.callSig)
	if ok {
		flags |= carryCallSigB64
	} else {
		call = []byte(c.callSig)
	}
	dst = binary.AppendUvarint(dst, uint64(len(call)))
	dst = append(dst, call...)
	text, ok := decodeStdBase64(c.textSig)
	if ok {
		flags |= carryTextSigB64
	} else {
		text = []byte(c.textSig)
	}
	dst = append(dst, text...)
	dst[at] = flags
	return dst
}

func decodeStdBase64(s string) ([]byte, bool) {
	if s == "" {
		return nil, false
	}
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil || base64.StdEncoding.EncodeToString(b) != s {
		return nil, false
	}
	return b, true
}

// geminiSplitID is req.SplitID that decodes uncompressed state into scratch instead of
// allocating; compressed or larger state falls back to req.SplitID (compressed state was
// opened once, by the client parser). The state it returns may alias scratch.
func geminiSplitID(req *translate.Request, s string, scratch []byte) (id string, state []byte) {
	id = translate.CarriedID(s)
	if id == s {
		return s, nil
	}
	// s is id, CarrySep, the kind and the state's unpadded URL-safe base64.
	i := len(id)
	kind, enc := s[i+len(translate.CarrySep)], s[i+len(translate.CarrySep)+1:]
	if kind != 'r' || len(enc) == 0 || base64.RawURLEncoding.DecodedLen(len(enc)) > len(scratch) {
		return req.SplitID(s)
	}
	n, err := base64.RawURLEncoding.Decode(scratch, jsonx.Bytes(enc))
	if err != nil { // CarriedID checked enc: not reached
		return s, nil
	}
	return id, scratch[:n]
}

// geminiCarryView is what appendGeminiCarry encoded, without string copies: the
// signatures are views of the state, still base64-decoded when their flag says so.
type geminiCarryView struct {
	upstreamID       bool
	call, text       []byte
	callB64, textB64 bool
}

// viewGeminiCarry undoes appendGeminiCarry without allocating; unreadable state yields
// the zero value.
func viewGeminiCarry(st []byte) geminiCarryView {
	var c geminiCarryView
	if len(st) < 2 {
		return c
	}
	flags := st[0]
	n, k := binary.Uvarint(st[1:])
	if k <= 0 || n > uint64(len(st)-1-k) {
		return c
	}
	c.call = st[1+k : 1+k+int(n)]
	c.text = st[1+k+int(n):]
	c.upstreamID = flags&carryUpstreamID != 0
	c.callB64 = flags&carryCallSigB64 != 0
	c.textB64 = flags&carryTextSigB64 != 0
	return c
}

// appendGeminiSig appends a signature view as a JSON string: re-encoded in standard
// base64 when b64 (which needs no escaping), else escaped as is.
func appendGeminiSig(dst, sig []byte, b64 bool) []byte {
	if !b64 {
		return jsonx.AppendString(dst, jsonx.View(sig))
	}
	dst = append(dst, '"')
	dst = base64.StdEncoding.AppendEncode(dst, sig)
	return append(dst, '"')
}
