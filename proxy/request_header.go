package proxy

import (
	"bytes"

	"github.com/valyala/fasthttp"
)

// The server parses client headers with fasthttp's name normalization off (the Server's
// DisableHeaderNamesNormalizing): folding every name a client sent into canonical form
// ("x-request-id" as X-Request-Id) cost some 0.85 K instructions a request, most of them
// on names nothing reads. Instead, foldHeaderNames (the Server's HeaderReceived hook, run
// after the head is parsed and before fasthttp looks at Expect) folds in place only the
// names read by exact bytes: the gateway's own (readNames) and those fasthttp compares
// exactly once normalization is off (Expect for 100-continue, Connection for Upgrade and
// an HTTP/1.0 keep-alive). Every other name stays as the client wrote it, and a name a
// configuration chooses (the affinity header) is found by peekAnyCase. A lookup by a name
// of readNames, written canonically, then matches whatever case the client used.

// Canonical names of the request headers the hot path reads (TestRequestHeaderNamesCanonical).
const (
	headerAuthorization = "Authorization"
	headerAPIKey        = "X-Api-Key"
	headerRequestID     = "X-Request-Id"
	// The Messages passthrough's, read on each of its requests.
	headerAnthropicVersion = "Anthropic-Version"
	headerAnthropicBeta    = "Anthropic-Beta"
)

// readName returns the canonical form (fasthttp's: each letter after a start or a '-'
// upper case, the others lower case) of name when name is, in any case, one of the
// request header names the server's handlers read by exact bytes (the console's
// included), or fasthttp does with normalization off; "" for any other name.
// TestReadNames holds the list to the names the code reads.
func readName(name []byte) string {
	if c := candidate(name); c != "" && equalFoldASCII(name, c) {
		return c
	}
	return ""
}

// candidate returns the one name of readName's with name's length and first letter (and,
// for X-Request-Id and X-Csrf-Token, third), "" when there is none.
func candidate(name []byte) string {
	if len(name) < 6 {
		return ""
	}
	var c string
	switch f := name[0] | 0x20; len(name) {
	case 6:
		c = pick(f, 'e', "Expect", 'o', "Origin")
	case 7:
		c = pick(f, 'u', "Upgrade", 0, "")
	case 9:
		c = pick(f, 'x', headerAPIKey, 0, "")
	case 10:
		c = pick(f, 'c', "Connection", 't', "Tracestate")
	case 11:
		c = pick(f, 't', "Traceparent", 0, "")
	case 12:
		if f == 'x' { // X-Request-Id, X-Csrf-Token
			c = pick(name[2]|0x20, 'r', headerRequestID, 'c', "X-Csrf-Token")
		}
	case 13:
		if c = pick(f, 'a', headerAuthorization, 'c', "Cache-Control"); c == "" {
			c = pick(f, 'x', headerCache, 0, "")
		}
	case 14:
		c = pick(f, 'a', headerAnthropicBeta, 0, "")
	case 17:
		if c = pick(f, 'a', headerAnthropicVersion, 's', "Sec-Websocket-Key"); c == "" {
			c = pick(f, 'x', "X-Forwarded-Proto", 0, "")
		}
	case 21:
		c = pick(f, 's', "Sec-Websocket-Version", 0, "")
	case 22:
		c = pick(f, 's', "Sec-Websocket-Protocol", 0, "")
	case 24:
		c = pick(f, 's', "Sec-Websocket-Extensions", 0, "")
	}
	return c
}

// pick returns a if f is fa, b if f is fb, else "".
func pick(f, fa byte, a string, fb byte, b string) string {
	switch f {
	case fa:
		return a
	case fb:
		return b
	}
	return ""
}

// equalFoldASCII reports whether b equals s, a name of letters and '-', ignoring ASCII
// case. (A byte's |0x20 maps only letters onto letters, but '\r' onto '-': '-' is compared
// exactly.)
func equalFoldASCII(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := range len(b) {
		if x := s[i]; b[i] != x && (x == '-' || b[i]|0x20 != x|0x20) {
			return false
		}
	}
	return true
}

// foldHeaderNames is the server's HeaderReceived hook: it rewrites in place, to its
// canonical form, each request header name that readName knows, and redoes the one
// decision fasthttp's parse made from a name it compared exactly: an HTTP/1.0 request's
// "Connection: keep-alive" in any case keeps the connection open, as it did with
// normalization on. It returns the zero RequestConfig: the server's own limits apply.
func foldHeaderNames(h *fasthttp.RequestHeader) fasthttp.RequestConfig {
	var connection []byte // a folded Connection's value
	for k, v := range h.All() {
		// Most clients write the names canonically or in lower case: the exact compare
		// settles the first without folding.
		if n := candidate(k); n != "" && string(k) != n && equalFoldASCII(k, n) {
			// k is the header's own name: All yields the stored key (fasthttp's
			// constant names for the special headers, never in readName but Connection,
			// are canonical already and not written). TestServer_HeaderNamesAnyCase
			// fails if a fasthttp upgrade ever yields copies.
			copy(k, n)
			if n == "Connection" {
				connection = v
			}
		}
	}
	if connection != nil && !h.IsHTTP11() && h.ConnectionClose() && hasToken(connection, "keep-alive") {
		h.ResetConnectionClose()
	}
	return fasthttp.RequestConfig{}
}

// hasToken reports whether the comma-separated header value v holds token, in any case.
func hasToken(v []byte, token string) bool {
	for len(v) > 0 {
		var t []byte
		t, v, _ = bytes.Cut(v, []byte{','})
		if equalFoldASCII(bytes.TrimSpace(t), token) {
			return true
		}
	}
	return false
}

// peekHeader returns the value of the request header canonical, a name of readName's in
// canonical form: what h.Peek(canonical) returns with normalization on, without its copy
// and case folding of the name. Whatever case the client wrote the name in, the server
// folded it (foldHeaderNames).
func peekHeader(h *fasthttp.RequestHeader, canonical string) []byte {
	return h.PeekCanonical([]byte(canonical)) // a name of 32 bytes or fewer is converted on the stack
}

// peekAnyCase returns the value of the first request header named name in any case: for a
// name readName does not know (a configured one), which the server leaves as the client
// wrote it.
func peekAnyCase(h *fasthttp.RequestHeader, name string) []byte {
	for k, v := range h.All() {
		if len(k) == len(name) && bytes.EqualFold(k, []byte(name)) {
			return v
		}
	}
	return nil
}
