package openai

import (
	"bytes"
	"errors"
	"os"
	"reflect"
	"testing"

	"github.com/agate-gateway/agate/internal/jsonx"
	"github.com/agate-gateway/agate/translate"
	"github.com/agate-gateway/agate/translate/internal/goldentest"
)

// indexedDecodeResponse is DecodeResponse as it was before its one pass (answer.read):
// the body checked and indexed (IndexRoot), then its members read by decodeOpenAIChunk.
// The tests' reference for the one-pass decode.
func indexedDecodeResponse(body []byte, emit translate.Emit) error {
	sc := jsonx.NewScanner(jsonx.View(body))
	root, ok := sc.IndexRoot()
	if !ok {
		return upstreamMalformed("openai", body)
	}
	var top chunkMembers
	top.read(&sc, root)
	if e := top[chunkError]; e.Kind == jsonx.Object {
		return openAIError(&sc, 502, e)
	}
	if root.Kind != jsonx.Object || top[chunkChoices].Kind != jsonx.Array {
		return upstreamMalformed("openai", body)
	}
	started, finished := false, false
	return decodeOpenAIChunk(&sc, &top, &started, &finished, emit)
}

// answerSeeds are completions that tell the one pass's rules apart: the first of each
// name (top level, choice, message, usage), a message before or after a delta of any
// kind, more choices than the pass keeps, tool_calls as an array, an object or a scalar,
// logprobs, an error object before or after the choices, and bodies that are not one
// JSON object.
var answerSeeds = []string{
	`{"id":"a","id":"b","model":"m","model":"n","choices":[{"index":1,"index":2,"message":{"content":"x","content":"y"},"finish_reason":"stop","finish_reason":"length"}],"usage":{"prompt_tokens":1},"usage":{"prompt_tokens":2}}`,
	`{"choices":[{"message":{"content":"m"},"delta":{"content":"d"}}]}`,
	`{"choices":[{"message":{"content":"m"},"delta":null}]}`,
	`{"choices":[{"delta":null,"message":{"content":"m"}}]}`,
	`{"choices":[{"delta":{"content":"d"},"message":{"content":"m"},"delta":{"content":"e"}}]}`,
	`{"choices":[{"message":{"content":"m"},"message":{"content":"n"}}]}`,
	`{"choices":[{"message":"s","message":{"content":"n"}}]}`,
	`{"choices":[{"index":0,"message":{"content":"a"},"finish_reason":"stop"},{"index":1,"message":{"content":"b"},"finish_reason":"stop"},{"index":2,"message":{"content":"c"},"finish_reason":"length"}],"usage":{"prompt_tokens":3,"completion_tokens":3}}`,
	`{"choices":[1,"x",null,{"message":{"content":"z"}}]}`,
	`{"choices":[{"message":{"reasoning":"r","reasoning_content":"","refusal":"no","tool_calls":[{"id":"c","function":{"name":"f","name":"g","arguments":"{}"}},{"index":5,"function":{"arguments":"1"}},7]},"finish_reason":"tool_calls","logprobs":{"content":[{"token":"a","logprob":-1,"bytes":[97],"top_logprobs":[{"token":"b","logprob":-2,"bytes":[98,1]}]}]}}],"usage":{"prompt_tokens":1}}`,
	`{"choices":[{"message":{"reasoning":5,"content":"\u00e9\"","tool_calls":{"a":{"id":"x","function":{"name":"f"}},"b":{"id":"y"}}},"logprobs":{"content":[]}}],"usage":[1]}`,
	`{"choices":[{"message":{"reasoning_content":"think","tool_calls":"no"},"logprobs":null}],"usage":null}`,
	`{"choices":[],"error":{"message":"boom","type":"server_error","code":429}}`,
	`{"error":{"message":"boom","type":"server_error"},"choices":[]}`,
	`{"error":null,"choices":[{"message":{"content":"m"}}]}`,
	`{"choices":{},"choices":[]}`, `{"choices":null}`, `{"choices":[],"choices":{}}`,
	`[{"choices":[]}]`, `{}`, `"s"`, `{"choices":[]} x`, `{"choices":[{"message":{"content":"m"}]}`,
	` { "id" : "a" , "choices" : [ { "message" : { "content" : "m" } , "finish_reason" : "stop" } ] , "usage" : { "prompt_tokens" : 1 } } `,
}

// FuzzDecodeMatchesIndexed holds DecodeResponse, which reads the answer in one pass, to
// the indexed decode it replaced (indexedDecodeResponse): on any body both emit the same
// events and return the same error, also when emit fails at any event. Seeded from the
// recorded completions (recordedCompletions) and answerSeeds.
func FuzzDecodeMatchesIndexed(f *testing.F) {
	for _, b := range recordedCompletions(f) {
		f.Add(b, uint8(0))
		f.Add(b, uint8(2))
	}
	for _, s := range answerSeeds {
		f.Add([]byte(s), uint8(0))
	}
	f.Fuzz(func(t *testing.T, data []byte, failAt uint8) {
		checkDecodeMatchesIndexed(t, data, int(failAt))
	})
}

// TestDecodeMatchesIndexed runs the fuzz target's check over its seeds, with emit
// failing at each event in turn.
func TestDecodeMatchesIndexed(t *testing.T) {
	var bodies [][]byte
	bodies = append(bodies, recordedCompletions(t)...)
	for _, s := range answerSeeds {
		bodies = append(bodies, []byte(s))
	}
	for _, b := range bodies {
		for failAt := range 12 {
			checkDecodeMatchesIndexed(t, b, failAt)
		}
	}
}

var errEmit = errors.New("emit failed")

// checkDecodeMatchesIndexed decodes data with DecodeResponse and indexedDecodeResponse,
// each with an emit that records a copy of each event and fails at event failAt (never
// when failAt is 0), and fails t unless the events and errors are the same.
func checkDecodeMatchesIndexed(t *testing.T, data []byte, failAt int) {
	t.Helper()
	record := func(to *[]translate.Event) translate.Emit {
		return func(ev *translate.Event) error {
			*to = append(*to, *ev)
			if len(*to) == failAt {
				return errEmit
			}
			return nil
		}
	}
	var got, want []translate.Event
	gerr := openAIChat{}.DecodeResponse(bytes.Clone(data), record(&got))
	werr := indexedDecodeResponse(bytes.Clone(data), record(&want))
	if !reflect.DeepEqual(got, want) || !reflect.DeepEqual(gerr, werr) {
		t.Fatalf("DecodeResponse(%q) failing at event %d:\n%+v %v\nthe indexed decode's:\n%+v %v", data, failAt, got, gerr, want, werr)
	}
}

// TestDecodeResponseInto: the gateway's decode into its own Event gives DecodeResponse's
// events and allocates nothing for the bench's answer.
func TestDecodeResponseInto(t *testing.T) {
	bench, err := os.ReadFile("testdata/bench-answer.json")
	if err != nil {
		t.Fatal(err)
	}
	bodies := recordedCompletions(t)
	for _, s := range answerSeeds {
		bodies = append(bodies, []byte(s))
	}
	p := New()
	goldentest.CheckDecodeInto(t, p, p.(translate.ResponseDecoderInto), bodies, bench)
}
