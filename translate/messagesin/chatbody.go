package messagesin

import "github.com/agate-gateway/agate/translate"

// appendChatBody appends an OpenAI chat completions body equivalent to r. The core
// Request's Body is the body of an OpenAI chat request, which the openai provider forwards
// with only its model and stream options rewritten; a Messages body must never be that.
func appendChatBody(dst []byte, r *translate.Request) []byte {
	dst = append(dst, `{"model":`...)
	dst = translate.AppendString(dst, r.Model)
	dst = append(dst, `,"messages":`...)
	dst = translate.AppendOpenAIMessages(dst, r.Messages)
	if r.MaxTokens > 0 {
		dst = append(dst, `,"max_completion_tokens":`...)
		dst = translate.AppendInt(dst, r.MaxTokens)
	}
	if r.Stream {
		dst = append(dst, `,"stream":true`...)
	}
	if len(r.Tools) > 0 {
		dst = append(dst, `,"tools":`...)
		dst = translate.AppendOpenAITools(dst, r.Tools)
		if r.ParallelToolCalls != nil {
			dst = append(dst, `,"parallel_tool_calls":false`...)
		}
	}
	switch r.ToolChoice.Mode {
	case "":
	case translate.ToolChoiceFunction:
		dst = append(dst, `,"tool_choice":{"type":"function","function":{"name":`...)
		dst = translate.AppendString(dst, r.ToolChoice.Name)
		dst = append(dst, `}}`...)
	default:
		dst = append(dst, `,"tool_choice":`...)
		dst = translate.AppendString(dst, r.ToolChoice.Mode)
	}
	if r.Temperature != nil {
		dst = append(dst, `,"temperature":`...)
		dst = translate.AppendFloat(dst, *r.Temperature)
	}
	if r.TopP != nil {
		dst = append(dst, `,"top_p":`...)
		dst = translate.AppendFloat(dst, *r.TopP)
	}
	if len(r.Stop) > 0 {
		dst = append(dst, `,"stop":[`...)
		for i, s := range r.Stop {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = translate.AppendString(dst, s)
		}
		dst = append(dst, ']')
	}
	if r.ReasoningEffort != "" {
		dst = append(dst, `,"reasoning_effort":`...)
		dst = translate.AppendString(dst, r.ReasoningEffort)
	}
	if r.User != "" {
		dst = append(dst, `,"user":`...)
		dst = translate.AppendString(dst, r.User)
	}
	if r.ResponseFormat.Type == translate.FormatJSONSchema {
		dst = append(dst, `,"response_format":{"type":"json_schema","json_schema":{"name":`...)
		dst = translate.AppendString(dst, r.ResponseFormat.Name)
		dst = append(dst, `,"schema":`...)
		dst = append(dst, r.ResponseFormat.Schema...)
		dst = append(dst, `}}`...)
	}
	return append(dst, '}')
}
