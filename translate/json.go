package translate

import "github.com/agate-gateway/agate/internal/jsonx"

// AppendString appends s to dst as a JSON string literal; it is jsonx.AppendString, for
// packages outside translate that write OpenAI JSON by hand.
func AppendString(dst []byte, s string) []byte { return jsonx.AppendString(dst, s) }
