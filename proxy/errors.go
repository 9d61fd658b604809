package proxy

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/valyala/fasthttp"

	"github.com/agate-gateway/agate/internal/redact"
	"github.com/agate-gateway/agate/translate"
	"github.com/agate-gateway/agate/translate/messagesin"
	"github.com/agate-gateway/agate/translate/openaichat"
	"github.com/agate-gateway/agate/upstream"
)

// Sentinel errors of the gateway itself; translate.ErrBadRequest and translate.ErrUpstream
// cover request and upstream failures.
var (
	ErrUnauthorized     = errors.New("unauthorized")
	ErrForbidden        = errors.New("forbidden")
	ErrModelNotFound    = errors.New("model not found")
	ErrNotFound         = errors.New("not found")
	ErrMethodNotAllowed = errors.New("method not allowed")
	ErrTooLarge         = errors.New("request too large")
	ErrUnavailable      = errors.New("unavailable")
)

// apiError is the rendered form of any error: status plus OpenAI error fields.
type apiError struct {
	Status     int
	Message    string
	Type       string
	Param      string
	Code       string
	RetryAfter int // seconds; 0 when none
}

// classify maps err to what the client sees. Unknown errors become a 500 that names the
// request id; their detail stays in the log.
func classify(err error, requestID string) apiError {
	var le *limitError // a 429 already shaped as OpenAI's
	if errors.As(err, &le) {
		return le.a
	}
	var pe *translate.ParamError
	if errors.As(err, &pe) {
		return apiError{Status: 400, Message: pe.Error(), Type: "invalid_request_error", Param: pe.Param, Code: pe.Code}
	}
	var ue *translate.UpstreamError
	if errors.As(err, &ue) {
		// Upstreams quote keys back in their messages; none may reach the client.
		a := apiError{Status: ue.Status, Message: redact.Mask(ue.Message), Type: ue.Type, Param: redact.Mask(ue.Param), Code: redact.Mask(ue.Code)}
		if a.Status < 400 || a.Status > 599 {
			a.Status = http.StatusBadGateway
		}
		if a.Type == "" {
			a.Type = translate.ErrorType(a.Status)
		}
		if ue.RetryAfter > 0 {
			a.RetryAfter = int((ue.RetryAfter + 999_999_999) / 1_000_000_000)
		}
		return a
	}
	var me *messageError
	msg := ""
	if errors.As(err, &me) {
		msg = me.msg
	}
	switch {
	case errors.Is(err, ErrUnauthorized):
		return apiError{Status: 401, Message: orDefault(msg, "invalid or missing API key: send Authorization: Bearer <key>"), Type: "invalid_request_error", Code: "invalid_api_key"}
	case errors.Is(err, ErrForbidden):
		return apiError{Status: 403, Message: orDefault(msg, "this key may not do this"), Type: "permission_error", Code: "permission_denied"}
	case errors.Is(err, ErrModelNotFound):
		return apiError{Status: 404, Message: orDefault(msg, "model not found"), Type: "invalid_request_error", Param: "model", Code: "model_not_found"}
	case errors.Is(err, ErrNotFound):
		return apiError{Status: 404, Message: orDefault(msg, "no such route"), Type: "invalid_request_error", Code: "not_found"}
	case errors.Is(err, ErrMethodNotAllowed):
		return apiError{Status: 405, Message: orDefault(msg, "method not allowed"), Type: "invalid_request_error", Code: "method_not_allowed"}
	case errors.Is(err, ErrTooLarge):
		return apiError{Status: 413, Message: orDefault(msg, "request body too large"), Type: "invalid_request_error", Code: "request_too_large"}
	case errors.Is(err, ErrUnavailable):
		return apiError{Status: 503, Message: orDefault(msg, "service unavailable"), Type: "api_error", Code: "unavailable"}
	case errors.Is(err, translate.ErrUpstream):
		return apiError{Status: 502, Message: "upstream error", Type: "api_error"}
	}
	return apiError{Status: 500, Message: "internal error (request id " + requestID + ")", Type: "api_error", Code: "internal_error"}
}

// messageError attaches a client-facing message to a sentinel.
type messageError struct {
	sentinel error
	msg      string
}

func (e *messageError) Error() string { return e.msg }
func (e *messageError) Unwrap() error { return e.sentinel }

// errorf returns sentinel with a client-facing message.
func errorf(sentinel error, format string, args ...any) error {
	return &messageError{sentinel: sentinel, msg: fmt.Sprintf(format, args...)}
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// writeError renders err as a JSON OpenAI error response, or in Anthropic's shape on the
// Messages API's paths.
func writeError(ctx *fasthttp.RequestCtx, a apiError) {
	ctx.Response.ResetBody()
	setErrorHeaders(ctx, a)
	if isMessagesPath(ctx.Path()) {
		ctx.SetBody(messagesin.AppendError(nil, a.Status, a.Message, string(ctx.Response.Header.Peek("X-Request-Id"))))
		return
	}
	ctx.SetBody(openaichat.AppendError(nil, a.Message, a.Type, a.Param, a.Code))
}

// setErrorHeaders sets the status and headers of the JSON error response for a: the one
// place that writes Retry-After.
func setErrorHeaders(ctx *fasthttp.RequestCtx, a apiError) {
	ctx.SetStatusCode(a.Status)
	ctx.SetContentType("application/json")
	if a.RetryAfter > 0 {
		ctx.Response.Header.Set("Retry-After", strconv.Itoa(a.RetryAfter))
	}
}

// logError is err as a log line shows it, cut to maxLoggedMessage. An upstream's 4xx
// error message may quote the request (a 400 naming the offending prompt text), so it is
// left out unless messages (log.upstream_error_messages) is set: the line keeps the
// status, type, code and param. Other errors (5xx and the gateway's own) keep their
// masked text.
func logError(err error, messages bool) string {
	ue := upstream.AsError(err)
	if ue == nil || messages || ue.Status < 400 || ue.Status > 499 {
		return clip(err.Error(), maxLoggedMessage)
	}
	var b strings.Builder
	b.WriteString("upstream ")
	b.WriteString(strconv.Itoa(ue.Status))
	if ue.Type != "" {
		b.WriteString(" ")
		b.WriteString(clip(ue.Type, maxLoggedString))
	}
	if ue.Code != "" {
		b.WriteString(" code=")
		b.WriteString(clip(redact.Mask(ue.Code), maxLoggedString))
	}
	if ue.Param != "" {
		b.WriteString(" param=")
		b.WriteString(clip(redact.Mask(ue.Param), maxLoggedString))
	}
	b.WriteString(" (message not logged; see log.upstream_error_messages)")
	return b.String()
}
