package upstream

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/agate-gateway/agate/translate"
)

// Fault is the 502 for an upstream that misbehaved: what names the fault after "the
// upstream of backend <backend>". It is not retried.
func Fault(backend, what string) *translate.UpstreamError {
	return &translate.UpstreamError{Status: http.StatusBadGateway, Type: "api_error", Message: "the upstream of backend " + backend + " " + what}
}

// transportError wraps a connection-level failure as a retryable 502 (a timeoutError 504
// on timeout, 503 with Retry-After when the pool had no free connection within
// Timeouts.PoolWait). Its Message names the failure's class for the client ("could not
// reach the upstream of backend b: connection refused"); its Cause adds the transport's
// own message for the log (cause).
func transportError(backend string, err error) error {
	if errors.Is(err, fasthttp.ErrNoFreeConns) {
		return &translate.UpstreamError{Status: 503, Type: "api_error", Code: "upstream_busy", Retryable: true, RetryAfter: time.Second,
			Message: "every connection to the upstream of backend " + backend + " is busy (max_conns); retry later", Cause: cause(err)}
	}
	c := cause(err)
	class, _, _ := strings.Cut(c, ": ")
	var ne net.Error
	if errors.Is(err, fasthttp.ErrTimeout) || errors.Is(err, fasthttp.ErrDialTimeout) || (errors.As(err, &ne) && ne.Timeout()) {
		return timeoutError{&translate.UpstreamError{Status: 504, Type: "api_error", Message: "the upstream of backend " + backend + " timed out (" + class + ")", Retryable: true, Cause: c}}
	}
	return &translate.UpstreamError{Status: 502, Type: "api_error", Message: "could not reach the upstream of backend " + backend + ": " + class, Retryable: true, Cause: c}
}

// cause names a transport failure's class, then its own message: "connection refused",
// "dns lookup failed", "tls handshake failed", "connection reset", "connection closed
// before an answer", "dial timed out", "timed out waiting for the response head", "no
// free connection" or "transport error".
func cause(err error) string {
	var dns *net.DNSError
	var rec tls.RecordHeaderError
	var alert tls.AlertError
	var unknownCA x509.UnknownAuthorityError
	var hostname x509.HostnameError
	var invalid x509.CertificateInvalidError
	class := "transport error"
	switch {
	case errors.Is(err, fasthttp.ErrNoFreeConns):
		class = "no free connection"
	case errors.Is(err, fasthttp.ErrDialTimeout):
		class = "dial timed out"
	case errors.Is(err, fasthttp.ErrTimeout):
		class = "timed out waiting for the response head"
	case errors.As(err, &dns):
		class = "dns lookup failed"
	case errors.Is(err, syscall.ECONNREFUSED):
		class = "connection refused"
	case errors.Is(err, syscall.ECONNRESET):
		class = "connection reset"
	case errors.As(err, &rec), errors.As(err, &alert), errors.As(err, &unknownCA), errors.As(err, &hostname), errors.As(err, &invalid),
		strings.Contains(err.Error(), "tls: "):
		class = "tls handshake failed"
	case errors.Is(err, fasthttp.ErrConnectionClosed), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		class = "connection closed before an answer"
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		class = "host unreachable"
	default:
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			class = "timed out"
		}
	}
	return class + ": " + err.Error()
}

// TimeoutFault is the 504 of an upstream that stayed silent past a bound its caller
// keeps (what names it after "the upstream of backend <backend>"): retryable, and
// TimedOut, as the timeouts of Client's own are.
func TimeoutFault(backend, what string) error {
	return timeoutError{&translate.UpstreamError{Status: 504, Type: "api_error", Message: "the upstream of backend " + backend + " " + what, Retryable: true}}
}

// timeoutError is the error of an upstream that said nothing within a timeout (the
// dial's, the response head's, or a stream's idle one): a retryable 504 *UpstreamError (errors.As
// finds it) that TimedOut tells from other failures.
type timeoutError struct{ *translate.UpstreamError }

func (e timeoutError) Unwrap() error { return e.UpstreamError }

// TimedOut reports whether err is an upstream's silence outliving a timeout (one of
// Timeouts, SendBy's deadline, or a TimeoutFault), as opposed to a reset or an error status:
// a caller may rather fall back than wait on the same upstream again.
func TimedOut(err error) bool {
	var t timeoutError
	return errors.As(err, &t)
}

// readError is the error of a failed read of an answer's body: ctx's when it ended (the
// client left), else a transportError.
func readError(ctx context.Context, backend string, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return transportError(backend, err)
}

// AsError returns err as an *UpstreamError, or nil; a nil err costs nothing.
func AsError(err error) *translate.UpstreamError {
	if err == nil {
		return nil
	}
	var ue *translate.UpstreamError
	if errors.As(err, &ue) {
		return ue
	}
	return nil
}

// Retryable reports whether err is an *UpstreamError that may be tried again.
func Retryable(err error) bool {
	var ue *translate.UpstreamError
	return errors.As(err, &ue) && ue.Retryable
}

// StatusLabel is the status of an attempt's result as a metric label: "200" for none,
// the upstream's status for its error answer, "0" for a failure that got no answer (a
// transport error or timeout: an UpstreamError with a Cause) and for any other error.
func StatusLabel(err error) string {
	if err == nil {
		return "200"
	}
	var ue *translate.UpstreamError
	if errors.As(err, &ue) && ue.Cause == "" {
		return strconv.Itoa(ue.Status)
	}
	return "0"
}

// parseRetryAfter reads a Retry-After value: seconds, or an HTTP date; 0 for none.
func parseRetryAfter(v []byte) time.Duration {
	if len(v) == 0 {
		return 0
	}
	if n, err := strconv.Atoi(strings.TrimSpace(string(v))); err == nil && n >= 0 {
		return time.Duration(n) * time.Second
	}
	if t, err := time.Parse(time.RFC1123, string(v)); err == nil {
		if d := time.Until(t); d > 0 {
			return d
		}
	}
	return 0
}
