package proxy_test

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/agate-gateway/agate/internal/gatewaytest"
	"github.com/agate-gateway/agate/internal/logjson"
	"github.com/agate-gateway/agate/proxy"
	"github.com/agate-gateway/agate/telemetry"
)

// The embeddings API end to end: openai-go (floats and base64) against a gateway whose
// routes reach a fake OpenAI upstream (passed through), a fake Gemini upstream
// (translated, in batches) and the mock. The fakes answer in the providers' recorded wire
// format (testdata/fixtures/openai-embeddings and gemini/embeddings; SOURCES.md names
// their origins): the OpenAI fake the ada-002 recording's vector, the Gemini fake the
// batchEmbedContents recording's vectors with its usageMetadata.

// embedRecordings are the recorded vectors: OpenAI's one, Gemini's two (768 numbers each).
type embedRecordings struct {
	openai       []float64
	openaiTokens int
	gemini       [2][]float64
}

func loadEmbedRecordings(t *testing.T) embedRecordings {
	t.Helper()
	var o struct {
		Data []struct {
			Embedding []float64 `json:"embedding"`
		} `json:"data"`
		Usage struct {
			PromptTokens int `json:"prompt_tokens"`
		} `json:"usage"`
	}
	var g struct {
		Embeddings []struct {
			Values []float64 `json:"values"`
		} `json:"embeddings"`
	}
	readJSON(t, "openai-embeddings/float-ada-002.ruby-openai.json", &o)
	readJSON(t, "gemini/embeddings/batch-2-gemini-embedding-2-768.llm-gemini.json", &g)
	return embedRecordings{openai: o.Data[0].Embedding, openaiTokens: o.Usage.PromptTokens,
		gemini: [2][]float64{g.Embeddings[0].Values, g.Embeddings[1].Values}}
}

func readJSON(t *testing.T, name string, v any) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "testdata", "fixtures", name))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
}

// embedFakes are the fake upstreams and what they were sent.
type embedFakes struct {
	rec            embedRecordings
	openai, gemini *httptest.Server
	mu             sync.Mutex
	bodies         []map[string]any // every request body, in order
	paths          []string
	// openaiFails is how many of the next OpenAI requests get a 503; geminiStatus, when
	// set, is the status of every Gemini answer (with Gemini's error body).
	openaiFails  int
	geminiStatus int
}

func (f *embedFakes) note(r *http.Request) map[string]any {
	var body map[string]any
	_ = json.NewDecoder(r.Body).Decode(&body)
	f.mu.Lock()
	f.bodies = append(f.bodies, body)
	f.paths = append(f.paths, r.URL.Path)
	f.mu.Unlock()
	return body
}

func (f *embedFakes) sent() ([]map[string]any, []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]map[string]any(nil), f.bodies...), append([]string(nil), f.paths...)
}

// inputNumber is the n of an input "text-n", else -1: the fakes mark each vector with it
// (its first number), so that a test sees the order the gateway joined them in.
func inputNumber(s string) float64 {
	if n, err := strconv.Atoi(strings.TrimPrefix(s, "text-")); err == nil && strings.HasPrefix(s, "text-") {
		return float64(n)
	}
	return -1
}

func newEmbedFakes(t *testing.T) *embedFakes {
	f := &embedFakes{rec: loadEmbedRecordings(t)}
	// OpenAI: the recording's shape; one data element an input, in the encoding asked.
	f.openai = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body := f.note(r)
		f.mu.Lock()
		fail := f.openaiFails > 0
		f.openaiFails--
		f.mu.Unlock()
		if fail {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(503)
			fmt.Fprint(w, `{"error":{"message":"The server is overloaded","type":"server_error","param":null,"code":null}}`)
			return
		}
		if r.URL.Path != "/v1/embeddings" || r.Header.Get("Authorization") != "Bearer up-secret" {
			http.Error(w, `{"error":{"message":"wrong path or key","type":"invalid_request_error"}}`, 404)
			return
		}
		var inputs []string
		switch in := body["input"].(type) {
		case string:
			inputs = []string{in}
		case []any:
			for _, x := range in {
				s, _ := x.(string)
				inputs = append(inputs, s)
			}
		}
		var data []string
		for i, in := range inputs {
			v := append([]float64(nil), f.rec.openai...)
			if n := inputNumber(in); n >= 0 {
				v[0] = n
			}
			var emb []byte
			if body["encoding_format"] == "base64" {
				emb = strconv.AppendQuote(nil, base64.StdEncoding.EncodeToString(float32Bytes(v)))
			} else {
				emb, _ = json.Marshal(v)
			}
			data = append(data, fmt.Sprintf(`{"object":"embedding","index":%d,"embedding":%s}`, i, emb))
		}
		tokens := f.rec.openaiTokens * len(inputs)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"object":"list","data":[%s],"model":%q,"usage":{"prompt_tokens":%d,"total_tokens":%d}}`,
			strings.Join(data, ","), body["model"], tokens, tokens)
	}))
	t.Cleanup(f.openai.Close)
	// Gemini: batchEmbedContents as recorded; the recording's two vectors in turn, and its
	// usageMetadata (two tokens a text).
	f.gemini = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body := f.note(r)
		f.mu.Lock()
		status := f.geminiStatus
		f.mu.Unlock()
		if status != 0 { // Gemini's error shape (as recorded in gemini/errors)
			w.Header().Set("Content-Type", "application/json; charset=UTF-8")
			w.WriteHeader(status)
			fmt.Fprintf(w, `{"error":{"code":%d,"message":"* BatchEmbedContentsRequest.requests: at most 100 requests can be in one batch","status":"INVALID_ARGUMENT"}}`, status)
			return
		}
		if !strings.HasSuffix(r.URL.Path, ":batchEmbedContents") || r.Header.Get("X-Goog-Api-Key") != "up-secret" {
			w.WriteHeader(404)
			fmt.Fprint(w, `{"error":{"code":404,"message":"wrong path or key","status":"NOT_FOUND"}}`)
			return
		}
		reqs, _ := body["requests"].([]any)
		var embs []string
		for i, x := range reqs {
			text := ""
			if m, ok := x.(map[string]any); ok {
				parts := m["content"].(map[string]any)["parts"].([]any)
				text, _ = parts[0].(map[string]any)["text"].(string)
			}
			v := append([]float64(nil), f.rec.gemini[i%2]...)
			if n := inputNumber(text); n >= 0 {
				v[0] = n
			}
			b, _ := json.Marshal(v)
			embs = append(embs, `{"values":`+string(b)+`}`)
		}
		w.Header().Set("Content-Type", "application/json; charset=UTF-8")
		if strings.Contains(r.URL.Path, "-001:") { // as recorded: gemini-embedding-001 reports no usage
			fmt.Fprintf(w, `{"embeddings":[%s]}`, strings.Join(embs, ","))
			return
		}
		fmt.Fprintf(w, `{"embeddings":[%s],"usageMetadata":{"promptTokenCount":%d,"promptTokenDetails":[{"modality":"TEXT","tokenCount":%d}]}}`,
			strings.Join(embs, ","), 2*len(reqs), 2*len(reqs))
	}))
	t.Cleanup(f.gemini.Close)
	return f
}

func float32Bytes(v []float64) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(float32(x)))
	}
	return b
}

// startEmbedGateway serves emb-openai (passed through), emb-gemini (translated, with a
// task type), emb-mock, emb-mixed (openai with a gemini fallback: translated) and chat
// (an anthropic model, which cannot embed).
func startEmbedGateway(t *testing.T, f *embedFakes, extra string) *gatewaytest.Gateway {
	return gatewaytest.StartYAML(t, startEmbedYAML(f)+extra, gatewaytest.Options{Runtime: proxy.TestRuntime})
}

// startEmbedYAML is startEmbedGateway's configuration.
func startEmbedYAML(f *embedFakes) string {
	return fmt.Sprintf(`server: {listen: "127.0.0.1:0"}
backends:
  oai: {type: openai, base_url: %q, api_key: up-secret, retries: {max: 0}}
  gem: {type: gemini, base_url: %q, api_key: up-secret, retries: {max: 0}}
  mock: {type: mock}
  claude: {type: anthropic, base_url: "http://127.0.0.1:1", api_key: x}
models:
  emb-openai: {backend: oai, upstream_model: text-embedding-ada-002}
  emb-gemini: {backend: gem, upstream_model: gemini-embedding-2, embeddings: {task_type: RETRIEVAL_DOCUMENT}}
  emb-gemini-001: {backend: gem, upstream_model: gemini-embedding-001}
  emb-mock: {backend: mock}
  emb-mixed: {backend: oai, upstream_model: text-embedding-ada-002, fallbacks: [emb-gemini]}
  chat: {backend: claude, upstream_model: claude-x}
keys:
  alice: {key: alice-key, models: ["*"]}
`, f.openai.URL+"/v1", f.gemini.URL)
}

func asFloat32s(v []float64) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = float64(float32(x))
	}
	return out
}

// decodeBase64Vector decodes an embedding sent as base64 (openai-go keeps it raw).
func decodeBase64Vector(t *testing.T, raw string) []float64 {
	t.Helper()
	var s string
	if err := json.Unmarshal([]byte(raw), &s); err != nil {
		t.Fatalf("embedding is not a base64 string: %.80s", raw)
	}
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil || len(b)%4 != 0 {
		t.Fatalf("embedding is not base64 of float32s: %v", err)
	}
	out := make([]float64, len(b)/4)
	for i := range out {
		out[i] = float64(math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:])))
	}
	return out
}

func TestEmbeddings_OpenAIGo(t *testing.T) {
	f := newEmbedFakes(t)
	g := startEmbedGateway(t, f, "")
	client := gatewaytest.OpenAI(g.V1(), "alice-key")
	rec := f.rec
	tests := []struct {
		name, model string
		base64      bool
		want        []float64 // the first vector as the client reads it, rounded to float32 but when passed through as floats
		tokens      int64
	}{
		// Passed through: the upstream's numbers as it wrote them. Translated: each
		// number the shortest decimal of the float32 it rounds to (as OpenAI writes
		// them), or that float32 in base64.
		{"openai float", "emb-openai", false, rec.openai, 8},
		{"openai base64", "emb-openai", true, asFloat32s(rec.openai), 8},
		{"gemini float", "emb-gemini", false, asFloat32s(rec.gemini[0]), 2},
		{"gemini base64", "emb-gemini", true, asFloat32s(rec.gemini[0]), 2},
		{"mixed route float", "emb-mixed", false, asFloat32s(rec.openai), 8},
		{"mixed route base64", "emb-mixed", true, asFloat32s(rec.openai), 8},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			params := openai.EmbeddingNewParams{Model: tt.model,
				Input: openai.EmbeddingNewParamsInputUnion{OfString: openai.String("The food was delicious and the waiter...")}}
			if tt.base64 {
				params.EncodingFormat = openai.EmbeddingNewParamsEncodingFormatBase64
			}
			resp, err := client.Embeddings.New(context.Background(), params)
			if err != nil {
				t.Fatal(err)
			}
			if len(resp.Data) != 1 || resp.Model != tt.model || resp.Usage.PromptTokens != tt.tokens || resp.Usage.TotalTokens != tt.tokens {
				t.Fatalf("data %d, model %q, usage %+v", len(resp.Data), resp.Model, resp.Usage)
			}
			got := resp.Data[0].Embedding
			switch {
			case tt.base64:
				got = decodeBase64Vector(t, resp.Data[0].JSON.Embedding.Raw())
			case tt.model != "emb-openai":
				got = asFloat32s(got)
			}
			if !equalFloats(got, tt.want) {
				t.Errorf("vector differs from the recording: %d numbers, first %v, want %d, first %v", len(got), head(got), len(tt.want), head(tt.want))
			}
		})
	}
	bodies, paths := f.sent()
	// The passthrough forwards the client's body with only the model rewritten.
	if paths[0] != "/v1/embeddings" || bodies[0]["model"] != "text-embedding-ada-002" || bodies[0]["input"] != "The food was delicious and the waiter..." {
		t.Errorf("passthrough sent %s %v", paths[0], bodies[0])
	}
	if _, ok := bodies[0]["encoding_format"]; ok {
		t.Errorf("passthrough added encoding_format: %v", bodies[0])
	}
	if bodies[1]["encoding_format"] != "base64" {
		t.Errorf("passthrough dropped encoding_format: %v", bodies[1])
	}
	// Gemini gets batchEmbedContents with the model's task type.
	want := map[string]any{"requests": []any{map[string]any{"model": "models/gemini-embedding-2",
		"content": map[string]any{"parts": []any{map[string]any{"text": "The food was delicious and the waiter..."}}}, "taskType": "RETRIEVAL_DOCUMENT"}}}
	if paths[2] != "/v1beta/models/gemini-embedding-2:batchEmbedContents" || fmt.Sprint(bodies[2]) != fmt.Sprint(want) {
		t.Errorf("gemini sent %s %v", paths[2], bodies[2])
	}
	if got := testutil.ToFloat64(g.Metrics.Requests.WithLabelValues("emb-gemini", "gem", "alice", "200", "false", "embeddings")); got != 2 {
		// Settled: the records of answered requests are left to their connections.
		g.Server.Settle()
		if got = testutil.ToFloat64(g.Metrics.Requests.WithLabelValues("emb-gemini", "gem", "alice", "200", "false", "embeddings")); got != 2 {
			t.Errorf("gateway_requests_total{api=embeddings} of emb-gemini = %v, want 2", got)
		}
	}
}

func equalFloats(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func head(v []float64) []float64 { return v[:min(3, len(v))] }

// TestEmbeddings_Batches: 250 texts reach Gemini as three batchEmbedContents requests of
// 100, 100 and 50, with dimensions as outputDimensionality and the request's task_type
// over the model's, and the vectors come back joined in the inputs' order.
func TestEmbeddings_Batches(t *testing.T) {
	t.Parallel() // its own gateway, fakes and servers (#54)
	f := newEmbedFakes(t)
	g := startEmbedGateway(t, f, "")
	client := gatewaytest.OpenAI(g.V1(), "alice-key")
	var inputs []string
	for i := range 250 {
		inputs = append(inputs, "text-"+strconv.Itoa(i))
	}
	params := openai.EmbeddingNewParams{Model: "emb-gemini", Dimensions: openai.Int(768),
		Input: openai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: inputs}}
	resp, err := client.Embeddings.New(context.Background(), params, option.WithJSONSet("task_type", "CLUSTERING"))
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Data) != 250 || resp.Usage.PromptTokens != 500 {
		t.Fatalf("%d vectors, usage %+v", len(resp.Data), resp.Usage)
	}
	for i, d := range resp.Data {
		if d.Index != int64(i) || d.Embedding[0] != float64(i) || len(d.Embedding) != 768 {
			t.Fatalf("data[%d]: index %d, first number %v, %d numbers", i, d.Index, d.Embedding[0], len(d.Embedding))
		}
	}
	bodies, _ := f.sent()
	var sizes []int
	for _, b := range bodies {
		reqs := b["requests"].([]any)
		sizes = append(sizes, len(reqs))
		first := reqs[0].(map[string]any)
		if first["outputDimensionality"] != float64(768) || first["taskType"] != "CLUSTERING" {
			t.Errorf("batch request %v", first)
		}
	}
	if fmt.Sprint(sizes) != "[100 100 50]" {
		t.Errorf("batches %v, want [100 100 50]", sizes)
	}
}

// TestEmbeddings_Mock: the mock's vectors are unit vectors of the asked dimensions, the
// same for the same text, different for another.
func TestEmbeddings_Mock(t *testing.T) {
	g := startEmbedGateway(t, newEmbedFakes(t), "")
	client := gatewaytest.OpenAI(g.V1(), "alice-key")
	embed := func(dims int64, in ...string) []openai.Embedding {
		params := openai.EmbeddingNewParams{Model: "emb-mock", Input: openai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: in}}
		if dims > 0 {
			params.Dimensions = openai.Int(dims)
		}
		resp, err := client.Embeddings.New(context.Background(), params)
		if err != nil {
			t.Fatal(err)
		}
		return resp.Data
	}
	a := embed(0, "alpha", "beta", "alpha")
	if len(a[0].Embedding) != 256 || !equalFloats(a[0].Embedding, a[2].Embedding) || equalFloats(a[0].Embedding, a[1].Embedding) {
		t.Errorf("mock vectors: %d numbers; same text equal: %v; other text equal: %v", len(a[0].Embedding),
			equalFloats(a[0].Embedding, a[2].Embedding), equalFloats(a[0].Embedding, a[1].Embedding))
	}
	var norm float64
	for _, x := range a[0].Embedding {
		norm += x * x
	}
	if math.Abs(norm-1) > 1e-5 {
		t.Errorf("norm² %v, want 1", norm)
	}
	if b := embed(3, "alpha"); len(b[0].Embedding) != 3 {
		t.Errorf("dimensions 3: %d numbers", len(b[0].Embedding))
	}
}

// TestEmbeddings_Errors: bad requests are 400s in OpenAI's shape naming the param.
func TestEmbeddings_Errors(t *testing.T) {
	g := startEmbedGateway(t, newEmbedFakes(t), "")
	client := gatewaytest.OpenAI(g.V1(), "alice-key")
	many := make([]string, 2049)
	for i := range many {
		many[i] = "x"
	}
	tests := []struct {
		name   string
		params openai.EmbeddingNewParams
		status int
		param  string
		msg    string
	}{
		{"cannot embed", openai.EmbeddingNewParams{Model: "chat", Input: openai.EmbeddingNewParamsInputUnion{OfString: openai.String("x")}},
			400, "model", "model chat is served by backend claude (type anthropic), which cannot embed"},
		{"tokens to gemini", openai.EmbeddingNewParams{Model: "emb-gemini", Input: openai.EmbeddingNewParamsInputUnion{OfArrayOfTokenArrays: [][]int64{{1, 2}}}},
			400, "input", "token-id inputs are not supported by the gemini backend"},
		{"too many", openai.EmbeddingNewParams{Model: "emb-mock", Input: openai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: many}},
			400, "input", "more than 2048 inputs"},
		{"empty", openai.EmbeddingNewParams{Model: "emb-mock", Input: openai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: []string{}}},
			400, "input", "must not be an empty array"},
		{"unknown model", openai.EmbeddingNewParams{Model: "nope", Input: openai.EmbeddingNewParamsInputUnion{OfString: openai.String("x")}},
			404, "model", `"nope" does not exist`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := client.Embeddings.New(context.Background(), tt.params)
			var apiErr *openai.Error
			if !errors.As(err, &apiErr) {
				t.Fatalf("err = %v", err)
			}
			if apiErr.StatusCode != tt.status || apiErr.Param != tt.param || !strings.Contains(apiErr.Message, tt.msg) {
				t.Errorf("got %d param %q %q; want %d param %q containing %q", apiErr.StatusCode, apiErr.Param, apiErr.Message, tt.status, tt.param, tt.msg)
			}
		})
	}
}

// TestEmbeddings_NodeSDK: the Node openai SDK (which asks for base64 by default and decodes
// it) reads the same vectors as with encoding_format float, from the passthrough, the
// Gemini translation and the mock. It needs node and the npm openai package in
// AGATE_NODE_MODULES, else ../.ci/npm/node_modules (.ci/run installs it there); without
// them it skips, and fails under CI=true.
func TestEmbeddings_NodeSDK(t *testing.T) {
	t.Parallel() // its own gateway and Node process (#54)
	node := gatewaytest.Require(t, "node", "apt-get install nodejs")
	modules := os.Getenv("AGATE_NODE_MODULES")
	if modules == "" {
		modules, _ = filepath.Abs(filepath.Join("..", ".ci", "npm", "node_modules"))
	}
	if _, err := os.Stat(filepath.Join(modules, "openai", "package.json")); err != nil {
		gatewaytest.Missing(t, "the npm package openai is not installed: "+err.Error(), "set AGATE_NODE_MODULES; .ci/run installs it in .ci/npm")
	}
	f := newEmbedFakes(t)
	g := startEmbedGateway(t, f, "")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, filepath.Join("testdata", "node", "embeddings.mjs"), "emb-openai", "emb-gemini", "emb-mock")
	cmd.Env = append(os.Environ(), "AGATE_URL="+g.V1(), "OPENAI_MODULE="+filepath.Join(modules, "openai"))
	outBytes, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("node: %v\n%s", err, ee.Stderr)
		}
		t.Fatalf("node: %v", err)
	}
	type seen struct {
		N, Len int
		Head   []float64
		Second float64
		Tokens int
		Model  string
	}
	var got map[string]map[string]seen
	if err := json.Unmarshal(outBytes, &got); err != nil {
		t.Fatalf("node output: %v\n%s", err, outBytes)
	}
	rec := f.rec
	want := map[string]seen{
		"emb-openai": {N: 2, Len: 1536, Head: asFloat32s(rec.openai[:3]), Second: 7, Tokens: 16, Model: "emb-openai"},
		"emb-gemini": {N: 2, Len: 768, Head: asFloat32s(rec.gemini[0][:3]), Second: 7, Tokens: 4, Model: "emb-gemini"},
	}
	for model, w := range want {
		for _, format := range []string{"base64", "float"} {
			s := got[model][format]
			s.Head = asFloat32s(s.Head)
			if !reflect.DeepEqual(s, w) {
				t.Errorf("%s %s: got %+v, want %+v", model, format, s, w)
			}
		}
	}
	if bodies, _ := f.sent(); bodies[0]["encoding_format"] != "base64" {
		t.Errorf("the SDK's default request reached the upstream as %v, want encoding_format base64", bodies[0])
	}
	// The mock: the same vector either way, 256 numbers.
	b, fl := got["emb-mock"]["base64"], got["emb-mock"]["float"]
	if b.Len != 256 || !equalFloats(b.Head, asFloat32s(fl.Head)) || b.Second != float64(float32(fl.Second)) {
		t.Errorf("mock: base64 %+v, float %+v", b, fl)
	}
}

// TestEmbeddings_LimitsLogsAndSpans: an embeddings request is charged its input tokens
// against the key's budget, logged with api "embeddings", and traced as an embeddings
// operation (server span and upstream span "embeddings <model>").
func TestEmbeddings_LimitsLogsAndSpans(t *testing.T) {
	recv := newOTLPReceiver(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", recv.URL)
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")
	t.Setenv("OTEL_TRACES_SAMPLER", "always_on")
	f := newEmbedFakes(t)
	var logs gatewaytest.Buffer
	cfg := gatewaytest.Parse(t, fmt.Sprintf(`server: {listen: "127.0.0.1:0"}
telemetry: {traces: true}
backends:
  gem: {type: gemini, base_url: %q, api_key: up-secret, retries: {max: 0}}
models:
  emb-gemini: {backend: gem, upstream_model: gemini-embedding-2}
keys:
  bob: {key: bob-key, models: ["*"], budget: {tokens: 100, period: 1h}}
`, f.gemini.URL))
	tracer, err := telemetry.New(context.Background(), proxy.TelemetryOptions(cfg.Telemetry))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tracer.Shutdown(context.Background()) })
	g := gatewaytest.Start(t, cfg, gatewaytest.Options{Runtime: proxy.TestRuntime, Tracer: tracer, Logger: slog.New(logjson.New(&logs, nil))})
	client := gatewaytest.OpenAI(g.V1(), "bob-key")
	resp, err := client.Embeddings.New(context.Background(), openai.EmbeddingNewParams{Model: "emb-gemini",
		Input: openai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: []string{"First text", "Second text"}}})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Usage.PromptTokens != 4 {
		t.Fatalf("usage %+v", resp.Usage)
	}
	g.Server.Settle()
	if left := testutil.ToFloat64(g.Metrics.BudgetRemaining.WithLabelValues("bob", "tokens")); left != 96 {
		t.Errorf("budget left %v, want 96 (100 less the 4 input tokens)", left)
	}
	var line map[string]any
	for _, l := range strings.Split(logs.String(), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(l), &m) == nil && m["api"] == "embeddings" {
			line = m
		}
	}
	if line == nil || line["model"] != "emb-gemini" || line["prompt_tokens"] != float64(4) || line["status"] != float64(200) {
		t.Errorf("access line %v\n%s", line, logs.String())
	}
	spans := recv.waitSpans(t, tracer)
	var names []string
	for _, s := range spans {
		names = append(names, s.Name+" "+attrs(s)["gen_ai.operation.name"])
	}
	slices.Sort(names)
	if want := []string{"POST /v1/embeddings embeddings", "embeddings gemini-embedding-2 embeddings"}; !slices.Equal(names, want) {
		t.Errorf("spans %q, want %q", names, want)
	}
}

// TestEmbeddings_FallbackAndErrors: an OpenAI upstream's 503 falls back to the Gemini
// fallback, which answers (the answer and x-agate-model name it); a Gemini error reaches
// the client with its status and message; an upstream that reports no usage is charged
// the estimate.
func TestEmbeddings_FallbackAndErrors(t *testing.T) {
	f := newEmbedFakes(t)
	var logs gatewaytest.Buffer
	cfg := gatewaytest.Parse(t, startEmbedYAML(f))
	g := gatewaytest.Start(t, cfg, gatewaytest.Options{Runtime: proxy.TestRuntime, Logger: slog.New(logjson.New(&logs, nil))})
	client := gatewaytest.OpenAI(g.V1(), "alice-key")
	in := openai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: []string{"text-1", "text-2"}}

	f.mu.Lock()
	f.openaiFails = 1
	f.mu.Unlock()
	var raw *http.Response
	resp, err := client.Embeddings.New(context.Background(), openai.EmbeddingNewParams{Model: "emb-mixed", Input: in}, option.WithResponseInto(&raw))
	if err != nil {
		t.Fatal(err)
	}
	head := raw.Header
	if resp.Model != "emb-gemini" || head.Get("x-agate-model") != "emb-gemini" || head.Get("x-agate-fallback") != "1" ||
		resp.Data[1].Embedding[0] != 2 || resp.Usage.PromptTokens != 4 {
		t.Errorf("fallback answer: model %q, headers %v, second %v, usage %+v", resp.Model, head, resp.Data[1].Embedding[0], resp.Usage)
	}

	f.mu.Lock()
	f.geminiStatus = 400
	f.mu.Unlock()
	_, err = client.Embeddings.New(context.Background(), openai.EmbeddingNewParams{Model: "emb-gemini", Input: in})
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || !strings.Contains(apiErr.Message, "at most 100 requests") {
		t.Errorf("gemini 400: %v", err)
	}
	f.mu.Lock()
	f.geminiStatus = 0
	f.mu.Unlock()

	resp, err = client.Embeddings.New(context.Background(), openai.EmbeddingNewParams{Model: "emb-gemini-001",
		Input: openai.EmbeddingNewParamsInputUnion{OfString: openai.String("Some text goes here")}})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Usage.PromptTokens != 5 { // 19 bytes: a token per 4
		t.Errorf("estimated usage %+v, want 5", resp.Usage)
	}
	g.Server.Settle()
	var line map[string]any
	for _, l := range strings.Split(logs.String(), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(l), &m) == nil && m["model"] == "emb-gemini-001" {
			line = m
		}
	}
	if line["prompt_tokens"] != float64(5) || line["usage_estimated"] != true || line["api"] != "embeddings" {
		t.Errorf("access line %v", line)
	}
}
