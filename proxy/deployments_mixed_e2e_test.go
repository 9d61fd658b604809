package proxy_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/openai/openai-go/v3"
	"github.com/tidwall/gjson"

	"github.com/agate-gateway/agate/internal/gatewaytest"
	"github.com/agate-gateway/agate/proxy"
)

// TestDeployments_MixedTypes: one model served by Claude on Anthropic and by Claude on
// Bedrock (the issue's own example): weighted one to one, the Messages API and the chat
// API both reach both deployments, each attempt translated for its own backend (the
// Anthropic fake gets the Messages body with the model, the Bedrock fake an InvokeModel
// body with anthropic_version bedrock-2023-05-31, SigV4-signed), and the answers come back
// in the client's shape.
func TestDeployments_MixedTypes(t *testing.T) {
	t.Parallel() // the Bedrock credentials are given, not taken from the environment (#54)
	creds := aws.Credentials{AccessKeyID: "AKIDEXAMPLE", SecretAccessKey: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", SessionToken: "session-token-example"}
	bed := &fakeBedrock{t: t, creds: creds, region: "us-east-1", bodies: make(chan string, 16), paths: make(chan string, 16)}
	bsrv := httptest.NewServer(bed)
	t.Cleanup(bsrv.Close)
	anth := newCachingAnthropic(t, "anthropic")
	g := gatewaytest.StartYAML(t, fmt.Sprintf(`backends:
  anth: {type: anthropic, base_url: %q, api_key: upstream-secret, retries: {max: 0}}
  aws: {type: bedrock, bedrock: {region: us-east-1}, base_url: %q, retries: {max: 0}}
models:
  claude:
    deployments:
      - {backend: anth, upstream_model: claude-sonnet-4-5}
      - {backend: aws, upstream_model: "us.anthropic.claude-sonnet-4-5-20250929-v1:0"}
`, anth.srv.URL, bsrv.URL), gatewaytest.Options{Runtime: proxy.TestRuntime, AWSCredentials: credentials.StaticCredentialsProvider{Value: creds}})

	ac := gatewaytest.Anthropic(g.URL, "client-key")
	oc := gatewaytest.OpenAI(g.V1(), "client-key")
	var answers []string
	for range 2 {
		msg, err := ac.Messages.New(context.Background(), anthropic.MessageNewParams{Model: "claude", MaxTokens: 64,
			Messages: []anthropic.MessageParam{userText("hello")}})
		if err != nil {
			t.Fatal(err)
		}
		answers = append(answers, msg.Content[0].Text)
	}
	for range 2 {
		resp, err := oc.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{Model: "claude",
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hello")}})
		if err != nil {
			t.Fatal(err)
		}
		answers = append(answers, resp.Choices[0].Message.Content)
	}
	want := "answer from anthropic|hello from claude on bedrock|answer from anthropic|hello from claude on bedrock"
	if got := strings.Join(answers, "|"); got != want {
		t.Fatalf("answers %s, want %s (round robin over both deployments)", got, want)
	}
	if n := bed.signed.Load(); n != 2 || bed.rejected.Load() != 0 {
		t.Errorf("bedrock: %d signed requests, %d rejected; want 2, 0", n, bed.rejected.Load())
	}
	for range 2 {
		body := <-bed.bodies
		if gjson.Get(body, "anthropic_version").String() != "bedrock-2023-05-31" || gjson.Get(body, "model").Exists() {
			t.Errorf("bedrock got %s", body)
		}
	}
}
