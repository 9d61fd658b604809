package proxy_test

import (
	"context"
	"encoding/base64"
	"io"
	"net/http"
	"testing"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/tidwall/gjson"

	"github.com/agate-gateway/agate/internal/gatewaytest"
	"github.com/agate-gateway/agate/proxy"
)

// TestCountTokens_Vertex: Messages count_tokens on Claude on Vertex AI asks Vertex's
// publishers/anthropic/models/count-tokens:rawPredict with the client's body, the upstream
// model in it and anthropic_version vertex-2023-10-16, under the OAuth2 token, and answers
// Vertex's input_tokens.
func TestCountTokens_Vertex(t *testing.T) {
	t.Parallel() // nothing shared, no clock or environment of the process (#54)
	tokens := newGoogleTokenEndpoint(t)
	up := newCloudFake(t, vertexAuth, nil, []byte(`{"input_tokens":21}`))
	g := gatewaytest.StartYAML(t, `
backends:
  vx:
    type: vertex
    base_url: `+up.srv.URL+`
    vertex: {project: my-proj, location: us-east5, publisher: anthropic, credentials_file: `+tokens.serviceAccountFile(t)+`}
models:
  haiku: {backend: vx, upstream_model: claude-haiku-4-5@20251001}
`, gatewaytest.Options{Runtime: proxy.TestRuntime})
	client := gatewaytest.Anthropic(g.URL, "client-key")
	n, err := client.Messages.CountTokens(context.Background(), anthropic.MessageCountTokensParams{Model: "haiku",
		Messages: []anthropic.MessageParam{userText("How many tokens is this?")}})
	if err != nil {
		t.Fatal(err)
	}
	if n.InputTokens != 21 {
		t.Errorf("input_tokens %d, want Vertex's 21", n.InputTokens)
	}
	seen := up.seen()
	if len(seen) != 1 || seen[0].uri != "/v1/projects/my-proj/locations/us-east5/publishers/anthropic/models/count-tokens:rawPredict" {
		t.Fatalf("upstream requests %+v", seen)
	}
	body := seen[0].body
	if gjson.Get(body, "model").String() != "claude-haiku-4-5@20251001" || gjson.Get(body, "anthropic_version").String() != "vertex-2023-10-16" ||
		gjson.Get(body, "messages.0.content.0.text").String() != "How many tokens is this?" {
		t.Errorf("upstream body %s", body)
	}
}

// TestCountTokens_Bedrock: Messages count_tokens on Claude on Bedrock asks CountTokens
// (/model/<foundation model>/count-tokens: a cross-region profile's us. prefix left out,
// as CountTokens takes foundation models only), SigV4-signed, with the InvokeModel body
// base64-encoded in input.invokeModel.body, and answers Bedrock's inputTokens (Converse
// models: TestCountTokens_BedrockConverse).
func TestCountTokens_Bedrock(t *testing.T) {
	t.Parallel() // nothing shared, no clock or environment of the process (#54)
	var sent []string
	f, g := startBedrockWith(t, "", func(w http.ResponseWriter, r *http.Request, body []byte) bool {
		if r.URL.EscapedPath() != "/model/anthropic.claude-sonnet-4-20250514-v1%3A0/count-tokens" {
			return false
		}
		sent = append(sent, string(body))
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"inputTokens":17}`)
		return true
	})
	client := gatewaytest.Anthropic(g.URL, "sk-alice")
	n, err := client.Messages.CountTokens(context.Background(), anthropic.MessageCountTokensParams{Model: "claude",
		Messages: []anthropic.MessageParam{userText("How many tokens is this?")}})
	if err != nil {
		t.Fatal(err)
	}
	if n.InputTokens != 17 || len(sent) != 1 {
		t.Fatalf("input_tokens %d from %d requests, want Bedrock's 17 from 1", n.InputTokens, len(sent))
	}
	invoke, err := base64.StdEncoding.DecodeString(gjson.Get(sent[0], "input.invokeModel.body").String())
	if err != nil {
		t.Fatal(err)
	}
	if gjson.GetBytes(invoke, "anthropic_version").String() != "bedrock-2023-05-31" || gjson.GetBytes(invoke, "model").Exists() ||
		gjson.GetBytes(invoke, "messages.0.content.0.text").String() != "How many tokens is this?" {
		t.Errorf("the counted InvokeModel body %s", invoke)
	}
	if f.rejected.Load() != 0 {
		t.Errorf("%d requests refused their signature", f.rejected.Load())
	}
}
