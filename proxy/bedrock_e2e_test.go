package proxy_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"

	"github.com/agate-gateway/agate/internal/gatewaytest"
	"github.com/agate-gateway/agate/proxy"
)

// fakeBedrock is a loopback Bedrock runtime: it checks each request's SigV4 signature by
// recomputing it with the AWS SDK's own signer from the same static credentials, and
// answers InvokeModel (Claude, the Messages API body), InvokeModelWithResponseStream
// (chunk frames), Converse and ConverseStream (the recordings of testdata/bedrock) in
// real event-stream frames encoded by the SDK's eventstream Encoder.
type fakeBedrock struct {
	t        *testing.T
	creds    aws.Credentials
	region   string
	signed   atomic.Int32
	bodies   chan string
	paths    chan string
	rejected atomic.Int32
	// bearer, when set, is the API key expected instead of a signature.
	bearer string
	// answer, when set, answers a verified request first: false leaves it to the
	// recordings.
	answer func(w http.ResponseWriter, r *http.Request, body []byte) bool
}

func (f *fakeBedrock) verify(r *http.Request, body []byte) bool {
	auth := r.Header.Get("Authorization")
	_, rest, ok := strings.Cut(auth, "SignedHeaders=")
	if !ok {
		return false
	}
	signed, _, _ := strings.Cut(rest, ",")
	clone := &http.Request{Method: r.Method, URL: r.URL, Host: r.Host, Header: http.Header{}, ContentLength: r.ContentLength}
	clone.URL.Scheme, clone.URL.Host = "http", r.Host
	for _, h := range strings.Split(signed, ";") {
		if h == "host" || h == "content-length" {
			continue
		}
		clone.Header[http.CanonicalHeaderKey(h)] = r.Header.Values(h)
	}
	at, err := time.Parse("20060102T150405Z", r.Header.Get("X-Amz-Date"))
	if err != nil {
		return false
	}
	sum := sha256.Sum256(body)
	if err := v4.NewSigner().SignHTTP(context.Background(), f.creds, clone, hex.EncodeToString(sum[:]), "bedrock", f.region, at); err != nil {
		f.t.Error(err)
		return false
	}
	return clone.Header.Get("Authorization") == auth && r.Header.Get("X-Amz-Security-Token") == f.creds.SessionToken
}

func (f *fakeBedrock) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	if f.bearer != "" && r.Header.Get("Authorization") != "Bearer "+f.bearer || f.bearer == "" && !f.verify(r, body) {
		f.rejected.Add(1)
		w.Header().Set("x-amzn-ErrorType", "InvalidSignatureException")
		w.WriteHeader(403)
		_, _ = w.Write([]byte(`{"message":"The request signature we calculated does not match the signature you provided."}`))
		return
	}
	f.signed.Add(1)
	select {
	case f.bodies <- string(body):
	default:
	}
	select {
	case f.paths <- r.URL.EscapedPath():
	default:
	}
	if f.answer != nil && f.answer(w, r, body) {
		return
	}
	path := r.URL.EscapedPath()
	switch {
	case strings.HasSuffix(path, "/invoke"):
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, gatewaytest.RenderJSON("anthropic", gatewaytest.Turn{Text: "hello from claude on bedrock"}, 1))
	case strings.HasSuffix(path, "/invoke-with-response-stream"):
		var frames [][2]string
		sc := bufio.NewScanner(strings.NewReader(gatewaytest.RenderStream("anthropic", gatewaytest.Turn{Text: "hello from claude on bedrock"}, 1)))
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				// Bedrock adds its invocation metrics to Claude's message_stop.
				data = strings.Replace(data, `{"type":"message_stop"}`, `{"type":"message_stop","amazon-bedrock-invocationMetrics":{"inputTokenCount":12,"outputTokenCount":6,"invocationLatency":412,"firstByteLatency":230}}`, 1)
				frames = append(frames, [2]string{"chunk", `{"bytes":"` + base64.StdEncoding.EncodeToString([]byte(data)) + `","p":"abcdefghij"}`})
			}
		}
		f.stream(w, frames)
	case strings.HasSuffix(path, "/converse"):
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(readBedrock(f.t, "converse-text.json"))
	case strings.HasSuffix(path, "/converse-stream"):
		var frames [][2]string
		for _, line := range strings.Split(strings.TrimSpace(string(readBedrock(f.t, "converse-text.chunks.txt"))), "\n") {
			var ev map[string]json.RawMessage
			if err := json.Unmarshal([]byte(line), &ev); err != nil {
				f.t.Fatal(err)
			}
			for k, v := range ev {
				frames = append(frames, [2]string{k, string(v)})
			}
		}
		f.stream(w, frames)
	default:
		w.WriteHeader(404)
		_, _ = w.Write([]byte(`{"message":"unknown operation"}`))
	}
}

// stream writes frames (event type, payload) as event-stream event messages.
func (f *fakeBedrock) stream(w http.ResponseWriter, frames [][2]string) {
	w.Header().Set("Content-Type", "application/vnd.amazon.eventstream")
	enc := eventstream.NewEncoder()
	for _, fr := range frames {
		var buf bytes.Buffer
		msg := eventstream.Message{Payload: []byte(fr[1])}
		msg.Headers.Set(":event-type", eventstream.StringValue(fr[0]))
		msg.Headers.Set(":content-type", eventstream.StringValue("application/json"))
		msg.Headers.Set(":message-type", eventstream.StringValue("event"))
		if err := enc.Encode(&buf, msg); err != nil {
			f.t.Fatal(err)
		}
		_, _ = w.Write(buf.Bytes())
		w.(http.Flusher).Flush()
	}
}

func readBedrock(t testing.TB, name string) []byte {
	b, err := os.ReadFile("testdata/bedrock/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// startBedrock starts a fake Bedrock and a gateway with a bedrock backend on it, signing
// with static credentials the gateway is given (proxy.Options.AWSCredentials), so that
// the test need not set the process's environment and can run in parallel.
func startBedrock(t *testing.T) (*fakeBedrock, *gatewaytest.Gateway) {
	return startBedrockWith(t, "", nil)
}

// startBedrockWith is startBedrock with extra backend keys (", api_key: ...") and the
// fake's answer hook.
func startBedrockWith(t *testing.T, extra string, answer func(w http.ResponseWriter, r *http.Request, body []byte) bool) (*fakeBedrock, *gatewaytest.Gateway) {
	return startBedrockFrom(t, extra, answer, false)
}

// startBedrockFrom is startBedrockWith whose gateway, when fromEnv, takes the static
// credentials from the environment through the AWS default chain (its first source), as
// the gateway binary does: the caller must not be parallel (t.Setenv).
func startBedrockFrom(t *testing.T, extra string, answer func(w http.ResponseWriter, r *http.Request, body []byte) bool, fromEnv bool) (*fakeBedrock, *gatewaytest.Gateway) {
	creds := bedrockTestCreds
	opts := gatewaytest.Options{Runtime: proxy.TestRuntime, AWSCredentials: credentials.StaticCredentialsProvider{Value: creds}}
	if fromEnv {
		t.Setenv("HOME", t.TempDir())
		t.Setenv("AWS_ACCESS_KEY_ID", creds.AccessKeyID)
		t.Setenv("AWS_SECRET_ACCESS_KEY", creds.SecretAccessKey)
		t.Setenv("AWS_SESSION_TOKEN", creds.SessionToken)
		t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
		opts.AWSCredentials = nil
	}
	f := &fakeBedrock{t: t, creds: creds, region: "us-east-1", bodies: make(chan string, 1), paths: make(chan string, 1), answer: answer}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	g := gatewaytest.StartYAML(t, fmt.Sprintf(`backends:
  aws: {type: bedrock, bedrock: {region: us-east-1}, base_url: %q, retries: {max: 1, base_delay: 1ms}%s}
models:
  claude: {backend: aws, upstream_model: "us.anthropic.claude-sonnet-4-20250514-v1:0"}
  nova: {backend: aws, upstream_model: "us.amazon.nova-lite-v1:0"}
  titan: {backend: aws, upstream_model: "amazon.titan-embed-text-v2:0"}
  cohere: {backend: aws, upstream_model: "cohere.embed-english-v3"}
keys:
  alice: {key: sk-alice, models: ["*"]}
`, srv.URL, extra), opts)
	if strings.Contains(extra, "api_key") {
		f.bearer = "bedrock-api-key-example"
	}
	return f, g
}

func (f *fakeBedrock) last(t *testing.T) (path, body string) {
	t.Helper()
	select {
	case path = <-f.paths:
	default:
		t.Fatal("the fake saw no signed request")
	}
	select {
	case body = <-f.bodies:
	default:
	}
	return path, body
}

// TestBedrockChat: openai-go's chat completions, streamed and not, reach Claude through
// InvokeModel(WithResponseStream) and Nova through Converse(Stream), every request
// signed with SigV4 that the fake recomputes with the SDK's own signer.
func TestBedrockChat(t *testing.T) {
	t.Parallel() // credentials given, not from the environment (#54)
	f, g := startBedrock(t)
	client := gatewaytest.OpenAI(g.V1(), "sk-alice")
	ctx := context.Background()
	cases := []struct {
		model, path, want string
	}{
		{"claude", "/model/us.anthropic.claude-sonnet-4-20250514-v1%3A0/invoke", "hello from claude on bedrock"},
		{"nova", "/model/us.amazon.nova-lite-v1%3A0/converse", "s-t-**r**-a-w-b-e-**r**-**r**-y"},
	}
	for _, c := range cases {
		t.Run(c.model, func(t *testing.T) {
			params := openai.ChatCompletionNewParams{Model: c.model, Messages: []openai.ChatCompletionMessageParamUnion{
				openai.SystemMessage("be brief"), openai.UserMessage("count the r's in strawberry")}}
			resp, err := client.Chat.Completions.New(ctx, params)
			if err != nil {
				t.Fatal(err)
			}
			if got := resp.Choices[0].Message.Content; !strings.Contains(got, c.want) {
				t.Errorf("content %q, want %q in it", got, c.want)
			}
			if resp.Usage.PromptTokens == 0 || resp.Choices[0].FinishReason != "stop" {
				t.Errorf("usage %+v finish %q", resp.Usage, resp.Choices[0].FinishReason)
			}
			path, body := f.last(t)
			if path != c.path {
				t.Errorf("path %q, want %q", path, c.path)
			}
			if c.model == "claude" && (!strings.Contains(body, `"anthropic_version":"bedrock-2023-05-31"`) || strings.Contains(body, `"model"`)) {
				t.Errorf("InvokeModel body %s: want anthropic_version and no model", body)
			}
			if c.model == "nova" && !strings.Contains(body, `"system":[{"text":"be brief"}]`) {
				t.Errorf("Converse body %s", body)
			}

			stream := client.Chat.Completions.NewStreaming(ctx, params)
			var acc openai.ChatCompletionAccumulator
			for stream.Next() {
				acc.AddChunk(stream.Current())
			}
			if err := stream.Err(); err != nil {
				t.Fatal(err)
			}
			if got := acc.Choices[0].Message.Content; !strings.Contains(got, c.want) {
				t.Errorf("streamed content %q, want %q in it", got, c.want)
			}
			spath, sbody := f.last(t)
			if want := strings.Replace(strings.Replace(c.path, "/invoke", "/invoke-with-response-stream", 1), "/converse", "/converse-stream", 1); spath != want {
				t.Errorf("stream path %q, want %q", spath, want)
			}
			if strings.Contains(sbody, `"stream"`) {
				t.Errorf("stream body %s: Bedrock takes no stream member", sbody)
			}
		})
	}
	if n := f.rejected.Load(); n != 0 {
		t.Errorf("%d requests had a signature the SDK's signer does not reproduce", n)
	}
}

// TestBedrockMessages: anthropic-sdk-go's /v1/messages, streamed and not, to Claude on
// Bedrock.
func TestBedrockMessages(t *testing.T) {
	t.Parallel() // credentials given, not from the environment (#54)
	f, g := startBedrock(t)
	client := gatewaytest.Anthropic(g.URL, "sk-alice")
	ctx := context.Background()
	params := anthropic.MessageNewParams{Model: "claude", MaxTokens: 256,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hi"))}}
	msg, err := client.Messages.New(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	if len(msg.Content) == 0 || msg.Content[0].Text != "hello from claude on bedrock" {
		t.Errorf("content %+v", msg.Content)
	}
	f.last(t)
	stream := client.Messages.NewStreaming(ctx, params)
	var text strings.Builder
	for stream.Next() {
		if ev := stream.Current(); ev.Type == "content_block_delta" {
			text.WriteString(ev.Delta.Text)
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if text.String() != "hello from claude on bedrock" {
		t.Errorf("streamed %q", text.String())
	}
	if n := f.rejected.Load(); n != 0 {
		t.Errorf("%d requests had a signature the SDK's signer does not reproduce", n)
	}
}

// TestBedrockThrottled: a ThrottlingException, as an HTTP 429 or as the first frame of a
// stream (throttlingException), is retried; a ValidationException is the client's 400
// with Bedrock's message, which names the field.
func TestBedrockThrottled(t *testing.T) {
	t.Parallel() // credentials given, not from the environment (#54)
	var calls atomic.Int32
	f, g := startBedrockWith(t, "", func(w http.ResponseWriter, r *http.Request, body []byte) bool {
		if strings.Contains(string(body), "invalid please") {
			w.Header().Set("x-amzn-ErrorType", "ValidationException:http://internal.amazon.com/coral/com.amazon.bedrock/")
			w.WriteHeader(400)
			_, _ = io.WriteString(w, `{"message":"The content field in the Message object at messages.1 is empty. Add a ContentBlock object to the content field and try again."}`)
			return true
		}
		if calls.Add(1)%2 == 0 {
			return false
		}
		if strings.HasSuffix(r.URL.Path, "-stream") {
			w.Header().Set("Content-Type", "application/vnd.amazon.eventstream")
			var buf bytes.Buffer
			msg := eventstream.Message{Payload: []byte(`{"message":"Too many requests, please wait before trying again."}`)}
			msg.Headers.Set(":exception-type", eventstream.StringValue("throttlingException"))
			msg.Headers.Set(":content-type", eventstream.StringValue("application/json"))
			msg.Headers.Set(":message-type", eventstream.StringValue("exception"))
			_ = eventstream.NewEncoder().Encode(&buf, msg)
			_, _ = w.Write(buf.Bytes())
			return true
		}
		w.Header().Set("x-amzn-ErrorType", "ThrottlingException:http://internal.amazon.com/coral/com.amazon.bedrock/")
		w.WriteHeader(429)
		_, _ = io.WriteString(w, `{"message":"Too many requests, please wait before trying again."}`)
		return true
	})
	client := gatewaytest.OpenAI(g.V1(), "sk-alice")
	ctx := context.Background()
	params := openai.ChatCompletionNewParams{Model: "nova", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}}
	if _, err := client.Chat.Completions.New(ctx, params); err != nil {
		t.Fatalf("a throttled request was not retried: %v", err)
	}
	stream := client.Chat.Completions.NewStreaming(ctx, params)
	var acc openai.ChatCompletionAccumulator
	for stream.Next() {
		acc.AddChunk(stream.Current())
	}
	if err := stream.Err(); err != nil || !strings.Contains(acc.Choices[0].Message.Content, "strawberry") {
		t.Fatalf("a stream throttled in its first frame was not retried: %v %+v", err, acc.Choices)
	}
	if n := calls.Load(); n != 4 {
		t.Errorf("%d attempts, want 4 (two throttled, two answered)", n)
	}
	params.Messages = []openai.ChatCompletionMessageParamUnion{openai.UserMessage("invalid please")}
	_, err := client.Chat.Completions.New(ctx, params)
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || !strings.Contains(apiErr.Message, "messages.1") {
		t.Fatalf("error %v, want the 400 naming messages.1", err)
	}
	_ = f
}

// TestBedrockConverseTools: a Converse answer's tool calls reach an openai-go client, and
// its next turn (the calls and their results) goes back as toolUse and toolResult blocks.
func TestBedrockConverseTools(t *testing.T) {
	t.Parallel() // credentials given, not from the environment (#54)
	answer := `{"metrics":{"latencyMs":2192},"output":{"message":{"content":[{"text":"Sure! I'll look up both values simultaneously right away!"},{"toolUse":{"input":{"ref":"R1"},"name":"get_resistor_value","toolUseId":"tooluse_hr5juciYZJwUHpRczsw13R","type":"tool_use"}},{"toolUse":{"input":{"ref":"C1"},"name":"get_capacitor_value","toolUseId":"tooluse_AZHw3Ym0S07qOv5NlXj9iJ","type":"tool_use"}}],"role":"assistant"}},"stopReason":"tool_use","usage":{"cacheReadInputTokenCount":0,"cacheReadInputTokens":0,"cacheWriteInputTokenCount":0,"cacheWriteInputTokens":0,"inputTokens":694,"outputTokens":110,"serverToolUsage":{},"totalTokens":804}}`
	f, g := startBedrockWith(t, "", func(w http.ResponseWriter, r *http.Request, body []byte) bool {
		if strings.Contains(string(body), "toolResult") {
			return false
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, answer) // issue-17267-parallel-tool-calls.json of vercel/ai (translate/converse/testdata)
		return true
	})
	client := gatewaytest.OpenAI(g.V1(), "sk-alice")
	ctx := context.Background()
	tool := func(name string) openai.ChatCompletionToolUnionParam {
		return openai.ChatCompletionFunctionTool(openai.FunctionDefinitionParam{Name: name,
			Parameters: openai.FunctionParameters{"type": "object", "properties": map[string]any{"ref": map[string]any{"type": "string"}}}})
	}
	params := openai.ChatCompletionNewParams{Model: "nova", Tools: []openai.ChatCompletionToolUnionParam{tool("get_resistor_value"), tool("get_capacitor_value")},
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("R1 and C1?")}}
	resp, err := client.Chat.Completions.New(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	msg := resp.Choices[0].Message
	if resp.Choices[0].FinishReason != "tool_calls" || len(msg.ToolCalls) != 2 || msg.ToolCalls[1].Function.Arguments != `{"ref":"C1"}` {
		t.Fatalf("answer %+v", resp.Choices[0])
	}
	f.last(t)
	params.Messages = append(params.Messages, msg.ToParam(),
		openai.ToolMessage("100 ohm", msg.ToolCalls[0].ID), openai.ToolMessage("1 uF", msg.ToolCalls[1].ID))
	if _, err := client.Chat.Completions.New(ctx, params); err != nil {
		t.Fatal(err)
	}
	_, body := f.last(t)
	for _, want := range []string{
		`{"toolUse":{"toolUseId":"tooluse_AZHw3Ym0S07qOv5NlXj9iJ","name":"get_capacitor_value","input":{"ref":"C1"}}}`,
		`{"toolResult":{"toolUseId":"tooluse_hr5juciYZJwUHpRczsw13R","content":[{"text":"100 ohm"}]}}`,
		`"toolSpec":{"name":"get_resistor_value"`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("second turn\n%s\nlacks %s", body, want)
		}
	}
}

// TestBedrock_DefaultChainReadsEnvironment: a gateway given no credentials (the binary)
// signs with the AWS default chain, whose first source is the environment: the fake
// verifies the SigV4 signature of the variables' credentials, streamed and not. Serial:
// it sets the process's environment.
func TestBedrock_DefaultChainReadsEnvironment(t *testing.T) {
	f, g := startBedrockFrom(t, "", nil, true)
	client := gatewaytest.OpenAI(g.V1(), "sk-alice")
	params := openai.ChatCompletionNewParams{Model: "claude", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}}
	if _, err := client.Chat.Completions.New(context.Background(), params); err != nil {
		t.Fatal(err)
	}
	stream := client.Chat.Completions.NewStreaming(context.Background(), params)
	for stream.Next() {
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if f.signed.Load() != 2 || f.rejected.Load() != 0 {
		t.Errorf("signatures accepted %d, rejected %d; want 2 accepted", f.signed.Load(), f.rejected.Load())
	}
}

// TestBedrockAPIKey: with api_key the request carries the Bedrock API key as a bearer
// token and no signature.
func TestBedrockAPIKey(t *testing.T) {
	t.Parallel() // credentials given, not from the environment (#54)
	f, g := startBedrockWith(t, ", api_key: bedrock-api-key-example", nil)
	client := gatewaytest.OpenAI(g.V1(), "sk-alice")
	if _, err := client.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{Model: "claude",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}}); err != nil {
		t.Fatal(err)
	}
	if f.signed.Load() != 1 || f.rejected.Load() != 0 {
		t.Errorf("accepted %d, rejected %d", f.signed.Load(), f.rejected.Load())
	}
}

// TestBedrockNoCredentials: a bedrock backend without an api_key is signed with the AWS
// default credential chain, which may find an instance or container role only at run
// time: it is listed in /v1/models like the other cloud backends (the one rule,
// cloud.lacksCredential), and when the chain finds nothing a request is the 502
// upstream_auth_failed naming the chain, without reaching the upstream.
func TestBedrockNoCredentials(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(t.TempDir(), "none"))
	for _, k := range []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_WEB_IDENTITY_TOKEN_FILE",
		"AWS_ROLE_ARN", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_CONTAINER_CREDENTIALS_FULL_URI"} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { calls.Add(1) }))
	t.Cleanup(srv.Close)
	g := gatewaytest.StartYAML(t, fmt.Sprintf(`backends:
  aws: {type: bedrock, bedrock: {region: eu-west-1}, base_url: %q, retries: {max: 0}}
  offline: {type: mock}
models:
  claude: {backend: aws, upstream_model: "eu.anthropic.claude-sonnet-4-20250514-v1:0"}
  demo: {backend: offline}
`, srv.URL), gatewaytest.Options{Runtime: proxy.TestRuntime})
	client := gatewaytest.OpenAI(g.V1(), "any")
	page, err := client.Models.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, m := range page.Data {
		ids = append(ids, m.ID)
	}
	if strings.Join(ids, ",") != "claude,demo" {
		t.Errorf("/v1/models lists %v, want claude and demo", ids)
	}
	_, err = client.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{Model: "claude",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}})
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 502 || apiErr.Code != "upstream_auth_failed" ||
		!strings.Contains(apiErr.Message, "aws default credential chain") {
		t.Fatalf("error %v, want the 502 upstream_auth_failed naming the chain", err)
	}
	if n := calls.Load(); n != 0 {
		t.Errorf("the upstream was called %d times without a credential", n)
	}
}

// TestBedrockSignatureRefused: credentials Bedrock refuses (its 403 for a signature that
// does not match) are the gateway's 502 upstream_auth_failed, not the client's 401/403,
// and the secret appears nowhere in the answer.
func TestBedrockSignatureRefused(t *testing.T) {
	t.Parallel() // credentials given, not from the environment (#54)
	f, g := startBedrock(t)
	wrong := bedrockTestCreds
	wrong.SecretAccessKey = "not-the-secret-the-fake-knows"
	g2 := gatewaytest.StartYAML(t, fmt.Sprintf(`backends:
  aws: {type: bedrock, bedrock: {region: us-east-1}, base_url: %q, retries: {max: 0}}
models:
  nova: {backend: aws, upstream_model: "us.amazon.nova-lite-v1:0"}
`, g.Config.Backends["aws"].BaseURL), gatewaytest.Options{Runtime: proxy.TestRuntime, AWSCredentials: credentials.StaticCredentialsProvider{Value: wrong}})
	client := gatewaytest.OpenAI(g2.V1(), "any")
	_, err := client.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{Model: "nova",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}})
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 502 || apiErr.Code != "upstream_auth_failed" || strings.Contains(apiErr.RawJSON(), "not-the-secret") {
		t.Fatalf("error %v, want the 502 upstream_auth_failed", err)
	}
	if !strings.Contains(apiErr.Message, "must check backends.aws.bedrock (its AWS credentials") {
		t.Errorf("message %q, want it to send the operator to the bedrock credentials", apiErr.Message)
	}
	if f.rejected.Load() != 1 {
		t.Errorf("the fake refused %d requests, want 1", f.rejected.Load())
	}
}

// TestBedrockResponses: the Responses API, streamed and not, over both Bedrock APIs:
// reasoning blocks of a Converse answer come back as a reasoning item.
func TestBedrockResponses(t *testing.T) {
	t.Parallel() // credentials given, not from the environment (#54)
	reasoning := `{"metrics":{"latencyMs":2202},"output":{"message":{"content":[{"reasoningContent":{"reasoningText":{"signature":"EvYBCkgICxABGAIqQA9E9VC377UnbjdfXCw4RwQaaIXsqocZKzI3WwWtXT/wBjzAkBOfIiVkP/mhvsPGb5oQW/2j+E1tZcNFoXIb26YSDBTSbDrbHwXJoAl3/hoMA/Qo4rIHvObP/yBrIjAT+l69mh9k7evFO+w+ransSD5YGq4hYrieOyJH3k/zHv8nBJwiz3Nlrb3jNFi2Ib0qXJH7BIK0hR85yYIoccReoJUpeLEMxeWbsO6f0EpOSMSi3YDLd1U9NAw7Itjeay1fEBPHwvawt2M4e/rn52SsuEz3p2DfOZm+N3bnL63rg0Cb9lFcp3k5kuU1h6hcGAE=","text":"Let me count the r's in \"strawberry\":\n\ns-t-r-a-w-b-e-r-r-y\n\nThere are 3 r's."}}},{"text":"There are **3** r's in \"strawberry\":\n\n1. st**r**awbe**r****r**y"}],"role":"assistant"}},"stopReason":"end_turn","usage":{"cacheReadInputTokenCount":0,"cacheReadInputTokens":0,"cacheWriteInputTokenCount":0,"cacheWriteInputTokens":0,"inputTokens":51,"outputTokens":78,"serverToolUsage":{},"totalTokens":129}}`
	_, g := startBedrockWith(t, "", func(w http.ResponseWriter, r *http.Request, body []byte) bool {
		if !strings.HasSuffix(r.URL.Path, "/converse") {
			return false
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, reasoning) // amazon-bedrock-reasoning.json of vercel/ai (translate/converse/testdata)
		return true
	})
	client := gatewaytest.OpenAI(g.V1(), "sk-alice")
	ctx := context.Background()
	for _, c := range []struct{ model, want string }{{"claude", "hello from claude on bedrock"}, {"nova", "There are **3** r's"}} {
		t.Run(c.model, func(t *testing.T) {
			params := responses.ResponseNewParams{Model: c.model, Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("count")},
				Include: []responses.ResponseIncludable{responses.ResponseIncludableReasoningEncryptedContent}, Store: openai.Bool(false)}
			resp, err := client.Responses.New(ctx, params)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(resp.OutputText(), c.want) || resp.Status != "completed" {
				t.Errorf("output %q status %s", resp.OutputText(), resp.Status)
			}
			if c.model == "nova" && (len(resp.Output) < 2 || resp.Output[0].Type != "reasoning" || !strings.HasPrefix(resp.Output[0].EncryptedContent, "agate1.converse.")) {
				t.Errorf("output items %+v: want the reasoning item first, sealed", resp.Output)
			}
			stream := client.Responses.NewStreaming(ctx, params)
			var text strings.Builder
			completed := false
			for stream.Next() {
				switch ev := stream.Current(); ev.Type {
				case "response.output_text.delta":
					text.WriteString(ev.Delta)
				case "response.completed":
					completed = true
				}
			}
			if err := stream.Err(); err != nil || !completed {
				t.Fatalf("stream: %v, completed %v", err, completed)
			}
			if c.model == "claude" && text.String() != c.want {
				t.Errorf("streamed %q", text.String())
			}
		})
	}
}
