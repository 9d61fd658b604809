package translate

import "github.com/agate-gateway/agate/internal/jsonx"

// LiteralReader is implemented by a Provider whose AppendRequest reads the request's
// message strings only through the Request methods of this file (AppendText,
// AppendMessageText, AppendToolOutput, AppendDecodedText, AppendDecoded), so that it
// takes them as a lazy parse leaves them: the caller need not decode them first
// (openaichat.Decode).
type LiteralReader interface {
	ReadsLiterals()
}

// AppendText appends s, a string of r, as a JSON string literal with the bytes
// jsonx.AppendString writes for its value: a string in r.Literals is transcoded from its
// escapes as written (jsonx.AppendLiteral), any other is escaped.
func (r *Request) AppendText(dst []byte, s string) []byte {
	if jsonx.Within(s, r.Literals) {
		return jsonx.AppendLiteral(dst, s)
	}
	return jsonx.AppendString(dst, s)
}

// AppendDecoded appends the value of s, a string of r, to dst: s itself, unless it
// lies in r.Literals, where its escapes are decoded.
func (r *Request) AppendDecoded(dst []byte, s string) []byte {
	if jsonx.Within(s, r.Literals) {
		return jsonx.AppendDecoded(dst, s)
	}
	return append(dst, s...)
}

// AppendMessageText appends m.Text(), the text of m's text parts joined, as a JSON
// string literal, each part read as AppendText reads it.
func (r *Request) AppendMessageText(dst []byte, m *Message) []byte {
	if len(m.Content) == 1 && m.Content[0].Type == PartText {
		return r.AppendText(dst, m.Content[0].Text)
	}
	return jsonx.AppendString(dst, jsonx.View(r.AppendDecodedText(nil, m)))
}

// AppendDecodedText appends the value of m.Text() to dst, each part read as
// AppendDecoded reads it.
func (r *Request) AppendDecodedText(dst []byte, m *Message) []byte {
	for i := range m.Content {
		if m.Content[i].Type == PartText {
			dst = r.AppendDecoded(dst, m.Content[i].Text)
		}
	}
	return dst
}

// AppendToolOutput appends m.ToolOutput() as a JSON string literal, each part read as
// AppendText reads it.
func (r *Request) AppendToolOutput(dst []byte, m *Message) []byte {
	if !m.ToolError {
		return r.AppendMessageText(dst, m)
	}
	return jsonx.AppendString(dst, jsonx.View(r.AppendDecodedText([]byte("Error: "), m)))
}
