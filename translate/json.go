package translate

import "github.com/agate-gateway/agate/internal/jsonx"

// AppendToolCalls appends calls as an OpenAI tool_calls array: the one writer of that
// array for both OpenAI-wire packages (openaichat's Assembler, the openai upstream).
func AppendToolCalls(dst []byte, calls []ToolCall) []byte {
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
		dst = jsonx.AppendString(dst, tc.Arguments)
		dst = append(dst, `}}`...)
	}
	return append(dst, ']')
}
