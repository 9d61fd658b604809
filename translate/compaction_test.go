package translate_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/tidwall/gjson"

	"github.com/agate-gateway/agate/translate"
	"github.com/agate-gateway/agate/translate/anthropic"
	"github.com/agate-gateway/agate/translate/internal/goldentest"
)

// billed is usage as every client API can express it: all input tokens (cache reads and
// writes included), the cache reads and writes, the output tokens.
type billed struct{ Input, CacheRead, CacheWrite, Output int64 }

// TestCompactionUsage_EveryClientAPI pins one usage rule for every client API on the
// translated path: an Anthropic answer with usage.iterations (server-side compaction) is
// billed as the sum over its iterations, whether the client speaks chat, Responses or
// Messages, streamed or not, from a streamed or a whole upstream answer. The upstream is
// the recorded web search stream (anthropic/stream/web-search-cache-read-create.mirascope.sse)
// whose final message_delta carries the iterations of anthropicCompactionIterations, built
// from the compaction beta's published schema (BetaIterationsUsage of BetaUsage:
// BetaCompactionIterationUsage and BetaMessageIterationUsage, in Anthropic's OpenAPI spec,
// tryAGI/Anthropic @ 8b42a21e src/libs/Anthropic/openapi.yaml, ../shared/specs), and a
// whole Message with the same usage.
func TestCompactionUsage_EveryClientAPI(t *testing.T) {
	// The sums over the two iterations.
	want := billed{Input: 48 + 2615 + 50090 + 2 + 2615 + 559, CacheRead: 2615 * 2, CacheWrite: 50090 + 559, Output: 496 + 97}
	usage := `{"input_tokens":2,"cache_creation_input_tokens":559,"cache_read_input_tokens":2615,"output_tokens":97,"iterations":` + anthropicCompactionIterations + `}`
	stream := goldentest.ReadFixture(t, "anthropic/stream/web-search-cache-read-create.mirascope.sse")
	stream = []byte(gjsonReplaceLastDeltaUsage(t, string(stream), usage))
	whole := []byte(`{"id":"msg_1","type":"message","role":"assistant","model":"claude-opus-4-6","content":[{"type":"compaction","content":"Summary."},{"type":"text","text":"Hi"}],"stop_reason":"end_turn","stop_sequence":null,"usage":` + usage + `}`)

	for _, up := range []struct {
		name   string
		decode func(emit translate.Emit)
	}{
		{"streamed upstream", func(emit translate.Emit) { decodeStream(t, anthropic.New(), stream, emit) }},
		{"whole upstream", func(emit translate.Emit) {
			if err := anthropic.New().DecodeResponse(whole, emit); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(up.name, func(t *testing.T) {
			o := encodeEveryClient(t, up.decode)

			chatUsage := func(u gjson.Result) billed {
				// chat has no field for cache writes: they are in prompt_tokens.
				return billed{Input: u.Get("prompt_tokens").Int(), CacheRead: u.Get("prompt_tokens_details.cached_tokens").Int(), CacheWrite: want.CacheWrite, Output: u.Get("completion_tokens").Int()}
			}
			respUsage := func(u gjson.Result) billed {
				return billed{Input: u.Get("input_tokens").Int(), CacheRead: u.Get("input_tokens_details.cached_tokens").Int(),
					CacheWrite: u.Get("input_tokens_details.cache_write_tokens").Int(), Output: u.Get("output_tokens").Int()}
			}
			msgsUsage := func(u gjson.Result) billed {
				r, w := u.Get("cache_read_input_tokens").Int(), u.Get("cache_creation_input_tokens").Int()
				return billed{Input: u.Get("input_tokens").Int() + r + w, CacheRead: r, CacheWrite: w, Output: u.Get("output_tokens").Int()}
			}
			last := func(body []byte, typ string) gjson.Result {
				var r gjson.Result
				for _, d := range sseData(body) {
					if ev := gjson.Parse(d); typ == "" && ev.Get("usage").Exists() || typ != "" && ev.Get("type").String() == typ {
						r = ev
					}
				}
				return r
			}
			u := o.chatWhole.Usage
			got := map[string]billed{
				"chat stream":      chatUsage(last(o.chatOut, "").Get("usage")),
				"chat whole":       {Input: int64(u.PromptTokens), CacheRead: int64(u.CachedTokens), CacheWrite: int64(u.CacheCreationTokens), Output: int64(u.CompletionTokens)},
				"responses stream": respUsage(last(o.respOut, "response.completed").Get("response.usage")),
				"responses whole":  respUsage(gjson.ParseBytes(o.respWhole.AppendResponse(nil)).Get("usage")),
				"messages stream":  msgsUsage(last(o.msgsOut, "message_delta").Get("usage")),
				"messages whole":   msgsUsage(gjson.ParseBytes(o.msgsWhole.AppendMessage(nil, "msg_1", "m")).Get("usage")),
			}
			for where, g := range got {
				if diff := cmp.Diff(want, g); diff != "" {
					t.Errorf("%s: usage (-want +got):\n%s", where, diff)
				}
			}
		})
	}
}

// gjsonReplaceLastDeltaUsage returns the SSE body with the usage of its message_delta
// event replaced by usage.
func gjsonReplaceLastDeltaUsage(t *testing.T, body, usage string) string {
	t.Helper()
	var out []byte
	found := false
	for _, line := range strings.Split(strings.TrimSuffix(body, "\n"), "\n") {
		if d, ok := strings.CutPrefix(line, "data: "); ok && gjson.Get(d, "type").String() == "message_delta" {
			u := gjson.Get(d, "usage")
			line = "data: " + d[:u.Index] + usage + d[u.Index+len(u.Raw):]
			found = true
		}
		out = append(out, line...)
		out = append(out, '\n')
	}
	if !found {
		t.Fatal("no message_delta in the recording")
	}
	return string(out)
}
