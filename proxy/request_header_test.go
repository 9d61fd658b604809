package proxy

import (
	"bufio"
	"strings"
	"testing"

	"github.com/valyala/fasthttp"
)

// TestRequestHeaderNamesCanonical: the names peekHeader is given are canonical, as it
// requires.
func TestRequestHeaderNamesCanonical(t *testing.T) {
	t.Parallel() // nothing shared, no clock or environment of the process (#54)
	for _, name := range []string{headerAuthorization, headerAPIKey, headerRequestID, headerAnthropicVersion, headerAnthropicBeta} {
		if got := string(fasthttp.AppendNormalizedHeaderKey(nil, name)); got != name {
			t.Errorf("%q is not canonical: fasthttp stores it as %q", name, got)
		}
	}
}

// TestPeekHeader_AnyCase: a header the client wrote in any case is found by its canonical
// name, with the value Peek returns, as the server parses requests.
func TestPeekHeader_AnyCase(t *testing.T) {
	t.Parallel() // nothing shared, no clock or environment of the process (#54)
	for _, tc := range []struct{ sent, name, want string }{
		{"authorization: Bearer sk-1", headerAuthorization, "Bearer sk-1"},
		{"AUTHORIZATION: Bearer sk-2", headerAuthorization, "Bearer sk-2"},
		{"Authorization: Bearer sk-3", headerAuthorization, "Bearer sk-3"},
		{"x-api-key: sk-4", headerAPIKey, "sk-4"},
		{"X-API-KEY: sk-5", headerAPIKey, "sk-5"},
		{"x-request-id: r-1", headerRequestID, "r-1"},
		{"X-REQUEST-ID: r-2", headerRequestID, "r-2"},
		{"X-Other: v", headerRequestID, ""},
		{"anthropic-version: 2023-06-01", headerAnthropicVersion, "2023-06-01"},
		{"anthropic-beta: a-1", headerAnthropicBeta, "a-1"},
		{"ANTHROPIC-BETA: a-2", headerAnthropicBeta, "a-2"},
	} {
		var req fasthttp.Request
		raw := "POST /v1/chat/completions HTTP/1.1\r\nHost: gw\r\n" + tc.sent + "\r\nContent-Length: 0\r\n\r\n"
		if err := req.Read(bufio.NewReader(strings.NewReader(raw))); err != nil {
			t.Fatal(err)
		}
		if got, peeked := string(peekHeader(&req.Header, tc.name)), string(req.Header.Peek(tc.name)); got != tc.want || got != peeked {
			t.Errorf("%q: peekHeader(%s) = %q, Peek %q, want %q", tc.sent, tc.name, got, peeked, tc.want)
		}
	}
}
