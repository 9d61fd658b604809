package proxy_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
	"github.com/tidwall/gjson"
	"golang.org/x/tools/txtar"

	"github.com/agate-gateway/agate/internal/gatewaytest"
	"github.com/agate-gateway/agate/proxy"
)

// cloudFake is a cloud's inference endpoint on loopback: it checks each request's
// authentication as the cloud does (auth returns "" when it passes, else the reason, and
// the request gets the cloud's 401), then answers with a recorded body, streamed or whole
// as the request asks.
type cloudFake struct {
	srv          *httptest.Server
	auth         func(r *http.Request) string
	stream, json []byte // the recorded answers
	streamType   string // the Content-Type of stream

	mu       sync.Mutex
	requests []cloudRequest
	// throttle answers the next requests, one each, before the recorded answers.
	throttle []cloudError
}

// cloudError is an error answer of a cloud: its status, headers and body.
type cloudError struct {
	status  int
	headers map[string]string
	body    string
}

type cloudRequest struct {
	uri  string
	body string
}

func newCloudFake(t *testing.T, auth func(r *http.Request) string, stream, json []byte) *cloudFake {
	f := &cloudFake{auth: auth, stream: stream, json: json, streamType: "text/event-stream; charset=utf-8"}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		f.requests = append(f.requests, cloudRequest{r.URL.RequestURI(), string(body)})
		var throttled *cloudError
		if len(f.throttle) > 0 {
			throttled, f.throttle = &f.throttle[0], f.throttle[1:]
		}
		f.mu.Unlock()
		if throttled != nil {
			for k, v := range throttled.headers {
				w.Header().Set(k, v)
			}
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(throttled.status)
			io.WriteString(w, throttled.body)
			return
		}
		if reason := f.auth(r); reason != "" {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			io.WriteString(w, `{"error":{"code":"401","message":"`+reason+`"}}`)
			return
		}
		if gjson.Get(string(body), "stream").Bool() || strings.Contains(r.URL.Path, ":stream") {
			w.Header().Set("Content-Type", f.streamType)
			w.Write(f.stream)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(f.json)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *cloudFake) seen() []cloudRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]cloudRequest(nil), f.requests...)
}

// recording returns the section name of a golden transcript under the repository.
func recording(t *testing.T, path, name string) []byte {
	t.Helper()
	ar, err := txtar.ParseFile("../" + path)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range ar.Files {
		if f.Name == name {
			return f.Data
		}
	}
	t.Fatalf("%s has no %s", path, name)
	return nil
}

// chatBoth asks for model through client, whole and streamed, and returns the two answers' text.
func chatBoth(t *testing.T, client openai.Client, model string) (whole, streamed string) {
	t.Helper()
	params := openai.ChatCompletionNewParams{Model: model,
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("What is 4200 + 42?")}}
	resp, err := client.Chat.Completions.New(context.Background(), params)
	if err != nil {
		t.Fatalf("chat: %v", err)
	}
	whole = resp.Choices[0].Message.Content
	stream := client.Chat.Completions.NewStreaming(context.Background(), params)
	var acc openai.ChatCompletionAccumulator
	for stream.Next() {
		acc.AddChunk(stream.Current())
	}
	if err := stream.Err(); err != nil {
		t.Fatalf("chat stream: %v", err)
	}
	return whole, acc.Choices[0].Message.Content
}

// TestAzure_APIKey: an azure backend with api_key calls the deployment-scoped surface with
// the api-key header (and no Authorization), the deployment being the model's upstream
// name, and the recorded Azure answers (prompt_filter_results chunk first) reach an
// openai-go client whole and streamed.
func TestAzure_APIKey(t *testing.T) {
	const key = "azure-key-3f9c"
	up := newCloudFake(t, func(r *http.Request) string {
		switch {
		case r.Header.Get("api-key") != key:
			return "Access denied due to invalid subscription key"
		case r.Header.Get("Authorization") != "":
			return "unexpected Authorization header"
		}
		return ""
	}, recording(t, "translate/openai/testdata/azure-stream-text.mirascope.txtar", "upstream.sse"),
		recording(t, "translate/openai/testdata/azure-json-text.mirascope.txtar", "upstream.json"))
	g := gatewaytest.StartYAML(t, `
backends:
  aoai:
    type: azure
    base_url: `+up.srv.URL+`
    api_key: `+key+`
    azure:
      api_version: 2024-10-21
models:
  gpt-4o-mini: {backend: aoai}
  mini: {backend: aoai, upstream_model: gpt-4o-mini}
`, gatewaytest.Options{Runtime: proxy.TestRuntime})
	client := gatewaytest.OpenAI(g.V1(), "client-key")
	whole, streamed := chatBoth(t, client, "mini")
	if whole != "4200 + 42 equals 4242." || streamed != "4200 + 42 equals 4242." {
		t.Errorf("answers %q, %q", whole, streamed)
	}
	for _, r := range up.seen() {
		if r.uri != "/openai/deployments/gpt-4o-mini/chat/completions?api-version=2024-10-21" {
			t.Errorf("upstream URI %q", r.uri)
		}
		if m := gjson.Get(r.body, "model").String(); m != "gpt-4o-mini" {
			t.Errorf("upstream model %q", m)
		}
	}
}

// TestAzure_V1Surface: without api_version the v1 surface is called, the deployment as
// the body's model.
func TestAzure_V1Surface(t *testing.T) {
	up := newCloudFake(t, func(r *http.Request) string {
		if r.Header.Get("api-key") != "k" {
			return "Access denied"
		}
		return ""
	}, recording(t, "translate/openai/testdata/azure-stream-text.mirascope.txtar", "upstream.sse"),
		recording(t, "translate/openai/testdata/azure-json-text.mirascope.txtar", "upstream.json"))
	g := gatewaytest.StartYAML(t, `
backends:
  aoai: {type: azure, base_url: `+up.srv.URL+`, api_key: k}
models:
  mini: {backend: aoai, upstream_model: my-deployment}
`, gatewaytest.Options{Runtime: proxy.TestRuntime})
	chatBoth(t, gatewaytest.OpenAI(g.V1(), "client-key"), "mini")
	for _, r := range up.seen() {
		if r.uri != "/openai/v1/chat/completions" || gjson.Get(r.body, "model").String() != "my-deployment" {
			t.Errorf("upstream request %q %s", r.uri, r.body)
		}
	}
}

// TestCloud_ThrottlingIsRetried: Azure's 429 with Retry-After and Vertex AI's 429
// RESOURCE_EXHAUSTED are retried on the same backend; the client sees only the answer.
// The bodies are the clouds' own: Azure's token rate limit error as a client logged it
// (the message names the operation and api-version), Vertex AI's as the Google API error
// its error-code-429 page names (code, message, status RESOURCE_EXHAUSTED).
func TestCloud_ThrottlingIsRetried(t *testing.T) {
	azure429 := cloudError{429, map[string]string{"Retry-After": "0", "x-ratelimit-remaining-tokens": "0"},
		`{"error":{"code":"429","message": "Requests to the ChatCompletions_Create Operation under Azure OpenAI API version 2024-05-01-preview have exceeded token rate limit of your current OpenAI S0 pricing tier. Please retry after 60 seconds. Please go here: https://aka.ms/oai/quotaincrease if you would like to further increase the default rate limit."}}`}
	vertex429 := cloudError{429, nil, `{
  "error": {
    "code": 429,
    "message": "Resource exhausted. Please try again later. Please refer to https://cloud.google.com/vertex-ai/generative-ai/docs/error-code-429 for more details.",
    "status": "RESOURCE_EXHAUSTED"
  }
}`}
	azure := newCloudFake(t, func(*http.Request) string { return "" }, nil,
		recording(t, "translate/openai/testdata/azure-json-text.mirascope.txtar", "upstream.json"))
	azure.throttle = []cloudError{azure429}
	tokens := newGoogleTokenEndpoint(t)
	vertex := newCloudFake(t, vertexAuth, nil, recording(t, "translate/gemini/testdata/json-text.mirascope.txtar", "upstream.json"))
	vertex.throttle = []cloudError{vertex429}
	g := gatewaytest.StartYAML(t, `
backends:
  aoai: {type: azure, base_url: `+azure.srv.URL+`, api_key: k, retries: {base_delay: 1ms, max_delay: 5ms}}
  vx:
    type: vertex
    base_url: `+vertex.srv.URL+`
    retries: {base_delay: 1ms, max_delay: 5ms}
    vertex: {project: p, location: global, credentials_file: `+tokens.serviceAccountFile(t)+`}
models:
  mini: {backend: aoai}
  flash: {backend: vx}
`, gatewaytest.Options{Runtime: proxy.TestRuntime})
	client := gatewaytest.OpenAI(g.V1(), "client-key")
	for model, up := range map[string]*cloudFake{"mini": azure, "flash": vertex} {
		params := openai.ChatCompletionNewParams{Model: model,
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("What is 4200 + 42?")}}
		resp, err := client.Chat.Completions.New(context.Background(), params)
		if err != nil {
			t.Fatalf("%s: %v", model, err)
		}
		if !strings.Contains(resp.Choices[0].Message.Content, "4242") {
			t.Errorf("%s: answer %q", model, resp.Choices[0].Message.Content)
		}
		if n := len(up.seen()); n != 2 {
			t.Errorf("%s: %d upstream attempts, want 2 (the 429, then the answer)", model, n)
		}
	}
}

// TestAzure_Responses: an azure backend with api responses serves the Responses API
// (openai-go's Responses client, whole and streamed) from /openai/responses?api-version=,
// the deployment as the body's model, on the recorded Azure Responses answers.
func TestAzure_Responses(t *testing.T) {
	up := newCloudFake(t, func(r *http.Request) string {
		if r.Header.Get("api-key") != "k" {
			return "Access denied"
		}
		return ""
	}, recording(t, "translate/responses/testdata/azure-stream-text.mirascope.txtar", "upstream.sse"),
		recording(t, "translate/responses/testdata/azure-json-text.mirascope.txtar", "upstream.json"))
	g := gatewaytest.StartYAML(t, `
backends:
  aoai: {type: azure, base_url: `+up.srv.URL+`, api_key: k, azure: {api: responses, api_version: 2025-03-01-preview}}
models:
  mini: {backend: aoai, upstream_model: gpt-4o-mini}
`, gatewaytest.Options{Runtime: proxy.TestRuntime})
	client := gatewaytest.OpenAI(g.V1(), "client-key")
	p := responses.ResponseNewParams{Model: "mini", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("What is 4200 + 42?")}}
	out, err := client.Responses.New(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	if out.OutputText() != "4200 + 42 equals 4242." || out.Status != "completed" {
		t.Errorf("response %q %s", out.OutputText(), out.Status)
	}
	s := client.Responses.NewStreaming(context.Background(), p)
	var text strings.Builder
	completed := false
	for s.Next() {
		switch ev := s.Current(); ev.Type {
		case "response.output_text.delta":
			text.WriteString(ev.Delta)
		case "response.completed":
			completed = true
		}
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	if !completed || !strings.Contains(text.String(), "4242") {
		t.Errorf("streamed %q, completed %v", text.String(), completed)
	}
	for _, r := range up.seen() {
		if r.uri != "/openai/responses?api-version=2025-03-01-preview" || gjson.Get(r.body, "model").String() != "gpt-4o-mini" {
			t.Errorf("upstream request %q %s", r.uri, r.body)
		}
	}
}

// TestAzure_NoKeyLeftOut: an azure backend under auth api_key without a key is left out
// of /v1/models and its models are refused, as any backend without its credential.
func TestAzure_NoKeyLeftOut(t *testing.T) {
	g := gatewaytest.StartYAML(t, `
backends:
  aoai: {type: azure, base_url: https://r.openai.azure.com, azure: {auth: api_key}}
  offline: {type: mock}
models:
  mini: {backend: aoai}
  demo: {backend: offline}
`, gatewaytest.Options{Runtime: proxy.TestRuntime})
	client := gatewaytest.OpenAI(g.V1(), "client-key")
	page, err := client.Models.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, m := range page.Data {
		ids = append(ids, m.ID)
	}
	if strings.Join(ids, ",") != "demo" {
		t.Errorf("/v1/models lists %v, want only demo", ids)
	}
}
