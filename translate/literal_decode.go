package translate

import (
	"strings"

	"github.com/agate-gateway/agate/internal/jsonx"
)

// DecodeLiterals decodes the message strings of r that a lazy parse left as written (the
// strings in r.Literals with an escape: the text of text and refusal parts, refusals,
// reasoning and tool call arguments), each into fresh memory (one allocation for all of
// them), and clears r.Literals: afterwards every string of r is a value, for a reader that
// is not a translate.LiteralReader (the tool loop, tracing, the response cache). A
// request with no Literals is left as it is. The client parsers' Decode functions
// (messagesin.Decode, responsesin.Decode) are this method.
func (r *Request) DecodeLiterals() {
	if r.Literals == "" {
		return
	}
	escaped := func(s string) bool { return jsonx.Within(s, r.Literals) && strings.IndexByte(s, '\\') >= 0 }
	total := 0
	literalStrings(r, func(s *string) {
		if escaped(*s) {
			total += len(*s)
		}
	})
	if total > 0 {
		var sc jsonx.Scanner
		literalStrings(r, func(s *string) {
			if escaped(*s) {
				*s = sc.DecodeRaw(*s, total) // one arena for all of them
			}
		})
	}
	r.Literals = ""
}

// literalStrings calls fn with each message string of r a lazy parse may leave escaped.
func literalStrings(r *Request, fn func(*string)) {
	for i := range r.Messages {
		m := &r.Messages[i]
		fn(&m.Reasoning)
		fn(&m.Refusal)
		for j := range m.Content {
			if t := m.Content[j].Type; t == PartText || t == PartRefusal {
				fn(&m.Content[j].Text)
			}
		}
		for j := range m.ToolCalls {
			fn(&m.ToolCalls[j].Arguments)
		}
	}
}
