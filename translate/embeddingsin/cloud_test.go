package embeddingsin_test

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agate-gateway/agate/translate"
	"github.com/agate-gateway/agate/translate/converse"
	"github.com/agate-gateway/agate/translate/embeddingsin"
	"github.com/agate-gateway/agate/translate/gemini"
	"github.com/agate-gateway/agate/translate/internal/goldentest"
	"github.com/agate-gateway/agate/translate/openai"
)

// vertexPrefix is a vertex backend's publisher google model path.
const vertexPrefix = "/v1/projects/p/locations/us-central1/publishers/google/models/"

// TestCloudEmbedRequests: each cloud's embedding wire gets the body its reference gives
// for a client's request, under the path and batch bounds of its model; what a model
// cannot take is a ParamError naming the client's field.
func TestCloudEmbedRequests(t *testing.T) {
	vertex, bedrock := gemini.VertexEmbedder{Prefix: vertexPrefix}, converse.Embedder{}
	tests := []struct {
		name     string
		em       translate.Embedder
		client   string
		model    string
		task     string
		path     string
		limits   translate.EmbedLimits
		body     string
		badParam string
	}{
		{"vertex text-embedding", vertex, `{"model":"e","input":["a","b"],"dimensions":256}`, "text-embedding-005", "RETRIEVAL_DOCUMENT",
			vertexPrefix + "text-embedding-005:predict", translate.EmbedLimits{Inputs: 250, Tokens: 20000},
			`{"instances":[{"content":"a","task_type":"RETRIEVAL_DOCUMENT"},{"content":"b","task_type":"RETRIEVAL_DOCUMENT"}],"parameters":{"outputDimensionality":256}}`, ""},
		{"vertex gemini-embedding", vertex, `{"model":"e","input":"x"}`, "gemini-embedding-001", "",
			vertexPrefix + "gemini-embedding-001:predict", translate.EmbedLimits{Inputs: 1}, `{"instances":[{"content":"x"}]}`, ""},
		{"vertex tokens", vertex, `{"model":"e","input":[1,2]}`, "text-embedding-005", "", "", translate.EmbedLimits{Inputs: 250, Tokens: 20000}, "", "input"},
		{"titan v2", bedrock, `{"model":"e","input":"hello \"world\"","dimensions":512}`, "amazon.titan-embed-text-v2:0", "",
			"/model/amazon.titan-embed-text-v2%3A0/invoke", translate.EmbedLimits{Inputs: 1}, `{"inputText":"hello \"world\"","dimensions":512}`, ""},
		{"cohere v3", bedrock, `{"model":"e","input":["a","b"]}`, "cohere.embed-english-v3", "RETRIEVAL_QUERY",
			"/model/cohere.embed-english-v3/invoke", translate.EmbedLimits{Inputs: 96}, `{"texts":["a","b"],"input_type":"search_query","embedding_types":["float"]}`, ""},
		{"cohere v3 dimensions", bedrock, `{"model":"e","input":["a"],"dimensions":256}`, "cohere.embed-multilingual-v3", "", "", translate.EmbedLimits{Inputs: 96}, "", "dimensions"},
		{"cohere v4 profile", bedrock, `{"model":"e","input":["a"],"dimensions":1024}`, "us.cohere.embed-v4:0", "clustering",
			"/model/us.cohere.embed-v4%3A0/invoke", translate.EmbedLimits{Inputs: 96}, `{"texts":["a"],"input_type":"clustering","embedding_types":["float"],"output_dimension":1024}`, ""},
		{"bedrock chat model", bedrock, `{"model":"e","input":"a"}`, "us.amazon.nova-lite-v1:0", "", "", translate.EmbedLimits{}, "", "model"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := embeddingsin.Parse(tt.client)
			if err != nil {
				t.Fatal(err)
			}
			if got := tt.em.EmbedLimits(tt.model); got != tt.limits {
				t.Errorf("limits %+v, want %+v", got, tt.limits)
			}
			body, err := tt.em.AppendEmbedRequest(nil, req, req.Inputs, &translate.EmbedOptions{UpstreamModel: tt.model, TaskType: tt.task})
			if tt.badParam != "" {
				pe, ok := err.(*translate.ParamError)
				if !ok || pe.Param != tt.badParam {
					t.Fatalf("error %v, want a ParamError on %s", err, tt.badParam)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(body) != tt.body {
				t.Errorf("body\n got %s\nwant %s", body, tt.body)
			}
			if got := tt.em.EmbedPath(tt.model); got != tt.path {
				t.Errorf("path %s, want %s", got, tt.path)
			}
		})
	}
}

// TestCloudEmbedAnswers: the recorded answers of Vertex AI's predict, Titan and Cohere
// on Bedrock (testdata/fixtures, SOURCES.md: pydantic-ai's cassettes) decode to their vectors in order and their
// token counts, and are written for the client as floats and base64; an answer with a
// vector too few or a value that is not a number is an upstream error that leaves out
// what it had appended.
func TestCloudEmbedAnswers(t *testing.T) {
	tests := []struct {
		fixture string
		em      translate.Embedder
		n       int
		tokens  int
		vectors func(raw []byte) [][]float64
	}{
		{"vertex-embeddings/predict-gemini-embedding-001.pydantic-ai.json", gemini.VertexEmbedder{}, 1, 4, func(raw []byte) [][]float64 {
			var a struct {
				Predictions []struct{ Embeddings struct{ Values []float64 } }
			}
			mustJSON(t, raw, &a)
			var out [][]float64
			for _, p := range a.Predictions {
				out = append(out, p.Embeddings.Values)
			}
			return out
		}},
		{"bedrock-embeddings/titan-v2-256.pydantic-ai.json", converse.Embedder{}, 1, 4, func(raw []byte) [][]float64 {
			var a struct{ Embedding []float64 }
			mustJSON(t, raw, &a)
			return [][]float64{a.Embedding}
		}},
		{"bedrock-embeddings/cohere-v3-floats.pydantic-ai.json", converse.Embedder{}, 1, 0, func(raw []byte) [][]float64 {
			var a struct{ Embeddings [][]float64 }
			mustJSON(t, raw, &a)
			return a.Embeddings
		}},
		{"bedrock-embeddings/cohere-v4-batch-by-type.pydantic-ai.json", converse.Embedder{}, 2, 0, cohereByType(t)},
		{"bedrock-embeddings/cohere-v4-512-by-type.pydantic-ai.json", converse.Embedder{}, 1, 0, cohereByType(t)},
	}
	for _, tt := range tests {
		t.Run(tt.fixture, func(t *testing.T) {
			raw := fixture(t, tt.fixture)
			want := tt.vectors(raw)
			out := translate.Embeddings{Vectors: [][]float32{{9}}} // a batch before
			if err := tt.em.DecodeEmbeddings(raw, tt.n, &out); err != nil {
				t.Fatal(err)
			}
			out.Vectors = out.Vectors[1:]
			checkVectors(t, &out, func(i int) []float64 { return want[i] }, len(want))
			if out.PromptTokens != tt.tokens {
				t.Errorf("tokens %d, want %d", out.PromptTokens, tt.tokens)
			}
			var short translate.Embeddings
			if err := tt.em.DecodeEmbeddings(raw, tt.n+1, &short); err == nil || len(short.Vectors) != 0 {
				t.Errorf("a vector short: %v, %d vectors kept", err, len(short.Vectors))
			}
			bad := []byte(strings.Replace(string(raw), "0.0", `"x"`, 1))
			var broken translate.Embeddings
			if err := tt.em.DecodeEmbeddings(bad, tt.n, &broken); err == nil || len(broken.Vectors) != 0 {
				t.Errorf("a value not a number: %v, %d vectors kept", err, len(broken.Vectors))
			}
		})
	}
}

// cohereByType reads the float vectors of a Cohere answer with embedding_types.
func cohereByType(t *testing.T) func(raw []byte) [][]float64 {
	return func(raw []byte) [][]float64 {
		var a struct{ Embeddings struct{ Float [][]float64 } }
		mustJSON(t, raw, &a)
		return a.Embeddings.Float
	}
}

func mustJSON(t *testing.T, raw []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(raw, v); err != nil {
		t.Fatal(err)
	}
}

// FuzzCloudEmbedAnswers: no answer makes the Vertex or Bedrock decoders panic, and one
// they accept gives exactly the vectors asked for. Seeded from the recorded answers.
func FuzzCloudEmbedAnswers(f *testing.F) {
	for _, name := range []string{"vertex-embeddings/predict-gemini-embedding-001.pydantic-ai.json", "bedrock-embeddings/titan-v2-256.pydantic-ai.json",
		"bedrock-embeddings/cohere-v3-floats.pydantic-ai.json", "bedrock-embeddings/cohere-v4-batch-by-type.pydantic-ai.json"} {
		f.Add(fixture(f, name), uint8(2))
	}
	f.Add([]byte(`{"embedding":[1e39]}`), uint8(1))
	f.Fuzz(func(t *testing.T, body []byte, n uint8) {
		for _, em := range []translate.Embedder{gemini.VertexEmbedder{}, converse.Embedder{}} {
			var out translate.Embeddings
			if err := em.DecodeEmbeddings(body, int(n), &out); err == nil && len(out.Vectors) != int(n) {
				t.Fatalf("%T accepted %d vectors for %d", em, len(out.Vectors), n)
			} else if err != nil && len(out.Vectors) != 0 {
				t.Fatalf("%T kept %d vectors after %v", em, len(out.Vectors), err)
			}
		}
	})
}

// TestGoldenEmbeddings runs the golden runner over every recorded embeddings answer, per
// backend (testdata/golden/<backend>/*.txtar name the recordings of testdata/fixtures):
// each decoded by that backend's Embedder and written for the client as floats and base64
// as the goldens say, and each, cut short or read for another batch size, an upstream
// error that keeps no vector.
func TestGoldenEmbeddings(t *testing.T) {
	encode := func(e *translate.Embeddings, b64 bool) []byte {
		return embeddingsin.AppendBody(nil, goldentest.EmbedModel, e, b64, e.PromptTokens)
	}
	for _, d := range []struct {
		backend string
		em      translate.Embedder
	}{
		{"gemini", gemini.New().(translate.Embedder)},
		{"vertex", gemini.VertexEmbedder{}},
		{"bedrock", converse.Embedder{}},
		{"openai", openai.New().(translate.Embedder)},
	} {
		t.Run(d.backend, func(t *testing.T) {
			goldentest.RunEmbeddings(t, goldentest.EmbedDialect{Embedder: d.em, Encode: encode, Dir: filepath.Join("testdata", "golden", d.backend)})
		})
	}
}
