package messagesin

import (
	"github.com/agate-gateway/agate/internal/jsonx"
	"github.com/agate-gateway/agate/translate"
)

// appendChatBody appends the settings of r as an OpenAI chat completions body without
// messages, tools and tool_choice. The core Request's Body is the body of an OpenAI chat
// request, which the openai provider forwards with its model and stream options rewritten
// and, since the parser sets Edited, its messages, tools and tool_choice written from the
// core request; a Messages body must never be forwarded there.
func appendChatBody(dst []byte, r *translate.Request) []byte {
	dst = append(dst, `{"model":`...)
	dst = jsonx.AppendString(dst, r.Model)
	if r.MaxTokens > 0 {
		dst = append(dst, `,"max_completion_tokens":`...)
		dst = jsonx.AppendInt(dst, r.MaxTokens)
	}
	if r.Stream {
		dst = append(dst, `,"stream":true`...)
	}
	if r.Functions() > 0 && r.ParallelToolCalls != nil {
		dst = append(dst, `,"parallel_tool_calls":false`...)
	}
	if r.Temperature != nil {
		dst = append(dst, `,"temperature":`...)
		dst = jsonx.AppendFloat(dst, *r.Temperature)
	}
	if r.TopP != nil {
		dst = append(dst, `,"top_p":`...)
		dst = jsonx.AppendFloat(dst, *r.TopP)
	}
	if len(r.Stop) > 0 {
		dst = append(dst, `,"stop":[`...)
		for i, s := range r.Stop {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = jsonx.AppendString(dst, s)
		}
		dst = append(dst, ']')
	}
	if r.ReasoningEffort != "" {
		dst = append(dst, `,"reasoning_effort":`...)
		dst = jsonx.AppendString(dst, r.ReasoningEffort)
	}
	if r.User != "" {
		dst = append(dst, `,"user":`...)
		dst = jsonx.AppendString(dst, r.User)
	}
	if r.ResponseFormat.Type == translate.FormatJSONSchema {
		dst = append(dst, `,"response_format":{"type":"json_schema","json_schema":{"name":`...)
		dst = jsonx.AppendString(dst, r.ResponseFormat.Name)
		dst = append(dst, `,"schema":`...)
		dst = append(dst, r.ResponseFormat.Schema...)
		dst = append(dst, `}}`...)
	}
	return append(dst, '}')
}
