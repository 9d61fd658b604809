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

// TestAppendCloudPassBody: a cloud's Claude body is anthropic_version first, then the
// client's members as AppendPassBody writes them, without model, the client's own
// anthropic_version and anthropic_beta, and stream where the cloud's operation says it;
// the allowed betas are an anthropic_beta array.
func TestAppendCloudPassBody(t *testing.T) {
	for _, tt := range []struct {
		name, in string
		c        messagesin.CloudPass
		want     string
	}{
		{"vertex keeps stream", `{"model":"a","max_tokens":1,"stream":true}`, messagesin.CloudPass{Version: "vertex-2023-10-16"},
			`{"anthropic_version":"vertex-2023-10-16","max_tokens":1,"stream":true}`},
		{"bedrock drops stream, betas in the body", `{"stream":true,"model":"a","messages":[]}`,
			messagesin.CloudPass{Version: "bedrock-2023-05-31", NoStream: true, Betas: "interleaved-thinking-2025-05-14,context-1m-2025-08-07"},
			`{"anthropic_version":"bedrock-2023-05-31","messages":[],"anthropic_beta":["interleaved-thinking-2025-05-14","context-1m-2025-08-07"]}`},
		{"the client's own version and betas are the gateway's to set", `{"anthropic_version":"x","anthropic_beta":["files-api-2025-04-14"],"max_tokens":1}`,
			messagesin.CloudPass{Version: "bedrock-2023-05-31", NoStream: true},
			`{"anthropic_version":"bedrock-2023-05-31","max_tokens":1}`},
		{"only the model", `{"model":"a"}`, messagesin.CloudPass{Version: "v", Betas: "b"}, `{"anthropic_version":"v","anthropic_beta":["b"]}`},
		{"escaped names and whitespace", " {\"s\\\"q\" : \"\\u00e9\" , \"mod\\u0065l\":\"a\"}", messagesin.CloudPass{Version: "v"},
			`{"anthropic_version":"v","s\"q":"\u00e9"}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := string(messagesin.AppendCloudPassBody([]byte("prefix:"), []byte(tt.in), tt.c))
			if diff := cmp.Diff("prefix:"+tt.want, got); diff != "" {
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
