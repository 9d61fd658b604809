package proxy

import "github.com/valyala/fasthttp"

// The server parses client headers with fasthttp's name normalization on (the Server's
// DisableHeaderNamesNormalizing is left false), so every name a client sent is stored in
// canonical form ("x-request-id" as X-Request-Id), and so is every name set with Header.Set
// (a WebSocket turn's copied head included). A lookup by a name written canonically can
// then match the stored names as they are: header.Peek copies the name it is given and
// case-folds it again first, some 400 instructions a lookup, twice or three times a request
// on the hot path (the request id, the credential).

// Canonical names of the request headers the hot path reads (TestRequestHeaderNamesCanonical).
const (
	headerAuthorization = "Authorization"
	headerAPIKey        = "X-Api-Key"
	headerRequestID     = "X-Request-Id"
	// The Messages passthrough's, read on each of its requests.
	headerAnthropicVersion = "Anthropic-Version"
	headerAnthropicBeta    = "Anthropic-Beta"
)

// peekHeader returns the value of the request header canonical, a name in fasthttp's
// canonical form (each letter after a start or a '-' upper case, the others lower case):
// what h.Peek(canonical) returns, without its copy and case folding of the name. Whatever
// case the client wrote the name in, it is found.
func peekHeader(h *fasthttp.RequestHeader, canonical string) []byte {
	return h.PeekCanonical([]byte(canonical)) // a name of 32 bytes or fewer is converted on the stack
}
