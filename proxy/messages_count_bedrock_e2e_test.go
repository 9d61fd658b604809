package proxy_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/tidwall/gjson"

	"github.com/agate-gateway/agate/internal/gatewaytest"
	"github.com/agate-gateway/agate/proxy"
)

// bedrockCounter is Bedrock's CountTokens on loopback (SigV4 checked by fakeBedrock), as
// the bedrock-runtime API reference gives it: POST /model/{modelId}/count-tokens with
// {"input":{"converse":{messages, system, toolConfig, additionalModelRequestFields}}} or
// {"input":{"invokeModel":{"body"}}}, answered {"inputTokens": n}. counts maps a
// foundation model id to its count; any other model gets the 400 ValidationException
// Bedrock answers a model that does not count ("The provided model doesn't support
// counting tokens", as for Amazon Nova).
type bedrockCounter struct {
	mu     sync.Mutex
	asked  []string // model ids, as escaped in the path
	bodies []string
}

func (c *bedrockCounter) answer(counts map[string]int) func(w http.ResponseWriter, r *http.Request, body []byte) bool {
	return func(w http.ResponseWriter, r *http.Request, body []byte) bool {
		model, ok := strings.CutPrefix(r.URL.EscapedPath(), "/model/")
		if model, ok = strings.CutSuffix(model, "/count-tokens"); !ok {
			return false
		}
		c.mu.Lock()
		c.asked, c.bodies = append(c.asked, model), append(c.bodies, string(body))
		c.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		n, ok := counts[model]
		if !ok {
			w.Header().Set("x-amzn-ErrorType", "ValidationException:http://internal.amazon.com/coral/com.amazon.bedrock/")
			w.WriteHeader(http.StatusBadRequest)
			io.WriteString(w, `{"message":"The provided model doesn't support counting tokens."}`)
			return true
		}
		fmt.Fprintf(w, `{"inputTokens":%d}`, n)
		return true
	}
}

// TestCountTokens_BedrockConverse: Messages count_tokens on a Converse model asks
// CountTokens, SigV4-signed, for the foundation model (a cross-region profile's geography
// left out) with the Converse request's messages, system and toolConfig as
// input.converse (not its inferenceConfig), and answers Bedrock's inputTokens, marked
// x-agate-token-count: exact. A model Bedrock does not count for (its 400
// ValidationException) is estimated, marked estimated, and not asked again; Claude's
// InvokeModel count is exact.
func TestCountTokens_BedrockConverse(t *testing.T) {
	t.Parallel() // the credentials are given, not taken from the environment (#54)
	creds := aws.Credentials{AccessKeyID: "AKIDEXAMPLE", SecretAccessKey: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"}
	counter := &bedrockCounter{}
	f := &fakeBedrock{t: t, creds: creds, region: "us-east-1", bodies: make(chan string, 1), paths: make(chan string, 1),
		answer: counter.answer(map[string]int{"meta.llama3-3-70b-instruct-v1%3A0": 23, "anthropic.claude-sonnet-4-20250514-v1%3A0": 17})}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	g := gatewaytest.StartYAML(t, `backends:
  aws: {type: bedrock, bedrock: {region: us-east-1}, base_url: `+srv.URL+`}
models:
  llama: {backend: aws, upstream_model: "us.meta.llama3-3-70b-instruct-v1:0"}
  nova: {backend: aws, upstream_model: "us.amazon.nova-lite-v1:0"}
  claude: {backend: aws, upstream_model: "us.anthropic.claude-sonnet-4-20250514-v1:0"}
`, gatewaytest.Options{Runtime: proxy.TestRuntime, AWSCredentials: credentials.StaticCredentialsProvider{Value: creds}})
	client := gatewaytest.Anthropic(g.URL, "client-key")
	count := func(model string) (int64, string) {
		t.Helper()
		var resp *http.Response
		n, err := client.Messages.CountTokens(context.Background(), anthropic.MessageCountTokensParams{Model: anthropic.Model(model),
			System:     anthropic.MessageCountTokensParamsSystemUnion{OfTextBlockArray: []anthropic.TextBlockParam{{Text: "Answer in French."}}},
			Messages:   []anthropic.MessageParam{userText("How many tokens is this?")},
			Tools:      []anthropic.MessageCountTokensToolUnionParam{{OfTool: &anthropic.ToolParam{Name: "get_weather", InputSchema: anthropic.ToolInputSchemaParam{Properties: map[string]any{"city": map[string]any{"type": "string"}}}}}},
			ToolChoice: anthropic.ToolChoiceUnionParam{OfAuto: &anthropic.ToolChoiceAutoParam{}},
		}, option.WithResponseInto(&resp))
		if err != nil {
			t.Fatalf("%s: %v", model, err)
		}
		return n.InputTokens, resp.Header.Get("x-agate-token-count")
	}

	if n, mark := count("llama"); n != 23 || mark != "exact" {
		t.Errorf("llama: %d tokens, %q; want Bedrock's 23, exact", n, mark)
	}
	counter.mu.Lock()
	asked, body := counter.asked, counter.bodies[0]
	counter.mu.Unlock()
	if len(asked) != 1 || asked[0] != "meta.llama3-3-70b-instruct-v1%3A0" {
		t.Fatalf("CountTokens asked for %v, want the foundation model once", asked)
	}
	in := gjson.Get(body, "input.converse")
	if gjson.Get(body, "input.invokeModel").Exists() || in.Get("messages.0.content.0.text").String() != "How many tokens is this?" ||
		in.Get("system.0.text").String() != "Answer in French." || in.Get("toolConfig.tools.0.toolSpec.name").String() != "get_weather" ||
		in.Get("inferenceConfig").Exists() || len(gjson.Get(body, "input").Map()) != 1 {
		t.Errorf("CountTokens body %s", body)
	}
	for i := range 2 {
		if n, mark := count("nova"); n < 1 || mark != "estimated" {
			t.Errorf("nova, count %d: %d tokens, %q; want an estimate", i, n, mark)
		}
	}
	counter.mu.Lock()
	asked = counter.asked
	counter.mu.Unlock()
	if len(asked) != 2 || asked[1] != "amazon.nova-lite-v1%3A0" {
		t.Errorf("CountTokens asked for %v, want nova's foundation model once (then remembered)", asked)
	}
	if n, mark := count("claude"); n != 17 || mark != "exact" {
		t.Errorf("claude: %d tokens, %q; want Bedrock's 17, exact", n, mark)
	}
	if f.rejected.Load() != 0 {
		t.Errorf("%d requests refused their signature", f.rejected.Load())
	}
}
