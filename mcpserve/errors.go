package mcpserve

import (
	"net/http"
	"strings"
)

// rpcErrors turns the SDK's plain-text refusals (http.Error: an unknown method, a body
// that is no JSON-RPC message, a session not found) into JSON-RPC error answers with the
// same status, so that every refusal a client gets is one it can parse. Other answers
// pass through untouched, streamed as the SDK flushes them.
type rpcErrors struct {
	http.ResponseWriter
	status  int
	msg     []byte
	convert bool
}

// maxErrorText bounds the refusal text kept.
const maxErrorText = 1024

func (w *rpcErrors) WriteHeader(code int) {
	if code >= 400 && strings.HasPrefix(w.Header().Get("Content-Type"), "text/plain") {
		w.convert, w.status = true, code
		return
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *rpcErrors) Write(p []byte) (int, error) {
	if w.convert {
		w.msg = append(w.msg, p[:min(len(p), maxErrorText-len(w.msg))]...)
		return len(p), nil
	}
	return w.ResponseWriter.Write(p)
}

// Flush flushes what the SDK streams; a refusal is written whole by finish.
func (w *rpcErrors) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok && !w.convert {
		f.Flush()
	}
}

// Unwrap serves http.ResponseController.
func (w *rpcErrors) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// finish writes the converted refusal, if there is one.
func (w *rpcErrors) finish() {
	if !w.convert {
		return
	}
	msg := strings.TrimSpace(string(w.msg))
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Del("X-Content-Type-Options")
	h.Del("Content-Length")
	w.ResponseWriter.WriteHeader(w.status)
	_, _ = w.ResponseWriter.Write(ErrorBody(rpcCode(w.status, msg), msg))
}

// rpcCode is the JSON-RPC error code of a refusal: the standard codes where the SDK's
// status and text say which, else the endpoint's own.
func rpcCode(status int, msg string) int64 {
	switch {
	case status == http.StatusRequestEntityTooLarge:
		return CodeTooLarge
	case status == http.StatusUnauthorized:
		return CodeUnauthorized
	case status == http.StatusForbidden || status == http.StatusNotFound:
		return codeSession
	case strings.Contains(msg, "not handled") || strings.Contains(msg, "unsupported") && strings.Contains(msg, "JSON RPC"):
		return -32601 // method not found
	case strings.Contains(msg, "parse") || strings.Contains(msg, "unmarshal") || strings.Contains(msg, "invalid character"):
		return -32700 // parse error
	}
	return -32600 // invalid request
}
