package messagesin_test

import (
	"bytes"
	"testing"
	"unicode/utf8"

	"github.com/tidwall/sjson"

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

// answerBodies are whole upstream answers: the recorded Message
// (../../proxy/testdata/bench/anthropic-message.json's source, testdata/SOURCES.md) and the
// edge cases of the model member.
var answerBodies = []string{
	`{"id":"msg_01XFDUDYJgAACzvnptvVoYEL","type":"message","role":"assistant","model":"claude-bench","content":[{"type":"text","text":"Hi"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":412,"output_tokens":187}}`,
	`{"type":"message", "model" : "claude-up" ,"content":[{"type":"text","text":"a \"model\": b"}]}`,
	`{"model":"a","model":"b"}`,
	`{"model":null,"x":1}`,
	`{"model":{"id":"m"}}`,
	`{"content":[{"model":"k"}],"model":"m\u0065"}`,
}

// TestAppendModelAt: a whole answer's model is set where ReadAnswer found it, as
// sjson.SetBytes sets it (the passthrough's way before), for the names it writes as they
// are; it declines the others.
func TestAppendModelAt(t *testing.T) {
	for _, in := range answerBodies {
		for _, name := range []string{"claude", `we"ird\name`, "<b>&", "modèle"} {
			checkAppendModelAt(t, []byte(in), name)
		}
	}
	for _, in := range []string{`[]`, `{"model":"m"`, `{"model":"m"} x`, `"model"`} {
		if _, ok := messagesin.ReadAnswer([]byte(in)); ok {
			t.Errorf("ReadAnswer(%s) took it for an object", in)
		}
	}
}

// FuzzAppendModelAt is TestAppendModelAt's property for any body and name.
func FuzzAppendModelAt(f *testing.F) {
	for _, in := range answerBodies {
		f.Add([]byte(in), "claude")
	}
	f.Fuzz(func(t *testing.T, body []byte, name string) { checkAppendModelAt(t, body, name) })
}

func checkAppendModelAt(t *testing.T, body []byte, name string) {
	model, ok := messagesin.ReadAnswer(body)
	if ok != messagesin.IsObject(body) {
		t.Fatalf("ReadAnswer(%q) ok %v, IsObject %v", body, ok, !ok)
	}
	if !ok || model.End == 0 || !utf8.ValidString(name) {
		return
	}
	want, err := sjson.SetBytes(bytes.Clone(body), "model", name)
	if err != nil {
		t.Fatalf("sjson.SetBytes(%q, %q): %v", body, name, err)
	}
	if got, ok := messagesin.AppendModelAt(nil, body, model, name); ok && !bytes.Equal(got, want) || !ok && got != nil {
		t.Errorf("AppendModelAt(%s, %q) = %s, %v; want sjson's %s", body, name, got, ok, want)
	}
}
