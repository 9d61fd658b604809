package anthropic

import (
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agate-gateway/agate/internal/jsonx"
	"github.com/agate-gateway/agate/translate"
	"github.com/agate-gateway/agate/translate/internal/goldentest"
	"github.com/agate-gateway/agate/translate/internal/recorded"
)

// readAnswerByDecode is what the Messages passthrough read of a whole answer before
// ReadAnswer (#55): its own walk for the model (messagesin.ReadAnswer's: RootMembers, one
// JSON object), then DecodeResponse for the usage, or its error.
func readAnswerByDecode(body []byte) (model translate.Span, usage translate.Usage, ok bool, err error) {
	sc := jsonx.NewScanner(jsonx.View(body))
	var v [1]jsonx.Value
	root, ok := sc.RootMembers([]string{"model"}, v[:])
	if !ok || root.Kind != jsonx.Object {
		return model, usage, false, nil
	}
	if m := v[0]; m.Exists() {
		model = translate.Span{Start: m.At, End: m.At + len(m.Raw)}
	}
	err = New().DecodeResponse(body, func(ev *translate.Event) error {
		if ev.Kind == translate.EventUsage {
			usage = ev.Usage
		}
		return nil
	})
	if err != nil {
		return translate.Span{}, translate.Usage{}, true, err
	}
	return model, usage, true, nil
}

// answerSeeds are the recorded Messages answers, error bodies included, and the bench's.
func answerSeeds(t testing.TB) [][]byte {
	return recorded.Answers(t, 5, "../../testdata/fixtures/anthropic/json/*.json",
		"../../testdata/fixtures/anthropic/errors/*.json", "testdata/bench-response.json")
}

// checkReadAnswer fails t when ReadAnswer and readAnswerByDecode differ on body.
func checkReadAnswer(t *testing.T, body []byte) (translate.Usage, error) {
	t.Helper()
	model, u, ok, err := anthropicProvider{}.ReadAnswer(body)
	wmodel, wu, wok, werr := readAnswerByDecode(body)
	if ok != wok || model != wmodel || u != wu {
		t.Fatalf("ReadAnswer(%q) = %v, %+v, %v; want %v, %+v, %v", body, model, u, ok, wmodel, wu, wok)
	}
	if diff := cmp.Diff(werr, err); diff != "" {
		t.Fatalf("ReadAnswer(%q)'s error (-want +got):\n%s", body, diff)
	}
	return u, err
}

// TestReadAnswer: the recorded answers and the bench's read as the walk and DecodeResponse
// read them: a usage for a message, the upstream's error for an error object.
func TestReadAnswer(t *testing.T) {
	for _, body := range answerSeeds(t) {
		u, err := checkReadAnswer(t, body)
		if (err == nil) == (u == translate.Usage{}) {
			t.Errorf("ReadAnswer(%.60s…): usage %+v, error %v", body, u, err)
		}
	}
	for _, s := range []string{`[]`, `{"model":`, ` {"model":1} `, `{"type":"error"}`, `{"model":"a","model":"b","usage":{"input_tokens":1}}`} {
		checkReadAnswer(t, []byte(s))
	}
}

// FuzzReadAnswerMatchesDecode: ReadAnswer reads of any body what the passthrough's walk
// and DecodeResponse read: whether it is an object, the model's place, the usage, the
// error.
func FuzzReadAnswerMatchesDecode(f *testing.F) {
	for _, b := range answerSeeds(f) {
		f.Add(b)
	}
	for _, s := range []string{`[]`, `{"model":`, ` {"model":1} `, `{"type":"error","error":{"type":"overloaded_error","message":"x"}}`,
		`{"type":"message","model":"a","content":[{"type":"tool_use","id":"t","name":"n","input":{"a" : 1}}],"usage":{"input_tokens":3,"output_tokens":4}}`,
		`{"type":"message","usage":{"input_tokens":3, "cache_read_input_tokens":2,"iterations":[]}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) { checkReadAnswer(t, body) })
}

// BenchmarkReadAnswer is the Messages passthrough's read of the bench's whole answer
// (testdata/bench-response.json, the mock's): one-pass is ReadAnswer, walk+decode the
// walk and DecodeResponse it replaced.
func BenchmarkReadAnswer(b *testing.B) {
	body, err := os.ReadFile("testdata/bench-response.json")
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name string
		read func([]byte) (translate.Span, translate.Usage, bool, error)
	}{{"one-pass", anthropicProvider{}.ReadAnswer}, {"walk+decode", readAnswerByDecode}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				if _, u, ok, err := c.read(body); !ok || err != nil || u.PromptTokens == 0 {
					b.Fatal(ok, err)
				}
			}
		})
	}
}

// TestDecodeResponseInto: the gateway's decode into its own Event gives DecodeResponse's
// events and allocates nothing for the bench's answer.
func TestDecodeResponseInto(t *testing.T) {
	bench, err := os.ReadFile("testdata/bench-response.json")
	if err != nil {
		t.Fatal(err)
	}
	p := New()
	goldentest.CheckDecodeInto(t, p, p.(translate.ResponseDecoderInto), answerSeeds(t), bench)
}
