package anthropic

import (
	"strings"

	"github.com/agate-gateway/agate/internal/jsonx"
	"github.com/agate-gateway/agate/translate"
)

// Content parts of user messages, and tool ids, as the Messages API takes them.

func (w *anthropicWriter) userPart(i, j int, p *translate.Part, opts *translate.Options) error {
	switch p.Type {
	case translate.PartText:
		w.text(userTurn, p.Text, p.CacheControl)
	case translate.PartImage:
		param := translate.ParamIndex(translate.ParamIndex("messages", i)+".content", j) + ".image_url.url"
		if mt, data, ok := translate.ParseDataURL(p.Media.URL); ok {
			if mt == "image/jpg" {
				mt = "image/jpeg"
			}
			switch mt {
			case "image/jpeg", "image/png", "image/gif", "image/webp":
			default:
				return translate.Errorf(param, "image type %q is not supported by the anthropic backend: use jpeg, png, gif or webp", mt)
			}
			w.block(userTurn)
			w.dst = append(w.dst, `{"type":"image","source":{"type":"base64","media_type":"`...)
			w.dst = append(w.dst, mt...)
			w.dst = append(w.dst, `","data":`...)
			w.dst = jsonx.AppendString(w.dst, data)
			w.dst = append(w.dst, '}')
		} else if strings.HasPrefix(p.Media.URL, "https://") || strings.HasPrefix(p.Media.URL, "http://") {
			w.block(userTurn)
			w.dst = append(w.dst, `{"type":"image","source":{"type":"url","url":`...)
			w.dst = jsonx.AppendString(w.dst, p.Media.URL)
			w.dst = append(w.dst, '}')
		} else {
			return translate.Errorf(param, "must be an https URL or a base64 data URL")
		}
		w.cacheControl(p.CacheControl)
		w.dst = append(w.dst, '}')
		w.end()
	case translate.PartFile:
		base := translate.ParamIndex(translate.ParamIndex("messages", i)+".content", j) + ".file"
		if p.Media.FileData == "" {
			if opts.Drop(base + ".file_id") {
				return nil
			}
			return translate.Unsupported(base+".file_id", anthropicName)
		}
		data := p.Media.FileData
		if mt, d, ok := translate.ParseDataURL(data); ok {
			if mt != "application/pdf" {
				return translate.Errorf(base+".file_data", "file type %q is not supported by the anthropic backend: only PDF documents are", mt)
			}
			data = d
		} else if !strings.HasPrefix(data, "JVBER") { // base64 of "%PDF"
			return translate.Errorf(base+".file_data", "must be a PDF document, as a data:application/pdf;base64 URL or base64")
		}
		w.block(userTurn)
		w.dst = append(w.dst, `{"type":"document","source":{"type":"base64","media_type":"application/pdf","data":`...)
		w.dst = jsonx.AppendString(w.dst, data)
		w.dst = append(w.dst, '}')
		if p.Media.Filename != "" && len(p.Media.Filename) <= 500 {
			w.dst = append(w.dst, `,"title":`...)
			w.dst = jsonx.AppendString(w.dst, p.Media.Filename)
		}
		w.cacheControl(p.CacheControl)
		w.dst = append(w.dst, '}')
		w.end()
	case translate.PartAudio:
		param := translate.ParamIndex(translate.ParamIndex("messages", i)+".content", j)
		if opts.Drop(param) {
			return nil
		}
		return &translate.ParamError{Param: param, Message: "input_audio parts are not supported by the anthropic backend", Code: "unsupported_parameter"}
	default:
		return translate.Errorf(translate.ParamIndex(translate.ParamIndex("messages", i)+".content", j)+".type", "this content part is not supported in user messages by the anthropic backend")
	}
	return nil
}

// anthropicAppendID appends a tool_use id as a JSON string, replacing the characters the
// API's id pattern ^[a-zA-Z0-9_-]+$ forbids (ids minted by other providers) with '_'.
func anthropicAppendID(dst []byte, id string) []byte {
	if id == "" {
		return append(dst, `"_"`...)
	}
	// Copied whole, then mended in place: most ids need no change, and a byte-wise append
	// costs a capacity check per byte. The test is one load from idBytes a byte.
	dst = append(append(dst, '"'), id...)
	if out := dst[len(dst)-len(id):]; !idClean(out) {
		for i, c := range out {
			if idBytes[c] == 0 {
				out[i] = '_'
			}
		}
	}
	return append(dst, '"')
}

// anthropicAppendCarriedID appends translate.CarriedID(id) as anthropicAppendID appends
// it. An id the pattern allows as it is holds no '~', the first byte of
// translate.CarrySep, so it carries no state and is its own CarriedID: it goes out after
// one read of its bytes. Any other id is read by CarriedID first, then mended.
func anthropicAppendCarriedID(dst []byte, id string) []byte {
	if id != "" {
		dst = append(append(dst, '"'), id...)
		if idClean(dst[len(dst)-len(id):]) {
			return append(dst, '"')
		}
		dst = dst[:len(dst)-len(id)-1]
	}
	return anthropicAppendID(dst, translate.CarriedID(id))
}

// idClean reports whether every byte of b is one the id pattern allows: the idBytes
// entries of b's bytes ANDed together, eight at a time, with no branch a byte (the
// mending loop's test and branch a byte cost about twice as much, and ids from
// OpenAI-compatible servers and from Anthropic need no mending).
func idClean(b []byte) bool {
	ok := byte(1)
	for len(b) >= 8 {
		_ = b[7]
		ok &= idBytes[b[0]] & idBytes[b[1]] & idBytes[b[2]] & idBytes[b[3]] &
			idBytes[b[4]] & idBytes[b[5]] & idBytes[b[6]] & idBytes[b[7]]
		b = b[8:]
	}
	for _, c := range b {
		ok &= idBytes[c]
	}
	return ok != 0
}

// idBytes has a 1 at the bytes the tool_use id pattern allows: a-z, A-Z, 0-9, _ and -.
const idBytes = "" +
	"\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00" +
	"\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x00\x00\x00\x00\x00\x00" +
	"\x00\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x00\x00\x00\x00\x01" +
	"\x00\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x00\x00\x00\x00\x00" +
	"\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00" +
	"\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00" +
	"\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00" +
	"\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
