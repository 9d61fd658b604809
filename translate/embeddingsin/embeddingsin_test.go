package embeddingsin_test

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agate-gateway/agate/translate"
	"github.com/agate-gateway/agate/translate/embeddingsin"
	"github.com/agate-gateway/agate/translate/gemini"
	"github.com/agate-gateway/agate/translate/internal/goldentest"
	"github.com/agate-gateway/agate/translate/openai"
)

// fixture reads a recording of ../../testdata/fixtures (provenance in its SOURCES.md).
func fixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "testdata", "fixtures", name))
	if err != nil {
		t.Fatal(err)
	}
	return bytes.TrimRight(b, "\n")
}

func TestParse(t *testing.T) {
	tests := []struct {
		name, body string
		want       *translate.EmbedRequest // Body left out
		param, msg string
	}{
		{"string", `{"model":"m","input":"hi"}`,
			&translate.EmbedRequest{Model: "m", Inputs: []translate.EmbedInput{{Text: "hi"}}}, "", ""},
		{"strings and options", `{"input":["a","b\u00e9"],"model":"m","dimensions":256,"encoding_format":"base64","user":"u","task_type":"CLUSTERING","extra":{"x":1}}`,
			&translate.EmbedRequest{Model: "m", Inputs: []translate.EmbedInput{{Text: "a"}, {Text: "bé"}}, Dimensions: 256, Base64: true, User: "u", TaskType: "CLUSTERING"}, "", ""},
		{"one token array", `{"model":"m","input":[1,2,3],"encoding_format":"float"}`,
			&translate.EmbedRequest{Model: "m", Tokens: true, Inputs: []translate.EmbedInput{{Tokens: []int64{1, 2, 3}}}}, "", ""},
		{"token arrays", `{"model":"m","input":[[1],[2,3]],"dimensions":null}`,
			&translate.EmbedRequest{Model: "m", Tokens: true, Inputs: []translate.EmbedInput{{Tokens: []int64{1}}, {Tokens: []int64{2, 3}}}}, "", ""},
		{"no model", `{"input":"x"}`, nil, "model", "required"},
		{"no input", `{"model":"m"}`, nil, "input", "required"},
		{"empty string", `{"model":"m","input":""}`, nil, "input", "empty string"},
		{"empty element", `{"model":"m","input":["a",""]}`, nil, "input[1]", "empty string"},
		{"empty array", `{"model":"m","input":[]}`, nil, "input", "empty array"},
		{"mixed", `{"model":"m","input":["a",[1]]}`, nil, "input[1]", "must be a string"},
		{"mixed tokens", `{"model":"m","input":[[1],"a"]}`, nil, "input[1]", "token ids"},
		{"bad token", `{"model":"m","input":[[1,-2]]}`, nil, "input[0][1]", "non-negative integer"},
		{"fraction token", `{"model":"m","input":[1.5]}`, nil, "input[0]", "non-negative integer"},
		{"empty token array", `{"model":"m","input":[[]]}`, nil, "input[0]", "must not be empty"},
		{"object input", `{"model":"m","input":{}}`, nil, "input", "must be a string"},
		{"dimensions zero", `{"model":"m","input":"x","dimensions":0}`, nil, "dimensions", "from 1 to 8192"},
		{"dimensions huge", `{"model":"m","input":"x","dimensions":100000}`, nil, "dimensions", "from 1 to 8192"},
		{"format", `{"model":"m","input":"x","encoding_format":"int8"}`, nil, "encoding_format", `"float" or "base64"`},
		{"model type", `{"model":1,"input":"x"}`, nil, "model", "must be a string"},
		{"not json", `{"model":"m",`, nil, "", "not valid JSON"},
		{"not object", `["x"]`, nil, "", "JSON object"},
		{"too many", `{"model":"m","input":[` + strings.Repeat(`"x",`, translate.MaxEmbedInputs) + `"x"]}`, nil, "input", "more than 2048 inputs"},
		{"too many ids", `{"model":"m","input":[[` + strings.Repeat(`1,`, translate.MaxEmbedTokenIDs/2) + `1],[` + strings.Repeat(`1,`, translate.MaxEmbedTokenIDs/2) + `1]]}`, nil, "input", "more than 1048576 token ids"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := embeddingsin.Parse(tt.body)
			if tt.want == nil {
				pe, ok := err.(*translate.ParamError)
				if !ok || pe.Param != tt.param || !strings.Contains(pe.Message, tt.msg) {
					t.Fatalf("err = %v, want param %q containing %q", err, tt.param, tt.msg)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got.Body = ""
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
		})
	}
}

// TestGeminiRecorded: a client's request for the texts llm-gemini embedded is encoded as
// the very batchEmbedContents body it sent, and the recorded answer is written for the
// client as the golden files say (testdata/gemini-batch.{float,base64}.json; -update
// rewrites them): each number the shortest decimal of its float32, or those float32s in
// base64.
func TestGeminiRecorded(t *testing.T) {
	tests := []struct {
		fixture, client, upstreamModel string
		golden                         string
	}{
		{"gemini/embeddings/batch-2-gemini-embedding-2-768.llm-gemini", `{"model":"e","input":["First text","Second text"],"dimensions":768}`, "gemini-embedding-2", "gemini-batch"},
		{"gemini/embeddings/single-gemini-embedding-001-768.llm-gemini", `{"model":"e","input":["Some text goes here"],"dimensions":768}`, "gemini-embedding-001", ""},
		{"gemini/embeddings/single-gemini-embedding-001.llm-gemini", `{"model":"e","input":"Some text goes here"}`, "gemini-embedding-001", ""},
	}
	p := gemini.New().(translate.Embedder)
	for _, tt := range tests {
		t.Run(filepath.Base(tt.fixture), func(t *testing.T) {
			req, err := embeddingsin.Parse(tt.client)
			if err != nil {
				t.Fatal(err)
			}
			up, err := p.AppendEmbedRequest(nil, req, req.Inputs, &translate.EmbedOptions{UpstreamModel: tt.upstreamModel})
			if err != nil {
				t.Fatal(err)
			}
			if want := fixture(t, tt.fixture+".request.json"); !bytes.Equal(up, want) {
				t.Errorf("upstream request\n got %s\nwant %s", up, want)
			}
			answer := fixture(t, tt.fixture+".json")
			var out translate.Embeddings
			if err := p.DecodeEmbeddings(answer, len(req.Inputs), &out); err != nil {
				t.Fatal(err)
			}
			var rec struct {
				Embeddings []struct{ Values []float64 }
				Usage      struct{ PromptTokenCount int } `json:"usageMetadata"`
			}
			if err := json.Unmarshal(answer, &rec); err != nil {
				t.Fatal(err)
			}
			checkVectors(t, &out, func(i int) []float64 { return rec.Embeddings[i].Values }, len(rec.Embeddings))
			if out.PromptTokens != rec.Usage.PromptTokenCount {
				t.Errorf("prompt tokens %d, want %d", out.PromptTokens, rec.Usage.PromptTokenCount)
			}
			if tt.golden != "" {
				golden(t, tt.golden+".float.json", embeddingsin.AppendBody(nil, "e", &out, false, out.PromptTokens))
				golden(t, tt.golden+".base64.json", embeddingsin.AppendBody(nil, "e", &out, true, out.PromptTokens))
			}
		})
	}
}

// checkVectors checks that out holds n vectors, each the float32 rounding of want(i), and
// that the client's answer carries them exactly, as floats and as base64.
func checkVectors(t *testing.T, out *translate.Embeddings, want func(int) []float64, n int) {
	t.Helper()
	if len(out.Vectors) != n {
		t.Fatalf("%d vectors, want %d", len(out.Vectors), n)
	}
	for i, v := range out.Vectors {
		w := want(i)
		if len(v) != len(w) {
			t.Fatalf("vector %d: %d numbers, want %d", i, len(v), len(w))
		}
		for j := range v {
			if v[j] != float32(w[j]) {
				t.Fatalf("vector %d[%d] = %v, want %v", i, j, v[j], float32(w[j]))
			}
		}
	}
	for _, b64 := range []bool{false, true} {
		var resp struct {
			Data []struct{ Embedding json.RawMessage }
		}
		if err := json.Unmarshal(embeddingsin.AppendBody(nil, "m", out, b64, 1), &resp); err != nil {
			t.Fatal(err)
		}
		for i, d := range resp.Data {
			got := readVector(t, d.Embedding)
			for j := range got {
				if got[j] != out.Vectors[i][j] {
					t.Fatalf("base64 %v: vector %d[%d] reads %v, want %v", b64, i, j, got[j], out.Vectors[i][j])
				}
			}
		}
	}
}

// readVector reads an embedding as a client does: numbers rounded to float32, or base64.
func readVector(t *testing.T, raw json.RawMessage) []float32 {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			t.Fatal(err)
		}
		v := make([]float32, len(b)/4)
		for i := range v {
			v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
		}
		return v
	}
	var f []float64
	if err := json.Unmarshal(raw, &f); err != nil {
		t.Fatal(err)
	}
	v := make([]float32, len(f))
	for i, x := range f {
		v[i] = float32(x)
	}
	return v
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if goldentest.Updating() {
		if err := os.WriteFile(path, append(got, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(append(got, '\n'), want) {
		t.Errorf("%s differs (go test -update rewrites it)\n got %.200s", name, got)
	}
}

// TestOpenAIRecorded: the passthrough forwards the request ruby-openai recorded with only
// its model rewritten (the recorded body itself, its model being first), and the recorded
// answer with only its model rewritten, reading its usage; the translated path decodes
// the same answer into the float32s of its numbers.
func TestOpenAIRecorded(t *testing.T) {
	const name = "openai-embeddings/float-ada-002.ruby-openai"
	recorded := fixture(t, name+".request.json")
	var clientBody map[string]any
	_ = json.Unmarshal(recorded, &clientBody)
	clientBody["model"] = "my-embedder"
	cb, _ := json.Marshal(clientBody)
	req, err := embeddingsin.Parse(string(cb))
	if err != nil {
		t.Fatal(err)
	}
	if got := embeddingsin.AppendForward(nil, req.Body, "text-embedding-ada-002"); !bytes.Equal(got, recorded) {
		t.Errorf("forwarded\n got %s\nwant %s", got, recorded)
	}
	answer := fixture(t, name+".json")
	out, prompt, err := embeddingsin.RewriteAnswer(nil, answer, "my-embedder")
	if err != nil || prompt != 8 {
		t.Fatalf("RewriteAnswer: %d tokens, %v", prompt, err)
	}
	var got, want map[string]any
	_ = json.Unmarshal(out, &got)
	_ = json.Unmarshal(answer, &want)
	want["model"] = "my-embedder"
	if !reflect.DeepEqual(got, want) {
		t.Errorf("the rewritten answer differs from the recording but for its model")
	}
	if _, _, err := embeddingsin.RewriteAnswer(nil, []byte(`{"error":{"message":"x"}}`), "m"); err != embeddingsin.ErrNotEmbeddings {
		t.Errorf("an answer without data: %v", err)
	}
	var e translate.Embeddings
	if err := openai.New().(translate.Embedder).DecodeEmbeddings(answer, 1, &e); err != nil {
		t.Fatal(err)
	}
	var rec struct {
		Data []struct{ Embedding []float64 }
	}
	_ = json.Unmarshal(answer, &rec)
	checkVectors(t, &e, func(i int) []float64 { return rec.Data[i].Embedding }, 1)
	if e.PromptTokens != 8 {
		t.Errorf("prompt tokens %d", e.PromptTokens)
	}
}

// TestAppendBase64 holds the fast encoder to encoding/base64 over the bytes, for every
// length around its block size.
func TestAppendBase64(t *testing.T) {
	for n := range 40 {
		v := make([]float32, n)
		b := make([]byte, 4*n)
		for i := range v {
			v[i] = float32(i)*0.37 - 3
			binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v[i]))
		}
		if got, want := string(embeddingsin.AppendBase64([]byte("x"), v)), "x"+base64.StdEncoding.EncodeToString(b); got != want {
			t.Fatalf("n=%d: %q, want %q", n, got, want)
		}
	}
}

// BenchmarkBase64 re-encodes a 2,048-number float answer to base64; its MB/s counts the
// float32 bytes encoded (8 KiB a vector).
func BenchmarkBase64(b *testing.B) {
	v := make([]float32, 2048)
	for i := range v {
		v[i] = float32(math.Sin(float64(i)))
	}
	dst := make([]byte, 0, 16<<10)
	b.SetBytes(4 * int64(len(v)))
	b.ReportAllocs()
	for b.Loop() {
		dst = embeddingsin.AppendBase64(dst[:0], v)
	}
}

// BenchmarkAnswer writes a whole answer of one 2,048-number vector, as floats and base64.
func BenchmarkAnswer(b *testing.B) {
	v := make([]float32, 2048)
	for i := range v {
		v[i] = float32(math.Sin(float64(i)))
	}
	e := &translate.Embeddings{Vectors: [][]float32{v}}
	for _, b64 := range []bool{false, true} {
		name := "float"
		if b64 {
			name = "base64"
		}
		b.Run(name, func(b *testing.B) {
			dst := make([]byte, 0, 64<<10)
			b.SetBytes(4 * int64(len(v)))
			b.ReportAllocs()
			for b.Loop() {
				dst = embeddingsin.AppendBody(dst[:0], "m", e, b64, 8)
			}
		})
	}
}

// FuzzParse: no input makes Parse panic, and whatever it accepts is within its bounds and
// forwards as valid JSON. Seeded from the recorded requests.
func FuzzParse(f *testing.F) {
	for _, name := range []string{"openai-embeddings/float-ada-002.ruby-openai.request.json"} {
		f.Add(string(fixture(f, name)))
	}
	f.Add(`{"model":"m","input":["First text","Second text"],"dimensions":768,"encoding_format":"base64"}`)
	f.Add(`{"model":"m","input":[[1,2],[3]],"user":"u","task_type":"CLUSTERING"}`)
	f.Add(`{"model":"m","input":[1,2,3]}`)
	f.Fuzz(func(t *testing.T, body string) {
		req, err := embeddingsin.Parse(body)
		if err != nil {
			if _, ok := err.(*translate.ParamError); !ok {
				t.Fatalf("error %T %v", err, err)
			}
			return
		}
		if req.Model == "" || len(req.Inputs) == 0 || len(req.Inputs) > translate.MaxEmbedInputs ||
			req.Dimensions < 0 || req.Dimensions > translate.MaxEmbedDimensions {
			t.Fatalf("accepted %+v", req)
		}
		if fwd := embeddingsin.AppendForward(nil, req.Body, "up"); !json.Valid(fwd) {
			t.Fatalf("forwarded invalid JSON %q", fwd)
		}
	})
}
