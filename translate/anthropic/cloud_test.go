package anthropic

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/tidwall/gjson"

	"github.com/agate-gateway/agate/translate"
	"github.com/agate-gateway/agate/translate/openaichat"
)

// TestNewCloud: a cloud's Claude body is Anthropic's with anthropic_version in place of
// model, the stream member as the cloud's endpoint takes it, and no headers (the cloud's
// signer authenticates): Bedrock's InvokeModelWithResponseStream takes no stream member,
// Vertex AI's streamRawPredict takes "stream":true.
func TestNewCloud(t *testing.T) {
	type view struct {
		Head, Version, Model, Stream string
		Headers                      int
	}
	tests := []struct {
		name  string
		cloud Cloud
		want  view
	}{
		{"anthropic", Cloud{}, view{Head: "model", Model: "claude-sonnet-4-5", Stream: "true", Headers: 2}},
		{"bedrock", Cloud{Version: BedrockVersion, NoStream: true}, view{Head: "anthropic_version", Version: "bedrock-2023-05-31"}},
		{"vertex", Cloud{Version: VertexVersion}, view{Head: "anthropic_version", Version: "vertex-2023-10-16", Stream: "true"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := openaichat.ParseRequest([]byte(`{"model":"sonnet","messages":[{"role":"user","content":"hi"}]}`))
			if err != nil {
				t.Fatal(err)
			}
			p := NewCloud(tt.cloud)
			body, err := p.AppendRequest(nil, req, &translate.Options{Stream: true, UpstreamModel: "claude-sonnet-4-5"})
			if err != nil {
				t.Fatal(err)
			}
			var head string
			gjson.ParseBytes(body).ForEach(func(k, _ gjson.Result) bool { head = k.String(); return false })
			got := view{Head: head, Version: gjson.GetBytes(body, "anthropic_version").String(), Model: gjson.GetBytes(body, "model").String(),
				Stream: gjson.GetBytes(body, "stream").Raw, Headers: len(p.Headers("k"))}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("body %s (-want +got):\n%s", body, diff)
			}
		})
	}
}
