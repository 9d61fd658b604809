package gemini

import (
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agate-gateway/agate/internal/jsonx"
	"github.com/agate-gateway/agate/translate"
)

// DecodeError maps a Google error body ({"error":{"code","message","status","details"}},
// possibly wrapped in a JSON array, possibly served as text/event-stream) to the error the
// client sees.
func (geminiProvider) DecodeError(status int, body []byte) *translate.UpstreamError {
	s := strings.TrimSpace(string(body))
	if strings.HasPrefix(s, "data:") {
		// An error framed as one SSE event.
		s = strings.TrimSpace(strings.TrimPrefix(strings.SplitN(s, "\n", 2)[0], "data:"))
	}
	sc := jsonx.NewScanner(s)
	if v, ok := sc.Root(); ok {
		if v.Kind == jsonx.Array {
			sc.Each(v, func(_ string, el jsonx.Value) bool {
				v = el
				return false
			})
		}
		if e := sc.Get(v, "error"); e.Kind == jsonx.Object {
			return geminiError(&sc, status, e)
		}
	}
	if status < 400 {
		status = 502
	}
	msg := "gemini returned HTTP " + strconv.Itoa(status)
	if sn := geminiSnippet(s); sn != "" {
		msg += ": " + sn
	}
	return &translate.UpstreamError{Status: status, Type: translate.ErrorType(status), Message: msg, Retryable: translate.RetryableStatus(status)}
}

// geminiError maps the error object e of a Google error body; status is the HTTP status,
// or 0 to take it from the body (an error inside a stream).
func geminiError(sc *jsonx.Scanner, status int, e jsonx.Value) *translate.UpstreamError {
	code := strings.Clone(sc.Get(e, "status").Str)
	if status == 0 {
		status = int(sc.Get(e, "code").Int())
		if status < 400 || status > 599 {
			status = geminiStatusCode(code)
		}
	}
	ue := &translate.UpstreamError{Status: status, Message: strings.Clone(sc.Get(e, "message").Str), Code: strings.ToLower(code)}
	sc.Each(sc.Get(e, "details"), func(_ string, d jsonx.Value) bool {
		switch sc.Get(d, "@type").Str {
		case "type.googleapis.com/google.rpc.ErrorInfo":
			if sc.Get(d, "reason").Str == "API_KEY_INVALID" {
				// Google answers a bad key with 400 INVALID_ARGUMENT; it is an
				// authentication failure.
				ue.Status, ue.Code = 401, "invalid_api_key"
			}
		case "type.googleapis.com/google.rpc.RetryInfo":
			if delay, err := time.ParseDuration(sc.Get(d, "retryDelay").Str); err == nil && delay > 0 {
				ue.RetryAfter = delay
			}
		}
		return true
	})
	if ue.Message == "" {
		ue.Message = "gemini returned HTTP " + strconv.Itoa(ue.Status)
		if code != "" {
			ue.Message += " " + code
		}
	}
	ue.Type = translate.ErrorType(ue.Status)
	ue.Retryable = translate.RetryableStatus(ue.Status)
	return ue
}

// geminiStatusCode maps a google.rpc.Code name to its HTTP status.
func geminiStatusCode(code string) int {
	switch code {
	case "INVALID_ARGUMENT", "FAILED_PRECONDITION", "OUT_OF_RANGE":
		return 400
	case "UNAUTHENTICATED":
		return 401
	case "PERMISSION_DENIED":
		return 403
	case "NOT_FOUND":
		return 404
	case "ALREADY_EXISTS", "ABORTED":
		return 409
	case "RESOURCE_EXHAUSTED":
		return 429
	case "UNIMPLEMENTED":
		return 501
	case "UNAVAILABLE":
		return 503
	case "DEADLINE_EXCEEDED":
		return 504
	}
	return 500
}

// geminiSnippet returns at most 200 bytes of s, cut on a rune boundary, for error messages.
func geminiSnippet(s string) string {
	const max = 200
	s = strings.TrimSpace(s)
	if len(s) <= max {
		return strings.ToValidUTF8(s, "\uFFFD")
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return strings.ToValidUTF8(s[:cut], "\uFFFD") + "..."
}

// ContextExceeded implements translate.ContextLimit: Gemini says it with a 400
// INVALID_ARGUMENT whose message says the input token count "exceeds the maximum number of
// tokens allowed" (recorded: testdata/fixtures/gemini/errors/), there being no reason code
// of its own.
func (geminiProvider) ContextExceeded(e *translate.UpstreamError) bool {
	return e.Status == 400 && e.Code == "invalid_argument" && strings.Contains(e.Message, "exceeds the maximum number of tokens")
}
