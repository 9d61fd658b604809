package translate

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/agate-gateway/agate/internal/redact"
)

// Sentinel errors classify failures for the HTTP error funnel. Wrap them with %w.
var (
	// ErrBadRequest is a client request the gateway or the upstream cannot accept (400).
	ErrBadRequest = errors.New("invalid request")
	// ErrUpstream is a failure of the upstream provider.
	ErrUpstream = errors.New("upstream error")
)

// ParamError is a client request error that names the offending parameter, as OpenAI's
// error.param does. It matches ErrBadRequest under errors.Is.
type ParamError struct {
	// Param is the offending field as a path, for example "messages[2].content[0].type".
	Param string
	// Message says what is wrong, for a human.
	Message string
	// Code is an optional machine-readable code such as "unsupported_parameter".
	Code string
}

// Errorf returns a ParamError for param with a formatted message.
//
//go:noinline
func Errorf(param, format string, args ...any) *ParamError {
	return &ParamError{Param: param, Message: fmt.Sprintf(format, args...)}
}

// Unsupported returns the error for a parameter an upstream cannot honour.
func Unsupported(param, provider string) *ParamError {
	return &ParamError{
		Param:   param,
		Message: fmt.Sprintf("%s is not supported by the %s backend (set drop_unsupported_params to drop it)", param, provider),
		Code:    "unsupported_parameter",
	}
}

func (e *ParamError) Error() string {
	if e.Param == "" {
		return e.Message
	}
	return e.Param + ": " + e.Message
}

// Is reports whether target is ErrBadRequest.
func (e *ParamError) Is(target error) bool { return target == ErrBadRequest }

// UpstreamError is an error reported by an upstream provider, already mapped to the
// status and OpenAI error fields the client should see. It matches ErrUpstream.
type UpstreamError struct {
	// Status is the HTTP status to return to the client (for example 529 becomes 503).
	Status int
	// Type is the OpenAI error type, such as invalid_request_error or rate_limit_error.
	Type string
	// Code is the OpenAI error code, if any.
	Code string
	// Param names the offending parameter, if the upstream said.
	Param string
	// Message is the upstream's own message, as the upstream wrote it: the proxy masks
	// credential-like tokens in it (internal/redact) before a client or a log sees it.
	Message string
	// RetryAfter is how long the upstream asked to wait; zero if it did not say.
	RetryAfter time.Duration
	// Retryable reports whether the same request may succeed on another attempt.
	Retryable bool
	// Cause is the gateway's own account of a failure that got no answer from the
	// upstream (no HTTP status): its class and the transport's message, such as
	// "connection refused: dial tcp 10.0.0.7:443: connect: connection refused". It is
	// for the operator's log (Error), never for the client, whose Message names the
	// class only. Empty for an upstream's own error answer.
	Cause string
}

// Error is the text for logs; credential-like tokens in Message and Cause are masked.
func (e *UpstreamError) Error() string {
	s := "upstream " + strconv.Itoa(e.Status) + " " + e.Type + ": " + redact.Mask(e.Message)
	if e.Cause != "" {
		s += " (cause: " + redact.Mask(e.Cause) + ")"
	}
	return s
}

// Is reports whether target is ErrUpstream.
func (e *UpstreamError) Is(target error) bool { return target == ErrUpstream }

// ErrorType returns the OpenAI error type for an HTTP status.
func ErrorType(status int) string {
	switch {
	case status == 400 || status == 404 || status == 413 || status == 422:
		return "invalid_request_error"
	case status == 401:
		return "authentication_error"
	case status == 403:
		return "permission_error"
	case status == 429:
		return "rate_limit_error"
	case status >= 500, status == 424: // 424: Bedrock's ModelErrorException and ModelStreamErrorException, the model failed
		return "api_error"
	default:
		return "invalid_request_error"
	}
}

// RetryableStatus reports whether an upstream HTTP status is worth retrying.
func RetryableStatus(status int) bool {
	return status == 408 || status == 409 || status == 429 || status >= 500
}

// ParamIndex names element i of the array parameter base as error params do: messages[3].
//
//go:noinline
func ParamIndex(base string, i int) string { return base + "[" + strconv.Itoa(i) + "]" }

// Codes of the ParamErrors every client dialect's parser gives for a body that is not
// UTF-8 and for ambiguous member names (a name given twice, a known field in another case).
const (
	CodeInvalidUTF8  = "invalid_utf8"
	CodeDuplicateKey = "duplicate_key"
	CodeKeyCase      = "key_case_mismatch"
)
