package upstream

import (
	"strings"

	"github.com/valyala/fasthttp"

	"github.com/agate-gateway/agate/translate"
)

// A request that adds nothing to the backend's head and base URL (no headers of its own,
// no query, no signer: the usual chat request) is written from a request kept by the
// Client that already holds them, so that only its path and body are set: newRequest's
// copies of the head and the URI cost about 1 K instructions a request (#55). fasthttp
// leaves such a request as it found it but for what every write sets again (the
// Content-Length, the Host and request-URI lines from the URI, the User-Agent it adds when
// none is set), so the bytes sent are newRequest's (TestClient_PlainRequestsAsBuilt). A
// request with anything of its own is built by newRequest as before. A request's own
// header the head already holds with the same value (the Messages passthrough's usual
// anthropic-version: the client's equals the provider's) is no header of its own: setting
// it would replace the head's value with itself, so such a request is plain too.

// plainRequest returns the request SendBy sends for path and body and whether it is a
// plain one (releaseRequest's argument): one of c's plain requests when headers is empty
// or redundant, path has no query and c signs nothing, else a fasthttp request built by
// newRequest.
func (c *Client) plainRequest(path string, headers []translate.Header, body []byte) (*fasthttp.Request, bool) {
	if (len(headers) > 0 && !c.redundant(headers)) || c.signer != nil || strings.IndexByte(path, '?') >= 0 {
		req := fasthttp.AcquireRequest()
		c.newRequest(req, path, headers, body)
		return req, false
	}
	req, _ := c.plain.Get().(*fasthttp.Request)
	if req == nil {
		req = new(fasthttp.Request)
		c.newRequest(req, path, nil, body)
		return req, true
	}
	var room [256]byte // on the stack: the setter copies it
	req.URI().SetPathBytes(append(append(room[:0], c.basePath...), path...))
	req.SetBodyRaw(body)
	return req, true
}

// redundant reports whether every header of headers is one the head holds with that
// value (held): its name equal ignoring case (fasthttp's names are canonical, a
// request's as its code writes them), its value byte for byte.
func (c *Client) redundant(headers []translate.Header) bool {
	for _, h := range headers {
		if !c.holds(h) {
			return false
		}
	}
	return true
}

// holds reports whether the head holds h (redundant).
func (c *Client) holds(h translate.Header) bool {
	for _, o := range c.held {
		if len(o.lower) == len(h.Name) && o.value == h.Value && (o.lower == h.Name || equalFoldASCII([]byte(h.Name), o.lower)) {
			return true
		}
	}
	return false
}

// releaseRequest gives back req, which plainRequest returned with plain, once SendBy is
// done with it: a plain request is kept for the next only after an exchange that went
// well (sent is true), without its body (the caller's buffer); any other goes to fasthttp.
func (c *Client) releaseRequest(req *fasthttp.Request, plain, sent bool) {
	if !plain {
		fasthttp.ReleaseRequest(req)
		return
	}
	if sent {
		req.SetBodyRaw(nil)
		c.plain.Put(req)
	}
}
