package messagesin

import "github.com/agate-gateway/agate/translate"

// Estimate weights: a token per bytesPerToken bytes of text, plus fixed costs.
const (
	bytesPerToken     = 4
	tokensPerMessage  = 4
	tokensPerMedia    = 1000 // an image or a file, whatever its size
	tokensPerToolCall = 8
)

// EstimateTokens returns the documented estimate of req's input tokens, for backends with
// no token counter of their own: one token per 4 bytes of every text the model reads
// (system and message text, thinking, tool call names and arguments, tool results, tool
// names, descriptions and schemas), rounded up, plus 4 per message, 8 per tool call and
// 1,000 per image or file. It overestimates English prose a little and is meant for
// context-window bookkeeping, not billing.
func EstimateTokens(req *translate.Request) int {
	bytes, fixed := 0, 0
	for i := range req.Messages {
		m := &req.Messages[i]
		fixed += tokensPerMessage
		for _, p := range m.Content {
			switch p.Type {
			case translate.PartImage, translate.PartFile, translate.PartAudio:
				fixed += tokensPerMedia
			default:
				bytes += len(p.Text)
			}
		}
		bytes += len(m.Reasoning)
		for _, tc := range m.ToolCalls {
			fixed += tokensPerToolCall
			bytes += len(tc.Name) + len(tc.Arguments)
		}
	}
	for _, t := range req.Tools {
		bytes += len(t.Name) + len(t.Description) + len(t.Parameters)
	}
	return fixed + (bytes+bytesPerToken-1)/bytesPerToken
}

// EstimateOutputTokens returns the estimate of the tokens of n bytes of output (text,
// reasoning, tool call names and arguments, as the upstream's JSON wrote them), with
// EstimateTokens' weight: one token per 4 bytes, rounded up. The gateway charges it for
// output an upstream sent without reporting its usage (a stream that ended early, an
// upstream that reports none).
func EstimateOutputTokens(n int) int {
	return (n + bytesPerToken - 1) / bytesPerToken
}
