package translate

import "github.com/agate-gateway/agate/internal/jsonx"

// AppendToolCalls appends calls as an OpenAI tool_calls array: the one writer of that
// array for both OpenAI-wire packages (openaichat's Assembler, the openai upstream).
func AppendToolCalls(dst []byte, calls []ToolCall) []byte { return appendToolCalls(dst, calls, "") }

// AppendToolCalls is AppendToolCalls for calls of r, whose arguments it reads as
// AppendText does (a translate.LiteralReader's way).
func (r *Request) AppendToolCalls(dst []byte, calls []ToolCall) []byte {
	return appendToolCalls(dst, calls, r.Literals)
}

// appendToolCalls writes the arguments that lie in literals as string literals' contents
// as written (jsonx.AppendLiteral), any other as a value.
func appendToolCalls(dst []byte, calls []ToolCall, literals string) []byte {
	dst = append(dst, '[')
	for j, tc := range calls {
		if j > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"id":`...)
		dst = jsonx.AppendString(dst, tc.ID)
		dst = append(dst, `,"type":"function","function":{"name":`...)
		dst = jsonx.AppendString(dst, tc.Name)
		dst = append(dst, `,"arguments":`...)
		if jsonx.Within(tc.Arguments, literals) {
			dst = jsonx.AppendLiteral(dst, tc.Arguments)
		} else {
			dst = jsonx.AppendString(dst, tc.Arguments)
		}
		dst = append(dst, `}}`...)
	}
	return append(dst, ']')
}
