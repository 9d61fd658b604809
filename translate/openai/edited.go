package openai

import (
	"strings"

	"github.com/agate-gateway/agate/internal/jsonx"
	"github.com/agate-gateway/agate/translate"
)

// appendEditedDirect is AppendRequest for an edited request (a Messages or Responses
// request read into the core, whose Body its parser wrote: the settings only, compact,
// model first) in one pass over its Body, without sjson: the model's value replaced,
// then the members sjson would append (stream, stream_options, messages, tools,
// tool_choice), in the order and bytes it appends them, the messages and tools written
// straight into dst as appendEdited writes them. ok is false, with dst unchanged, for a
// body it does not vouch for writing as sjson would: any whitespace or escape in it, a
// model member missing or given twice, a member it would set already there (but a
// stream member already as wanted), an upstream model or tool choice mode that is not
// plain; AppendRequest then goes through sjson. FuzzEditedDirectMatchesSjson holds the
// two to the same bytes.
func appendEditedDirect(dst []byte, req *translate.Request, opts *translate.Options) (_ []byte, ok bool) {
	body := req.Body
	if len(body) < 2 || body[0] != '{' || body[len(body)-1] != '}' || strings.ContainsAny(body, " \t\r\n\\") ||
		!plainString(opts.UpstreamModel) || req.ToolChoice.Mode != translate.ToolChoiceFunction && !plainString(req.ToolChoice.Mode) {
		return dst, false
	}
	sc := jsonx.NewScanner(body)
	var model, v jsonx.Value
	hasStream := false
	for n := 0; sc.NextField(&n); {
		k := sc.Key()
		if !sc.ValueRaw(&v) {
			return dst, false
		}
		switch k {
		case "model":
			if model.Kind != jsonx.Missing {
				return dst, false
			}
			model = v
		case "stream":
			// sjson sets stream to true for a stream, and to false otherwise only when
			// it is true (streamFlag): as wanted already, it is left as it is.
			if opts.Stream && v.Raw != "true" || !opts.Stream && v.Raw == "true" || hasStream {
				return dst, false
			}
			hasStream = true
		case "stream_options", "messages", "tools", "tool_choice":
			return dst, false
		}
	}
	if sc.Failed() || !sc.AtEnd() || model.Kind == jsonx.Missing {
		return dst, false
	}
	dst = append(dst, body[:model.At]...)
	dst = append(dst, '"')
	dst = append(dst, opts.UpstreamModel...)
	dst = append(dst, '"')
	dst = append(dst, body[model.At+len(model.Raw):len(body)-1]...)
	if opts.Stream {
		if !hasStream {
			dst = append(dst, `,"stream":true`...)
		}
		dst = append(dst, `,"stream_options":{"include_usage":true}`...)
	}
	dst = append(dst, `,"messages":`...)
	dst = appendMessages(dst, req)
	if req.Functions() > 0 {
		dst = append(dst, `,"tools":`...)
		dst = appendTools(dst, req.Tools)
	}
	switch req.ToolChoice.Mode {
	case "":
	case translate.ToolChoiceFunction:
		dst = append(dst, `,"tool_choice":{"type":"function","function":{"name":`...)
		dst = jsonx.AppendString(dst, req.ToolChoice.Name)
		dst = append(dst, `}}`...)
	default:
		dst = append(dst, `,"tool_choice":"`...)
		dst = append(dst, req.ToolChoice.Mode...)
		dst = append(dst, '"')
	}
	return append(dst, '}'), true
}

// plainString reports whether s is written as a JSON string the same way by every
// encoder: printable ASCII without a quote, backslash or an HTML character (which
// encoding/json's rules escape and sjson's do not).
func plainString(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return true
}
