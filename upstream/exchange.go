package upstream

import (
	"io"
	"sync"

	"github.com/valyala/fasthttp"
)

// Exchange is one upstream HTTP exchange whose response head has arrived with a 2xx
// status (Client.Send). A streamed body may still be arriving, any other was read whole;
// Close releases it. Its body is read while it is open, by one goroutine.
type Exchange struct {
	resp *fasthttp.Response
	// limit bounds the body read whole (ReadBody); 0 is DefaultMaxResponseBytes.
	limit int
	// stop removes the hook that closes a streamed body when the context ends; it
	// reports true if the hook had not run (bodyRead for a body read whole: no hook).
	stop func() bool
	// closing is done once that hook has closed the body.
	closing sync.WaitGroup
}

// maxErrorBody bounds the part of an error answer's body that is read and decoded.
const maxErrorBody = 1 << 20

// maxBody is the bound of x's body read whole: its client's Backend.MaxResponseBytes.
func (x *Exchange) maxBody() int {
	if x.limit > 0 {
		return x.limit
	}
	return DefaultMaxResponseBytes
}

// bodyRead is the stop of an exchange whose body was read whole: there is no
// cancellation hook to remove.
func bodyRead() bool { return true }

// readAll reads the whole body, up to limit bytes.
func (x *Exchange) readAll(limit int64) ([]byte, error) {
	if s := x.resp.BodyStream(); s != nil {
		return io.ReadAll(io.LimitReader(s, limit))
	}
	return x.resp.Body()[:min(int64(len(x.resp.Body())), limit)], nil
}

// Buffered returns the body fasthttp read whole with the response, not streamed and not
// encoded, and true: the response's own buffer, to be read in place while x is open
// (KeepBody keeps it past Close). Any other body it leaves to ReadBody and reports false.
func (x *Exchange) Buffered() ([]byte, bool) {
	if x.resp.BodyStream() == nil && len(x.resp.Header.ContentEncoding()) == 0 {
		return x.resp.Body(), true
	}
	return nil, false
}

// KeepBody takes the response's own body buffer out of the response, which fasthttp would
// otherwise reuse once x is closed: what Buffered returned stays as it is for whatever
// still refers to it (an error quoting it).
func (x *Exchange) KeepBody() { x.resp.SwapBody(nil) }

// Header returns the value of the response header name (any case), nil when absent. It
// is the response's own buffer: valid until Close, to be copied to be kept.
func (x *Exchange) Header(name string) []byte { return responseHeader(&x.resp.Header, name) }

// responseHeader returns the value of the first header of h named name in any case, nil
// when there is none. The client keeps an upstream's header names as they came
// (DisableHeaderNamesNormalizing: fasthttp would otherwise check and case-fold every name
// of every response head), so a header is looked up by name without regard to case,
// as HTTP names are compared; the few the gateway reads are looked up this way.
func responseHeader(h *fasthttp.ResponseHeader, name string) []byte {
	for k, v := range h.All() {
		if equalFoldASCII(k, name) {
			return v
		}
	}
	return nil
}

// equalFoldASCII reports whether b and s are the same ASCII text but for case (header
// names are tokens: ASCII).
func equalFoldASCII(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := range len(s) {
		c, d := b[i], s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if 'A' <= d && d <= 'Z' {
			d += 'a' - 'A'
		}
		if c != d {
			return false
		}
	}
	return true
}

// Close releases the exchange. It is safe to call once, after the last read.
func (x *Exchange) Close() {
	if x.stop() {
		x.resp.CloseBodyStream()
	} else {
		x.closing.Wait()
	}
	fasthttp.ReleaseResponse(x.resp)
}
