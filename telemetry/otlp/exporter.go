package otlp

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// maxResponse bounds what is read of a collector's answer.
const maxResponse = 64 << 10

// Exporter sends spans to an OTLP collector; it is an sdktrace.SpanExporter. Safe for
// concurrent use.
type Exporter struct {
	cfg     Config
	client  *http.Client
	stopped atomic.Bool
}

var _ sdktrace.SpanExporter = (*Exporter)(nil)

// New returns an exporter sending as cfg says. It connects on the first export.
func New(cfg Config) *Exporter {
	var protocols http.Protocols
	tr := &http.Transport{
		TLSClientConfig:     cfg.TLS,
		MaxIdleConnsPerHost: 2,
		IdleConnTimeout:     90 * time.Second,
		TLSHandshakeTimeout: cfg.Timeout,
	}
	if cfg.Protocol == GRPC {
		// gRPC is HTTP/2 only: with prior knowledge over cleartext, negotiated over TLS.
		protocols.SetHTTP2(true)
		protocols.SetUnencryptedHTTP2(true)
	} else {
		protocols.SetHTTP1(true)
		protocols.SetHTTP2(true)
		tr.Proxy = http.ProxyFromEnvironment
	}
	tr.Protocols = &protocols
	return &Exporter{cfg: cfg, client: &http.Client{Transport: tr}}
}

// ExportSpans sends spans as one request, trying it again on a retryable failure as
// cfg.Retry says, until ctx ends. A partial success (the collector rejected some spans)
// is an error saying how many and why. After Shutdown it is an error.
func (e *Exporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	if e.stopped.Load() {
		return errors.New("otlp: the exporter is shut down")
	}
	if len(spans) == 0 {
		return nil
	}
	body := AppendRequest(nil, spans)
	if e.cfg.Gzip {
		body = gzipped(body)
	}
	if e.cfg.Protocol == GRPC {
		frame := make([]byte, 5, 5+len(body))
		if e.cfg.Gzip {
			frame[0] = 1 // the message is compressed, with grpc-encoding
		}
		binary.BigEndian.PutUint32(frame[1:], uint32(len(body)))
		body = append(frame, body...)
	}
	return e.send(ctx, body)
}

// Shutdown stops the exporter: later exports fail, idle connections are closed. Spans
// are not buffered here, so there is nothing to flush.
func (e *Exporter) Shutdown(context.Context) error {
	e.stopped.Store(true)
	e.client.CloseIdleConnections()
	return nil
}

// send posts body, retrying as cfg.Retry says.
func (e *Exporter) send(ctx context.Context, body []byte) error {
	start := time.Now()
	wait := e.cfg.Retry.Initial
	for {
		var f failure
		if e.cfg.Protocol == GRPC {
			f = e.grpcAttempt(ctx, body)
		} else {
			f = e.httpAttempt(ctx, body)
		}
		if f.err == nil || !f.retryable {
			return f.err
		}
		pause := f.after
		if pause <= 0 {
			pause = wait/2 + rand.N(wait/2+1) // jitter: between half and all of the wait
			wait = min(2*wait, e.cfg.Retry.Max)
		}
		if time.Since(start)+pause > e.cfg.Retry.MaxElapsed {
			return f.err
		}
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%w (not retried: %w)", f.err, ctx.Err())
		case <-t.C:
		}
	}
}

// failure is the outcome of one attempt: err nil is success; retryable says another
// attempt may succeed, after says when the collector asked for it (0: not said).
type failure struct {
	err       error
	retryable bool
	after     time.Duration
}

// httpAttempt is one OTLP/HTTP POST.
func (e *Exporter) httpAttempt(ctx context.Context, body []byte) failure {
	resp, answer, err, f := e.post(ctx, "otlp http export", body, func(h http.Header) {
		h.Set("Content-Type", "application/x-protobuf")
		if e.cfg.Gzip {
			h.Set("Content-Encoding", "gzip")
		}
	})
	if resp == nil {
		return f
	}
	if err != nil && resp.StatusCode/100 == 2 {
		return failure{err: fmt.Errorf("otlp http export: reading the answer: %w", redactURL(err)), retryable: true}
	}
	switch resp.StatusCode {
	case http.StatusOK, http.StatusAccepted, http.StatusNoContent:
		if resp.Header.Get("Content-Encoding") == "gzip" {
			if answer, err = gunzipped(answer); err != nil {
				return failure{err: fmt.Errorf("otlp http export: the answer: %w", err)}
			}
		}
		return failure{err: partialSuccess("otlp http export", answer)}
	case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return failure{err: httpStatusError(resp.StatusCode, answer), retryable: true, after: retryAfter(resp.Header.Get("Retry-After"))}
	}
	return failure{err: httpStatusError(resp.StatusCode, answer)}
}

// grpcAttempt is one OTLP/gRPC Export call; body is its framed message.
func (e *Exporter) grpcAttempt(ctx context.Context, body []byte) failure {
	resp, answer, readErr, f := e.post(ctx, "otlp grpc export", body, func(h http.Header) {
		h.Set("Content-Type", "application/grpc")
		h.Set("Te", "trailers")
		h.Set("Grpc-Timeout", strconv.FormatInt(e.cfg.Timeout.Milliseconds(), 10)+"m")
		h.Set("Grpc-Accept-Encoding", "gzip")
		if e.cfg.Gzip {
			h.Set("Grpc-Encoding", "gzip")
		}
	})
	if resp == nil {
		return f
	}
	if resp.StatusCode != http.StatusOK {
		// No gRPC status: the code is the one gRPC derives from the HTTP status.
		code := grpcCodeOfHTTP(resp.StatusCode)
		return failure{err: fmt.Errorf("otlp grpc export: HTTP status %d (%s)", resp.StatusCode, grpcCodeName(code)),
			retryable: grpcRetryable(code)}
	}
	status := resp.Trailer.Get("Grpc-Status")
	message := resp.Trailer.Get("Grpc-Message")
	if status == "" { // a trailers-only answer
		status, message = resp.Header.Get("Grpc-Status"), resp.Header.Get("Grpc-Message")
	}
	if readErr != nil && status == "" {
		return failure{err: fmt.Errorf("otlp grpc export: reading the answer: %w", redactURL(readErr)), retryable: true}
	}
	code, err := strconv.Atoi(status)
	if err != nil {
		return failure{err: fmt.Errorf("otlp grpc export: the answer has no grpc-status")}
	}
	if code != 0 {
		if m, err := url.PathUnescape(message); err == nil {
			message = m
		}
		return failure{err: fmt.Errorf("otlp grpc export: %s: %s", grpcCodeName(code), bounded(message)), retryable: grpcRetryable(code)}
	}
	msg, err := grpcMessage(answer, resp.Header.Get("Grpc-Encoding"))
	if err != nil {
		return failure{err: fmt.Errorf("otlp grpc export: the answer: %w", err)}
	}
	return failure{err: partialSuccess("otlp grpc export", msg)}
}

// post sends body to the configured URL with the headers protocol sets, then the
// configured ones, within cfg.Timeout, and reads the answer: the response, whose body it
// has closed, the body's first maxResponse bytes and the error reading them. Without a
// response it returns the failure (a transport error is retryable); what names the
// export in errors.
func (e *Exporter) post(ctx context.Context, what string, body []byte, protocol func(http.Header)) (resp *http.Response, answer []byte, readErr error, f failure) {
	ctx, cancel := context.WithTimeout(ctx, e.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.cfg.URL, bytes.NewReader(body))
	if err != nil {
		return nil, nil, nil, failure{err: fmt.Errorf("%s: %w", what, redactURL(err))}
	}
	protocol(req.Header)
	req.Header.Set("User-Agent", "agate-otlp-exporter")
	for _, h := range e.cfg.Headers {
		req.Header.Set(h.Name, h.Value)
	}
	resp, err = e.client.Do(req)
	if err != nil {
		return nil, nil, nil, failure{err: fmt.Errorf("%s: %w", what, redactURL(err)), retryable: true}
	}
	defer resp.Body.Close()
	answer, readErr = io.ReadAll(io.LimitReader(resp.Body, maxResponse))
	return resp, answer, readErr, failure{}
}

// grpcMessage returns the message of a gRPC answer's body: one length-prefixed frame,
// compressed when its flag says so (with the answer's grpc-encoding). An empty body is
// an empty message.
func grpcMessage(body []byte, encoding string) ([]byte, error) {
	if len(body) == 0 {
		return nil, nil
	}
	if len(body) < 5 {
		return nil, errors.New("a frame shorter than its header")
	}
	n := binary.BigEndian.Uint32(body[1:5])
	if uint64(n) != uint64(len(body)-5) {
		return nil, fmt.Errorf("a frame of %d bytes saying %d", len(body)-5, n)
	}
	msg := body[5:]
	switch body[0] {
	case 0:
		return msg, nil
	case 1:
		if encoding != "gzip" {
			return nil, fmt.Errorf("a compressed frame in encoding %q", bounded(encoding))
		}
		return gunzipped(msg)
	}
	return nil, fmt.Errorf("a frame flag %d", body[0])
}

// partialSuccess reads an ExportTraceServiceResponse: nil unless the collector says it
// rejected spans (or warns with a message), then an error with the count and message.
func partialSuccess(what string, msg []byte) error {
	rejected, message, err := ParseResponse(msg)
	if err != nil {
		return fmt.Errorf("%s: the answer: %w", what, err)
	}
	if rejected == 0 && message == "" {
		return nil
	}
	return fmt.Errorf("%s: the collector rejected %d spans: %s", what, rejected, bounded(message))
}

// httpStatusError describes a refused OTLP/HTTP export: the status, and the message of
// the google.rpc.Status the collector may have answered with.
func httpStatusError(status int, body []byte) error {
	if m := rpcStatusMessage(body); m != "" {
		return fmt.Errorf("otlp http export: status %d: %s", status, bounded(m))
	}
	return fmt.Errorf("otlp http export: status %d", status)
}

// retryAfter reads a Retry-After header given in seconds (0 when absent or a date).
func retryAfter(v string) time.Duration {
	s, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || s < 0 {
		return 0
	}
	return time.Duration(s) * time.Second
}

// grpcRetryable reports whether the OTLP specification retries a gRPC status code:
// CANCELLED, DEADLINE_EXCEEDED, ABORTED, OUT_OF_RANGE, UNAVAILABLE, DATA_LOSS.
func grpcRetryable(code int) bool {
	switch code {
	case 1, 4, 10, 11, 14, 15:
		return true
	}
	return false
}

// grpcCodeOfHTTP maps an HTTP status without a gRPC status to the gRPC code, as gRPC's
// HTTP/2 protocol document does.
func grpcCodeOfHTTP(status int) int {
	switch status {
	case http.StatusBadRequest:
		return 13 // INTERNAL
	case http.StatusUnauthorized:
		return 16 // UNAUTHENTICATED
	case http.StatusForbidden:
		return 7 // PERMISSION_DENIED
	case http.StatusNotFound:
		return 12 // UNIMPLEMENTED
	case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return 14 // UNAVAILABLE
	}
	return 2 // UNKNOWN
}

// grpcCodeName names a gRPC status code.
func grpcCodeName(code int) string {
	names := [...]string{"OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED",
		"NOT_FOUND", "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED",
		"FAILED_PRECONDITION", "ABORTED", "OUT_OF_RANGE", "UNIMPLEMENTED", "INTERNAL",
		"UNAVAILABLE", "DATA_LOSS", "UNAUTHENTICATED"}
	if code >= 0 && code < len(names) {
		return names[code]
	}
	return "code " + strconv.Itoa(code)
}

// bounded keeps a collector's message to 256 bytes of printable ASCII for an error text.
func bounded(s string) string {
	if len(s) > 256 {
		s = s[:256]
	}
	return strings.Map(func(r rune) rune {
		if r < ' ' || r > '~' {
			return '?'
		}
		return r
	}, s)
}

// redactURL drops the URL from a net/http client error: the endpoint is configuration
// and may carry credentials in its query.
func redactURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return fmt.Errorf("%s: %w", strings.ToLower(ue.Op), ue.Err)
	}
	return err
}

func gzipped(b []byte) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(b) // a bytes.Buffer does not fail
	zw.Close()
	return buf.Bytes()
}

func gunzipped(b []byte) ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	out, err := io.ReadAll(io.LimitReader(zr, maxResponse))
	if err != nil {
		return nil, err
	}
	return out, nil
}
