package proxy_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/tidwall/gjson"

	"github.com/agate-gateway/agate/internal/gatewaytest"
	"github.com/agate-gateway/agate/proxy"
)

// The embeddings API on the cloud backends, end to end through openai-go: Azure's
// deployments (OpenAI's body under the resource's paths, the api-key header), Vertex AI's
// :predict (an OAuth2 token from the service-account flow) and Bedrock's InvokeModel for
// Titan and Cohere (every request SigV4-signed and checked by the fake). The fakes answer
// in the shapes of the recorded answers (testdata/fixtures/vertex-embeddings and
// bedrock-embeddings, SOURCES.md), with numbers that encode which input they embed, so
// that order across batches shows in the answer.

// embedOf is the vector a fake returns for the text s: its length and first byte.
func embedOf(s string) []float64 { return []float64{float64(len(s)), float64(s[0]), 0.5} }

// embedInputs asks model for texts through client and returns the vectors, as floats.
func embedInputs(t *testing.T, client openai.Client, model string, texts []string, dims int64) (*openai.CreateEmbeddingResponse, error) {
	t.Helper()
	params := openai.EmbeddingNewParams{Model: model, Input: openai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: texts},
		EncodingFormat: openai.EmbeddingNewParamsEncodingFormatFloat}
	if dims > 0 {
		params.Dimensions = openai.Int(dims)
	}
	return client.Embeddings.New(context.Background(), params)
}

// checkEmbedded checks that resp has embedOf(text) for each text, in order.
func checkEmbedded(t *testing.T, resp *openai.CreateEmbeddingResponse, texts []string) {
	t.Helper()
	if len(resp.Data) != len(texts) {
		t.Fatalf("%d vectors for %d inputs", len(resp.Data), len(texts))
	}
	for i, d := range resp.Data {
		if d.Index != int64(i) || !equalFloats(d.Embedding, embedOf(texts[i])) {
			t.Fatalf("data[%d] = index %d %v, want %v", i, d.Index, d.Embedding, embedOf(texts[i]))
		}
	}
}

// TestAzure_Embeddings: an azure backend's embeddings are passed through as OpenAI's
// are: the client's body, only its model replaced by the deployment, to
// /openai/deployments/<d>/embeddings?api-version=... with the api-key header; the
// recorded OpenAI answer reaches the client with only its model replaced.
func TestAzure_Embeddings(t *testing.T) {
	t.Parallel() // nothing shared, no clock or environment of the process (#54)
	const key = "azure-key-3f9c"
	rec := loadEmbedRecordings(t)
	var answer json.RawMessage
	readJSON(t, "openai-embeddings/float-ada-002.ruby-openai.json", &answer)
	up := newCloudFake(t, func(r *http.Request) string {
		if r.Header.Get("api-key") != key {
			return "Access denied due to invalid subscription key"
		}
		return ""
	}, nil, answer)
	g := gatewaytest.StartYAML(t, `
backends:
  aoai:
    type: azure
    base_url: `+up.srv.URL+`
    api_key: `+key+`
    azure: {api_version: 2024-10-21}
models:
  ada: {backend: aoai, upstream_model: my-ada}
`, gatewaytest.Options{Runtime: proxy.TestRuntime})
	client := gatewaytest.OpenAI(g.V1(), "client-key")
	resp, err := client.Embeddings.New(context.Background(), openai.EmbeddingNewParams{Model: "ada",
		Input: openai.EmbeddingNewParamsInputUnion{OfString: openai.String("The food was delicious and the waiter...")}, User: openai.String("u-1"),
		EncodingFormat: openai.EmbeddingNewParamsEncodingFormatFloat})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Data) != 1 || resp.Model != "ada" || !equalFloats(resp.Data[0].Embedding, rec.openai) {
		t.Fatalf("answer model %q, %d vectors", resp.Model, len(resp.Data))
	}
	if resp.Usage.PromptTokens != int64(rec.openaiTokens) {
		t.Errorf("prompt tokens %d, want %d", resp.Usage.PromptTokens, rec.openaiTokens)
	}
	seen := up.seen()
	if len(seen) != 1 || seen[0].uri != "/openai/deployments/my-ada/embeddings?api-version=2024-10-21" ||
		gjson.Get(seen[0].body, "model").String() != "my-ada" || gjson.Get(seen[0].body, "user").String() != "u-1" {
		t.Errorf("upstream requests %+v", seen)
	}
}

// vertexEmbedFake is Vertex AI's :predict for text embeddings on loopback: it checks the
// bearer token, records each request and answers a prediction an instance.
type vertexEmbedFake struct {
	srv *httptest.Server
	mu  sync.Mutex
	got []cloudRequest
}

func newVertexEmbedFake(t *testing.T) *vertexEmbedFake {
	f := &vertexEmbedFake{}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if why := vertexAuth(r); why != "" {
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprintf(w, `{"error":{"code":401,"message":%q,"status":"UNAUTHENTICATED"}}`, why)
			return
		}
		f.mu.Lock()
		f.got = append(f.got, cloudRequest{r.URL.RequestURI(), string(body)})
		f.mu.Unlock()
		var preds []string
		for _, in := range gjson.GetBytes(body, "instances").Array() {
			v, _ := json.Marshal(embedOf(in.Get("content").String()))
			preds = append(preds, `{"embeddings":{"statistics":{"truncated":false,"token_count":3},"values":`+string(v)+`}}`)
		}
		w.Header().Set("Content-Type", "application/json; charset=UTF-8")
		fmt.Fprintf(w, `{"predictions":[%s],"metadata":{"billableCharacterCount":12}}`, strings.Join(preds, ","))
	}))
	t.Cleanup(f.srv.Close)
	return f
}

// TestVertex_Embeddings: a vertex backend (publisher google) embeds through
// publishers/google/models/<m>:predict with one OAuth2 grant: gemini-embedding-001 one
// input a request (three requests for three inputs, joined in order), text-embedding-005
// all of them in one, with the model's task_type and the client's dimensions; the tokens
// are the predictions' token_count summed.
func TestVertex_Embeddings(t *testing.T) {
	t.Parallel() // its own gateway, fakes and servers (#54)
	tokens := newGoogleTokenEndpoint(t)
	up := newVertexEmbedFake(t)
	g := gatewaytest.StartYAML(t, `
backends:
  vx:
    type: vertex
    base_url: `+up.srv.URL+`
    vertex: {project: my-proj, location: us-central1, credentials_file: `+tokens.serviceAccountFile(t)+`}
models:
  gemb: {backend: vx, upstream_model: gemini-embedding-001, embeddings: {task_type: RETRIEVAL_DOCUMENT}}
  temb: {backend: vx, upstream_model: text-embedding-005}
`, gatewaytest.Options{Runtime: proxy.TestRuntime})
	client := gatewaytest.OpenAI(g.V1(), "client-key")
	texts := []string{"alpha", "be", "gamma ray"}
	for _, model := range []string{"gemb", "temb"} {
		resp, err := embedInputs(t, client, model, texts, 256)
		if err != nil {
			t.Fatalf("%s: %v", model, err)
		}
		checkEmbedded(t, resp, texts)
		if resp.Usage.PromptTokens != 9 {
			t.Errorf("%s: prompt tokens %d, want 9", model, resp.Usage.PromptTokens)
		}
	}
	const base = "/v1/projects/my-proj/locations/us-central1/publishers/google/models/"
	var uris []string
	for _, r := range up.got {
		uris = append(uris, r.uri)
		if gjson.Get(r.body, "parameters.outputDimensionality").Int() != 256 {
			t.Errorf("body %s", r.body)
		}
		if strings.Contains(r.uri, "gemini-embedding") != (gjson.Get(r.body, "instances.0.task_type").String() == "RETRIEVAL_DOCUMENT") {
			t.Errorf("task_type in %s %s", r.uri, r.body)
		}
	}
	want := []string{base + "gemini-embedding-001:predict", base + "gemini-embedding-001:predict", base + "gemini-embedding-001:predict", base + "text-embedding-005:predict"}
	if strings.Join(uris, " ") != strings.Join(want, " ") {
		t.Errorf("upstream requests %v, want %v", uris, want)
	}
	if n := tokens.grants.Load(); n != 1 {
		t.Errorf("%d token grants, want 1", n)
	}
}

// TestBedrock_Embeddings: a bedrock backend embeds through InvokeModel, SigV4-signed:
// Titan one text a request with its dimensions and inputTextTokenCount, Cohere 96 texts a
// request (100 inputs are two requests, joined in order) with input_type and floats asked
// for; a model of the backend that is not an embedding model is a 400 naming it, before
// any request.
func TestBedrock_Embeddings(t *testing.T) {
	t.Parallel() // the Bedrock credentials are given, not taken from the environment (#54)
	var mu sync.Mutex
	var paths []string
	f, g := startBedrockWith(t, "", func(w http.ResponseWriter, r *http.Request, body []byte) bool {
		path := r.URL.EscapedPath()
		mu.Lock()
		paths = append(paths, path)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		switch {
		case strings.Contains(path, "titan-embed"):
			text := gjson.GetBytes(body, "inputText").String()
			if gjson.GetBytes(body, "dimensions").Int() != 256 {
				w.WriteHeader(400)
				io.WriteString(w, `{"message":"dimensions expected"}`)
				return true
			}
			v, _ := json.Marshal(embedOf(text))
			fmt.Fprintf(w, `{"embedding":%s,"embeddingsByType":{"float":%s},"inputTextTokenCount":2}`, v, v)
		case strings.Contains(path, "cohere.embed"):
			if gjson.GetBytes(body, "input_type").String() != "search_document" || gjson.GetBytes(body, "embedding_types.0").String() != "float" {
				w.WriteHeader(400)
				io.WriteString(w, `{"message":"Malformed input request"}`)
				return true
			}
			var vs []string
			for _, s := range gjson.GetBytes(body, "texts").Array() {
				v, _ := json.Marshal(embedOf(s.String()))
				vs = append(vs, string(v))
			}
			// Cohere's answer counts no tokens: Bedrock's header does.
			w.Header().Set("X-Amzn-Bedrock-Input-Token-Count", strconv.Itoa(3*len(vs)))
			fmt.Fprintf(w, `{"embeddings":{"float":[%s]},"id":"e1","response_type":"embeddings_by_type","texts":[]}`, strings.Join(vs, ","))
		default:
			return false
		}
		return true
	})
	client := gatewaytest.OpenAI(g.V1(), "sk-alice")

	titanTexts := []string{"one", "two!"}
	resp, err := embedInputs(t, client, "titan", titanTexts, 256)
	if err != nil {
		t.Fatal(err)
	}
	checkEmbedded(t, resp, titanTexts)
	if resp.Usage.PromptTokens != 4 {
		t.Errorf("titan prompt tokens %d, want 4", resp.Usage.PromptTokens)
	}

	var many []string
	for i := range 100 {
		many = append(many, fmt.Sprintf("text number %d", i))
	}
	resp, err = embedInputs(t, client, "cohere", many, 0)
	if err != nil {
		t.Fatal(err)
	}
	checkEmbedded(t, resp, many)
	if resp.Usage.PromptTokens != 300 { // the header's count, summed over both requests
		t.Errorf("cohere prompt tokens %d, want 300", resp.Usage.PromptTokens)
	}
	mu.Lock()
	got := strings.Join(paths, " ")
	mu.Unlock()
	want := "/model/amazon.titan-embed-text-v2%3A0/invoke /model/amazon.titan-embed-text-v2%3A0/invoke /model/cohere.embed-english-v3/invoke /model/cohere.embed-english-v3/invoke"
	if got != want {
		t.Errorf("upstream requests %s, want %s", got, want)
	}

	if f.rejected.Load() != 0 {
		t.Errorf("%d requests were refused their signature", f.rejected.Load())
	}
	_, err = embedInputs(t, client, "nova", []string{"x"}, 0)
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || !strings.Contains(apiErr.Message, "nova") || !strings.Contains(apiErr.Message, "cannot embed") {
		t.Errorf("a chat model: %v", err)
	}
}
