package proxy

import (
	"bytes"
	"compress/gzip"
	"compress/zlib"
	"context"
	"errors"
	"github.com/agate-gateway/agate/translate/openai"
	"io"
	"net/http"
	"strconv"
	"strings"
	"unsafe"

	"github.com/agate-gateway/agate/translate"
	"github.com/tidwall/gjson"
)

// The OpenAI passthrough forwards upstream chunks and completions nearly as they are, but
// only after reading them as JSON: what the client gets keeps the guarantees of the
// translated backends (the chunk contract in ARCHITECTURE.md), whatever an OpenAI-compatible server sends.

// passthroughChunks normalizes the chunks of one passthrough stream. Every chunk leaves with
// the same id, created and model and object "chat.completion.chunk": the id and created of
// the first chunk that has them (OpenAI's own), else the gateway's, so that a leading chunk
// without them (Azure's prompt_filter_results chunk: id "", created 0, object "") cannot
// break the stream's identity. Not safe for concurrent use.
type passthroughChunks struct {
	backend string
	// model is the client-facing model as a JSON string.
	model []byte
	// fallbackID is the gateway's response id, used when the first chunk has none.
	fallbackID   string
	includeUsage bool
	// head is `"id":…,"object":…,"created":…,"model":…`, fixed by the first chunk.
	head []byte
}

// chunk is what the gateway reads of an upstream chunk.
type chunk struct {
	usage    string // the raw usage object, "" if none
	choices  int    // number of choices
	finished bool   // some choice has a finish_reason
	isError  bool   // an error object instead of a chunk
}

// appendChunk appends the upstream chunk data, normalized, as an SSE event for the client
// to dst, and reports what it read of it. A payload that is not a JSON object is an
// upstream error. The caller decides whether to send the event (it drops a usage-only chunk
// the client did not ask for). One pass over data; nothing of it is retained.
func (p *passthroughChunks) appendChunk(dst, data []byte, now func() int64) ([]byte, chunk, error) {
	var ch chunk
	// data lives until the caller returns, and every string read from it is copied into
	// dst or converted before then.
	s := unsafe.String(unsafe.SliceData(data), len(data))
	if !gjson.Valid(s) {
		return dst, ch, notJSON(p.backend, "sent a stream event that is not JSON", data)
	}
	root := gjson.Parse(s)
	if !root.IsObject() {
		return dst, ch, notJSON(p.backend, "sent a stream event that is not a JSON object", data)
	}
	if p.head == nil {
		p.setHead(root, now)
	}
	dst = append(dst, "data: {"...)
	dst = append(dst, p.head...)
	root.ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "id", "object", "created", "model":
			return true
		case "error":
			ch.isError = true
		case "choices":
			v.ForEach(func(_, c gjson.Result) bool {
				ch.choices++
				if f := c.Get("finish_reason"); f.Type == gjson.String && f.Str != "" {
					ch.finished = true
				}
				return true
			})
		case "usage":
			if v.IsObject() {
				ch.usage = v.Raw
			}
			if !p.includeUsage {
				return true // asked for by the gateway, not by the client
			}
		}
		dst = append(dst, ',')
		dst = append(dst, k.Raw...)
		dst = append(dst, ':')
		dst = append(dst, v.Raw...)
		return true
	})
	return append(dst, "}\n\n"...), ch, nil
}

// setHead fixes the stream's id, created and model from its first chunk.
func (p *passthroughChunks) setHead(root gjson.Result, now func() int64) {
	idStr := p.fallbackID
	if id := root.Get("id"); id.Type == gjson.String && id.Str != "" {
		idStr = id.Str
	}
	created := root.Get("created")
	n := created.Int()
	if created.Type != gjson.Number || n <= 0 {
		n = now()
	}
	p.head = append(p.head, `"id":`...)
	p.head = translate.AppendString(p.head, idStr)
	p.head = append(p.head, `,"object":"chat.completion.chunk","created":`...)
	p.head = strconv.AppendInt(p.head, n, 10)
	p.head = append(p.head, `,"model":`...)
	p.head = append(p.head, p.model...)
}

// completionBody checks that body, a 200 answer of a passthrough upstream, is a JSON chat
// completion, and returns it with the client-facing model (a JSON string) and the usage it
// reports.
func completionBody(backend string, provider translate.Provider, body, model []byte) ([]byte, translate.Usage, error) {
	if !gjson.ValidBytes(body) {
		return nil, translate.Usage{}, notJSON(backend, "answered with a body that is not JSON", body)
	}
	root := gjson.ParseBytes(body)
	if !root.IsObject() {
		return nil, translate.Usage{}, notJSON(backend, "answered with a body that is not a JSON object", body)
	}
	if e := root.Get("error"); e.Exists() {
		return nil, translate.Usage{}, provider.DecodeError(http.StatusBadGateway, body)
	}
	if !root.Get("choices").IsArray() {
		return nil, translate.Usage{}, notJSON(backend, "answered with a JSON object that is not a chat completion (no choices)", nil)
	}
	var u translate.Usage
	if raw := root.Get("usage"); raw.IsObject() {
		u, _ = openai.ParseUsage([]byte(raw.Raw))
	}
	out := make([]byte, 0, len(body)+len(model)+16)
	out = append(out, `{"model":`...)
	out = append(out, model...)
	root.ForEach(func(k, v gjson.Result) bool {
		if k.Str != "model" {
			out = append(out, ',')
			out = append(out, k.Raw...)
			out = append(out, ':')
			out = append(out, v.Raw...)
		}
		return true
	})
	return append(out, '}'), u, nil
}

// notJSON is the 502 for an upstream answer the passthrough cannot read; what names the
// fault after "the upstream of backend X". The message quotes at most 64 bytes of data.
func notJSON(backend, what string, data []byte) *translate.UpstreamError {
	msg := "the upstream of backend " + backend + " " + what
	if len(data) > 0 {
		b := data
		if len(b) > 64 {
			b = b[:64]
		}
		msg += ": " + strconv.Quote(string(b))
	}
	return &translate.UpstreamError{Status: http.StatusBadGateway, Type: "api_error", Message: msg}
}

// maxResponseBytes bounds a non-streamed upstream body, decoded.
const maxResponseBytes = 64 << 20

// decodedBody returns the response body of x decoded: the gateway asks upstreams for identity
// encoding, but one that answers gzip or deflate anyway is decoded as it is read. Any other
// encoding is a 502.
func decodedBody(x *exchange, backend string) (io.Reader, error) {
	var r io.Reader = x.resp.BodyStream()
	if r == nil {
		r = bytes.NewReader(x.resp.Body())
	}
	switch enc := strings.ToLower(strings.TrimSpace(string(x.resp.Header.ContentEncoding()))); enc {
	case "", "identity":
		return r, nil
	case "gzip", "x-gzip":
		zr, err := gzip.NewReader(r)
		if err != nil {
			return nil, encodingError(backend, enc, err)
		}
		return zr, nil
	case "deflate":
		zr, err := zlib.NewReader(r)
		if err != nil {
			return nil, encodingError(backend, enc, err)
		}
		return zr, nil
	default:
		return nil, &translate.UpstreamError{Status: http.StatusBadGateway, Type: "api_error",
			Message: "the upstream of backend " + backend + " answered with the unsupported Content-Encoding " + strconv.Quote(clipString(enc, 40))}
	}
}

// readBody reads the whole non-streamed body of x, decoded (see decodedBody). A body over
// maxResponseBytes is a 502, never a truncated answer; so is a body that fails to decode.
func readBody(ctx context.Context, x *exchange, backend string) ([]byte, error) {
	r, err := decodedBody(x, backend)
	if err != nil {
		return nil, err
	}
	body, err := io.ReadAll(io.LimitReader(r, maxResponseBytes+1))
	if err != nil {
		enc := string(x.resp.Header.ContentEncoding())
		if ctx.Err() == nil && enc != "" && (errors.Is(err, gzip.ErrChecksum) || errors.Is(err, gzip.ErrHeader) ||
			errors.Is(err, zlib.ErrChecksum) || errors.Is(err, zlib.ErrHeader) || errors.Is(err, io.ErrUnexpectedEOF)) {
			return nil, encodingError(backend, enc, err)
		}
		return nil, readError(ctx, backend, err)
	}
	if len(body) > maxResponseBytes {
		return nil, &translate.UpstreamError{Status: http.StatusBadGateway, Type: "api_error",
			Message: "the upstream of backend " + backend + " answered with a body over the gateway's bound of " + strconv.Itoa(maxResponseBytes>>20) + " MiB"}
	}
	return body, nil
}

func encodingError(backend, enc string, err error) *translate.UpstreamError {
	return &translate.UpstreamError{Status: http.StatusBadGateway, Type: "api_error",
		Message: "the upstream of backend " + backend + " sent a body that does not decode as " + clipString(enc, 40) + ": " + err.Error()}
}

func clipString(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}
