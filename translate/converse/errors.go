package converse

import (
	"strconv"
	"strings"

	"github.com/agate-gateway/agate/internal/jsonx"
	"github.com/agate-gateway/agate/translate"
)

// DecodeError maps a Bedrock runtime error answer, {"message":"..."} with the exception's
// HTTP status (ValidationException 400, AccessDeniedException 403,
// ResourceNotFoundException 404, ModelTimeoutException 408, ModelErrorException 424,
// ThrottlingException 429, InternalServerException 500, ServiceUnavailableException 503),
// to the client's error, keeping Bedrock's message, which names the offending field of a
// ValidationException (messages.1...). 429 and 5xx are retryable; a 403 is reported as a
// 401 (the gateway's credential was refused: the proxy turns it into its 502
// upstream_auth_failed).
func DecodeError(status int, body []byte) *translate.UpstreamError {
	client := status
	if status == 403 {
		client = 401
	}
	e := &translate.UpstreamError{Status: client, Type: translate.ErrorType(client), Retryable: translate.RetryableStatus(status)}
	switch status {
	case 400:
		e.Code = "validation_error"
	case 404:
		e.Code = "model_not_found"
	case 429:
		e.Code = "rate_limit_exceeded"
	}
	sc := jsonx.NewScanner(jsonx.View(body))
	if root, ok := sc.Root(); ok {
		if msg := sc.Get(root, "message"); msg.Kind == jsonx.String {
			e.Message = strings.Clone(msg.Str)
			return e
		}
		if msg := sc.Get(root, "Message"); msg.Kind == jsonx.String {
			e.Message = strings.Clone(msg.Str)
			return e
		}
	}
	e.Message = "bedrock returned HTTP " + strconv.Itoa(status) + snippet(body)
	return e
}

// ContextExceeded reports whether e, an error DecodeError returned, is Bedrock's refusal
// of a prompt over the model's context window: a ValidationException whose message is the
// model's, as recorded (testdata/*.pydantic-ai.txtar) from Claude ("Input is too long for
// requested model.") and Nova ("Input Tokens Exceeded: Number of input tokens exceeds
// maximum length. ..."), both after "The model returned the following errors: ".
func ContextExceeded(e *translate.UpstreamError) bool {
	return e.Status == 400 && (strings.Contains(e.Message, "Input is too long for requested model") ||
		strings.Contains(e.Message, "Input Tokens Exceeded"))
}

// ContextExceeded is the translate.ContextLimit of the Converse dialect.
func (provider) ContextExceeded(e *translate.UpstreamError) bool { return ContextExceeded(e) }

// snippet returns ": " and the first 200 bytes of body, quoted, for an error message.
func snippet(body []byte) string {
	if len(body) == 0 {
		return " with an empty body"
	}
	return ": " + strconv.Quote(clip(string(body), 200))
}

// malformed is the 502 of an answer the decoders cannot read.
func malformed(what string, data []byte) *translate.UpstreamError {
	msg := "decoding bedrock answer: " + what
	if data != nil {
		msg += snippet(data)
	}
	return &translate.UpstreamError{Status: 502, Type: "api_error", Message: msg}
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}
