package upstream

import (
	"bytes"
	"compress/gzip"
	"compress/zlib"
	"context"
	"errors"
	"io"
	"strconv"
	"strings"

	"github.com/agate-gateway/agate/translate"
)

// An upstream's answer body, decoded and bounded: the transport under the passthroughs and
// the translated path alike.

// DefaultMaxResponseBytes is the bound of a non-streamed upstream body, decoded, when
// Backend.MaxResponseBytes is 0: 64 MiB.
const DefaultMaxResponseBytes = 64 << 20

// DecodedBody returns the response body of x decoded: the gateway asks upstreams for
// identity encoding, but one that answers gzip or deflate anyway is decoded as it is
// read. Any other encoding is a 502. backend names the backend in errors.
func DecodedBody(x *Exchange, backend string) (io.Reader, error) {
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
		return nil, Fault(backend, "answered with the unsupported Content-Encoding "+strconv.Quote(clip(enc, 40)))
	}
}

// ReadBody reads the whole non-streamed body of x, decoded (see DecodedBody), into dst's
// memory when it has room (a pooled buffer), else into a fresh one. A body over the
// backend's bound (Backend.MaxResponseBytes, decoded) is a 502, never a truncated answer;
// so is a body that fails to decode.
func ReadBody(ctx context.Context, x *Exchange, backend string, dst []byte) ([]byte, error) {
	if b, ok := x.Buffered(); ok { // read whole by fasthttp (Send), within the bound
		return append(dst[:0], b...), nil
	}
	r, err := DecodedBody(x, backend)
	if err != nil {
		return nil, err
	}
	limit := x.maxBody()
	var body []byte
	if cl := x.resp.Header.ContentLength(); cl >= 0 && cl <= limit && len(x.resp.Header.ContentEncoding()) == 0 {
		// The common case: the length is known, so the body is read into one buffer of
		// its size rather than grown from 512 bytes.
		if cap(dst) >= cl {
			body = dst[:cl]
		} else {
			body = make([]byte, cl)
		}
		_, err = io.ReadFull(r, body)
	} else {
		body, err = readAllInto(dst[:0], io.LimitReader(r, int64(limit)+1))
	}
	if err != nil {
		enc := string(x.resp.Header.ContentEncoding())
		if ctx.Err() == nil && enc != "" && (errors.Is(err, gzip.ErrChecksum) || errors.Is(err, gzip.ErrHeader) ||
			errors.Is(err, zlib.ErrChecksum) || errors.Is(err, zlib.ErrHeader) || errors.Is(err, io.ErrUnexpectedEOF)) {
			return nil, encodingError(backend, enc, err)
		}
		return nil, readError(ctx, backend, err)
	}
	if len(body) > limit {
		return nil, tooLarge(backend, limit)
	}
	return body, nil
}

// tooLarge is the error for an upstream body over limit bytes: the bound in MiB when it is
// a whole number of them (the default's "64 MiB"), else in bytes.
func tooLarge(backend string, limit int) *translate.UpstreamError {
	bound := strconv.Itoa(limit) + " bytes"
	if limit > 0 && limit%(1<<20) == 0 {
		bound = strconv.Itoa(limit>>20) + " MiB"
	}
	return Fault(backend, "answered with a body over the gateway's bound of "+bound)
}

// readAllInto is io.ReadAll appending to dst.
func readAllInto(dst []byte, r io.Reader) ([]byte, error) {
	for {
		if len(dst) == cap(dst) {
			dst = append(dst, 0)[:len(dst)]
		}
		n, err := r.Read(dst[len(dst):cap(dst)])
		dst = dst[:len(dst)+n]
		if err == io.EOF {
			return dst, nil
		}
		if err != nil {
			return dst, err
		}
	}
}

func encodingError(backend, enc string, err error) *translate.UpstreamError {
	return Fault(backend, "sent a body that does not decode as "+clip(enc, 40)+": "+err.Error())
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}
