package proxy

import "strings"

// chatParams are the top-level fields of an OpenAI chat completions request (from the
// CreateChatCompletionRequest schema of the OpenAI API spec).
var chatParams = map[string]bool{
	"audio": true, "frequency_penalty": true, "function_call": true, "functions": true, "logit_bias": true,
	"logprobs": true, "max_completion_tokens": true, "max_tokens": true, "messages": true, "metadata": true,
	"modalities": true, "model": true, "moderation": true, "n": true, "parallel_tool_calls": true,
	"prediction": true, "presence_penalty": true, "prompt_cache_key": true, "prompt_cache_options": true,
	"prompt_cache_retention": true, "reasoning_effort": true, "response_format": true, "safety_identifier": true,
	"seed": true, "service_tier": true, "stop": true, "store": true, "stream": true, "stream_options": true,
	"temperature": true, "tool_choice": true, "tools": true, "top_logprobs": true, "top_p": true, "user": true,
	"verbosity": true, "web_search_options": true,
}

// paramLabel is the bounded metric label of a request parameter path such as
// "messages[3].content[1].type": indices are folded ("messages[].content[].type") and a
// top-level name that is not an OpenAI chat parameter (a client may send any) is "other".
func paramLabel(param string) string {
	head := param
	if i := strings.IndexAny(head, ".["); i >= 0 {
		head = head[:i]
	}
	if !chatParams[head] {
		return "other"
	}
	if !strings.Contains(param, "[") {
		return param
	}
	var b strings.Builder
	for i := 0; i < len(param); i++ {
		b.WriteByte(param[i])
		if param[i] == '[' {
			for i+1 < len(param) && param[i+1] >= '0' && param[i+1] <= '9' {
				i++
			}
		}
	}
	return clip(b.String(), maxLoggedString)
}

// The api label of the request metrics: which OpenAI API the request used.
const (
	apiChat      = "chat"
	apiResponses = "responses"
	apiMessages  = "messages"
)

// apiLabel is the api label of a request to path: chat, responses or messages, "" for
// any other route.
func apiLabel(path []byte) string {
	switch string(path) {
	case "/v1/chat/completions", "/chat/completions":
		return apiChat
	case "/v1/responses", "/responses":
		return apiResponses
	case messagesPath, countTokensPath:
		return apiMessages
	case embeddingsPath, embeddingsPathV0:
		return apiEmbeddings
	}
	if strings.HasPrefix(string(path), responsesPathPrefix) {
		return apiResponses
	}
	return ""
}

// Paths of the Messages API.
const (
	messagesPath    = "/v1/messages"
	countTokensPath = "/v1/messages/count_tokens"
)

// isMessagesPath reports whether path is one of the Messages API's, whose errors take
// Anthropic's shape.
func isMessagesPath(path []byte) bool {
	return string(path) == messagesPath || string(path) == countTokensPath
}

// responsesPathPrefix is the path of a stored response, followed by its id.
const responsesPathPrefix = "/v1/responses/"
