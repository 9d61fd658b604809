package messagesin_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agate-gateway/agate/translate/messagesin"
)

// TestAppendPassBody: the passthrough body is the client's members with the model
// replaced: names as spelled, values byte for byte, whitespace between members dropped.
func TestAppendPassBody(t *testing.T) {
	for _, tt := range []struct{ name, in, want string }{
		{name: "plain", in: `{"model":"a","max_tokens":1}`, want: `{"model":"up","max_tokens":1}`},
		{name: "whitespace", in: " {\n \"max_tokens\" : 1 ,\t\"model\" :\"a\", \"x\":{\"y\" : [1, 2]}}\n",
			want: `{"max_tokens":1,"model":"up","x":{"y" : [1, 2]}}`},
		{name: "escaped names", in: `{"mod\u0065l":"a","s\"q":"\u00e9"}`, want: `{"mod\u0065l":"up","s\"q":"\u00e9"}`},
		{name: "empty", in: `{}`, want: `{}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := string(messagesin.AppendPassBody(nil, []byte(tt.in), "up"))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestReadTokenCount: a count is a number member; anything else is not a count.
func TestReadTokenCount(t *testing.T) {
	for _, tt := range []struct {
		name, in string
		n        int
		ok       bool
	}{
		{name: "anthropic", in: `{"input_tokens":31}`, n: 31, ok: true},
		{name: "string", in: `{"input_tokens":"31"}`},
		{name: "missing", in: `{"totalTokens":31}`},
		{name: "not JSON", in: `{"input_tokens":31`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			n, ok := messagesin.ReadTokenCount([]byte(tt.in), "input_tokens")
			if n != tt.n || ok != tt.ok {
				t.Errorf("got %d, %v; want %d, %v", n, ok, tt.n, tt.ok)
			}
		})
	}
	if !messagesin.IsObject([]byte(` {"a":1} `)) || messagesin.IsObject([]byte(`[1]`)) || messagesin.IsObject([]byte(`{`)) {
		t.Error("IsObject")
	}
}
