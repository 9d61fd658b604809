package redact

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestMask(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{name: "nothing to mask", in: "the model `this-model-does-not-exist-12345` does not exist", want: "the model `this-model-does-not-exist-12345` does not exist"},
		{name: "openai key", in: "Incorrect API key provided: sk-proj-AbC123dEf456GhI789. You can find your API key at https://platform.openai.com/account/api-keys.",
			want: "Incorrect API key provided: sk-***. You can find your API key at https://platform.openai.com/account/api-keys."},
		{name: "openai key masked by openai", in: "Incorrect API key provided: sk-proj-********************abcd.", want: "Incorrect API key provided: sk-***********************abcd."},
		{name: "anthropic key", in: `{"x-api-key":"sk-ant-api03-aaaaBBBB1111"}`, want: `{"x-api-key":"sk-***"}`},
		{name: "stripe-style key", in: "key sk_live_51Habcdef rejected", want: "key sk_*** rejected"},
		{name: "short sk word kept", in: "sk-1 and task-force", want: "sk-1 and task-force"},
		{name: "google key", in: "API key AIzaSyA1b2C3d4E5f6G7h8I9j0KlMnOpQrStUvW not valid", want: "API key AIza*** not valid"},
		{name: "google key in a query", in: "GET /v1beta/models/x?key=AIzaSyA1b2C3d4E5f6G7h8I9j0KlMnOpQrStUvW&alt=sse", want: "GET /v1beta/models/x?key=AIza***&alt=sse"},
		{name: "bearer header", in: "received Authorization: Bearer abc.def-ghi, rejected", want: "received Authorization: Bearer ***, rejected"},
		{name: "bearer lower case", in: `"authorization":"bearer tok"`, want: `"authorization":"bearer ***"`},
		{name: "hex token", in: "token 0123456789abcdef0123456789abcdef expired", want: "token *** expired"},
		{name: "base64 token", in: "secret=dGhpcyBpcyBhIHNlY3JldCB0b2tlbiB2YWx1ZQ1= leaked", want: "secret=*** leaked"},
		{name: "jwt", in: "jwt eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIn0 bad", want: "jwt ***.*** bad"},
		{name: "long lowercase words kept", in: "gemini-2.5-flash-preview-05-20 and models/this-model-does-not-exist-12345", want: "gemini-2.5-flash-preview-05-20 and models/this-model-does-not-exist-12345"},
		{name: "short request id kept", in: "request_id req_011CWdMEehrhsdujMyQ9pChP", want: "request_id req_011CWdMEehrhsdujMyQ9pChP"},
		{name: "token inside a word not split", in: "abcsk-0123456789", want: "abcsk-0123456789"},
		{name: "hex token after a word", in: "id the-0123456789abcdef0123456789abcdef", want: "id the-***"},
		{name: "empty", in: "", want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Mask(tt.in); got != tt.want {
				t.Errorf("Mask(%q)\n got %q\nwant %q", tt.in, got, tt.want)
			}
		})
	}
}

// FuzzMask: Mask never panics, is idempotent, keeps UTF-8 valid, and a key placed in any
// text as its own word never survives.
func FuzzMask(f *testing.F) {
	f.Add("Incorrect API key provided: sk-proj-AbC123dEf456", "AbC123dEf456GhI789")
	f.Add("Authorization: Bearer x", "0123456789abcdef0123456789abcdef")
	f.Add("key=AIza", "SyA1b2C3d4E5f6G7h8I9j0")
	f.Add("é\xff", "zz")
	f.Fuzz(func(t *testing.T, text, secret string) {
		out := Mask(text)
		if again := Mask(out); again != out {
			t.Fatalf("not idempotent: %q -> %q -> %q", text, out, again)
		}
		if utf8.ValidString(text) && !utf8.ValidString(out) {
			t.Fatalf("Mask(%q) = %q is not UTF-8", text, out)
		}
		var key strings.Builder
		for _, c := range []byte(secret) {
			if isAlnum(c) {
				key.WriteByte(c)
			}
		}
		if key.Len() < 4 {
			return
		}
		for _, k := range []string{"sk-" + key.String(), "Bearer " + key.String()} {
			in := text + " " + k + " " + text
			if strings.Contains(Mask(in), k) {
				t.Fatalf("Mask(%q) = %q keeps %q", in, Mask(in), k)
			}
		}
	})
}
