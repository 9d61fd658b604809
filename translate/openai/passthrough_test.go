package openai

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/agate-gateway/agate/internal/jsonx"
	"github.com/agate-gateway/agate/translate"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func passthroughSeed(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// recordedStreams are the recorded OpenAI streams in testdata.
var recordedStreams = []string{"text-include-usage.mirascope.sse", "parallel-tool-calls-include-usage.mirascope.sse"}

// recordedLines returns the lines of the named recordings in testdata, in order, without
// their line ends.
func recordedLines(t testing.TB, names ...string) []string {
	t.Helper()
	var lines []string
	for _, name := range names {
		sc := bufio.NewScanner(bytes.NewReader(passthroughSeed(t, name)))
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			lines = append(lines, sc.Text())
		}
	}
	return lines
}

// TestOpenAIChunkRewriter pins what the passthrough reads of a chunk and how it rewrites
// it: the first chunk fixes id and created, every chunk gets the client's model, usage
// leaves only when the client asked for it, and what is not a chunk is an error.
func TestOpenAIChunkRewriter(t *testing.T) {
	tests := []struct {
		name         string
		includeUsage bool
		chunks       []string
		want         []string
		wantChunk    []Chunk
		wantErr      string
	}{
		{
			name:   "id and created of the first chunk",
			chunks: []string{`{"id":"up-1","object":"x","created":7,"model":"gpt-up","choices":[{"index":0,"delta":{"content":"a"}}]}`, `{"id":"up-2","created":9,"choices":[{"index":0,"finish_reason":"stop"}]}`},
			want: []string{
				"data: {\"id\":\"up-1\",\"object\":\"chat.completion.chunk\",\"created\":7,\"model\":\"gpt\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\"}}]}\n\n",
				"data: {\"id\":\"up-1\",\"object\":\"chat.completion.chunk\",\"created\":7,\"model\":\"gpt\",\"choices\":[{\"index\":0,\"finish_reason\":\"stop\"}]}\n\n",
			},
			wantChunk: []Chunk{{Choices: 1, OutputBytes: 1}, {Choices: 1, Finished: true}},
		},
		{
			name: "output bytes: every string a delta carries, as written, in any layout",
			chunks: []string{
				`{"id":"a","created":1,"choices":[{"index":0,"delta":{"content":"abcd"},"logprobs":null,"finish_reason":null}]}`,
				`{"id":"a","created":1,"choices":[{"index":0,"delta":{"content":"a\"b"},"logprobs":null,"finish_reason":null}]}`,
				`{"id":"a","created":1,"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{}"}}]},"logprobs":null,"finish_reason":null}]}`,
				`{"id":"a","created":1,"choices":[{"index":0,"delta":{"role":"assistant","content":"ab","reasoning_content":"cd","refusal":null}},` +
					`{"index":1,"delta":{"reasoning":"e","refusal":"fg","tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"get","arguments":""}},{"function":{"arguments":"[1]"}}]}}]}`,
				`{"id":"a","created":1,"choices":[{"index":0,"delta":{"content":null},"finish_reason":"stop"}]}`,
			},
			want: []string{
				"data: {\"id\":\"a\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"gpt\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"abcd\"},\"logprobs\":null,\"finish_reason\":null}]}\n\n",
				"data: {\"id\":\"a\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"gpt\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\\\"b\"},\"logprobs\":null,\"finish_reason\":null}]}\n\n",
				"data: {\"id\":\"a\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"gpt\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"{}\"}}]},\"logprobs\":null,\"finish_reason\":null}]}\n\n",
				"data: {\"id\":\"a\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"gpt\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"ab\",\"reasoning_content\":\"cd\",\"refusal\":null}},{\"index\":1,\"delta\":{\"reasoning\":\"e\",\"refusal\":\"fg\",\"tool_calls\":[{\"index\":0,\"id\":\"call_1\",\"type\":\"function\",\"function\":{\"name\":\"get\",\"arguments\":\"\"}},{\"function\":{\"arguments\":\"[1]\"}}]}}]}\n\n",
				"data: {\"id\":\"a\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"gpt\",\"choices\":[{\"index\":0,\"delta\":{\"content\":null},\"finish_reason\":\"stop\"}]}\n\n",
			},
			wantChunk: []Chunk{{Choices: 1, OutputBytes: 4}, {Choices: 1, OutputBytes: 4}, {Choices: 1, OutputBytes: 2},
				{Choices: 2, OutputBytes: 2 + 2 + 1 + 2 + 3 + 3}, {Choices: 1, Finished: true}},
		},
		{
			name:      "azure prompt filter chunk gets the gateway's id and clock",
			chunks:    []string{`{"choices":[],"created":0,"id":"","model":"","object":"","prompt_filter_results":[]}`},
			want:      []string{"data: {\"id\":\"chatcmpl-gw\",\"object\":\"chat.completion.chunk\",\"created\":42,\"model\":\"gpt\",\"choices\":[],\"prompt_filter_results\":[]}\n\n"},
			wantChunk: []Chunk{{}},
		},
		{
			name:      "usage read and dropped",
			chunks:    []string{`{"id":"a","created":1,"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":4,"prompt_tokens_details":{"cached_tokens":1}}}`},
			want:      []string{"data: {\"id\":\"a\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"gpt\",\"choices\":[]}\n\n"},
			wantChunk: []Chunk{{Usage: translate.Usage{PromptTokens: 3, CompletionTokens: 4, CachedTokens: 1}, HasUsage: true}},
		},
		{
			name:         "usage kept when asked",
			includeUsage: true,
			chunks:       []string{`{"id":"a","created":1,"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":4}}`},
			want:         []string{"data: {\"id\":\"a\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"gpt\",\"choices\":[],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":4}}\n\n"},
			wantChunk:    []Chunk{{Usage: translate.Usage{PromptTokens: 3, CompletionTokens: 4}, HasUsage: true}},
		},
		{
			name:      "a repeated name: the first is read, each is sent; a name a decoder could take for the head's is dropped",
			chunks:    []string{`{"id":"a","created":1,"choices":[{"index":0,"finish_reason":"stop"}],"choices":[{},{}],"Usage":{"prompt_tokens":9},"Model":"x","extra":true}`},
			want:      []string{"data: {\"id\":\"a\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"gpt\",\"choices\":[{\"index\":0,\"finish_reason\":\"stop\"}],\"choices\":[{},{}],\"extra\":true}\n\n"},
			wantChunk: []Chunk{{Choices: 1, Finished: true}},
		},
		{
			name: "choices: each counted; the first finish_reason of a choice read, a nested or empty one not",
			chunks: []string{`{"id":"a","created":1,"choices":[{"index":0,"delta":{"finish_reason":"stop"},"finish_reason":null},` +
				`{"index":1,"finish_reason":""},1,{"finish_reason":null,"finish_reason":"stop"}]}`,
				`{"choices" : [ {"index":0 , "finish_reason" : "length"} ] }`},
			want: []string{
				"data: {\"id\":\"a\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"gpt\",\"choices\":[{\"index\":0,\"delta\":{\"finish_reason\":\"stop\"},\"finish_reason\":null},{\"index\":1,\"finish_reason\":\"\"},1,{\"finish_reason\":null,\"finish_reason\":\"stop\"}]}\n\n",
				"data: {\"id\":\"a\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"gpt\",\"choices\":[ {\"index\":0 , \"finish_reason\" : \"length\"} ]}\n\n",
			},
			wantChunk: []Chunk{{Choices: 4}, {Choices: 1, Finished: true}},
		},
		{
			name:      "choices that are not an array, then an array: nothing read",
			chunks:    []string{`{"id":"a","created":1,"choices":null,"choices":[{"finish_reason":"stop"}]}`},
			want:      []string{"data: {\"id\":\"a\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"gpt\",\"choices\":null,\"choices\":[{\"finish_reason\":\"stop\"}]}\n\n"},
			wantChunk: []Chunk{{}},
		},
		{
			name:      "a name that folds to a head name through a non-ASCII letter is dropped (U+017F, U+212A)",
			chunks:    []string{`{"id":"a","created":1,"choice\u017f":1,"choiceſ":2,"Usage":3,"\u212aey":4,"mode":5,"choices":[]}`},
			want:      []string{"data: {\"id\":\"a\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"gpt\",\"\u212aey\":4,\"mode\":5,\"choices\":[]}\n\n"},
			wantChunk: []Chunk{{}},
		},
		{name: "a choice cut short", chunks: []string{`{"id":"a","created":1,"choices":[{"index":0,}]}`}, wantErr: `the upstream of backend up sent a stream event that is not JSON: "{\"id\":\"a\",\"created\":1,\"choices\":[{\"index\":0,}]}"`},
		{name: "choices cut short", chunks: []string{`{"id":"a","created":1,"choices":[{"index":0}`}, wantErr: `the upstream of backend up sent a stream event that is not JSON: "{\"id\":\"a\",\"created\":1,\"choices\":[{\"index\":0}"`},
		{name: "not JSON", chunks: []string{`<html>`}, wantErr: `the upstream of backend up sent a stream event that is not JSON: "<html>"`},
		{name: "not an object", chunks: []string{`[1]`}, wantErr: `the upstream of backend up sent a stream event that is not a JSON object: "[1]"`},
		{name: "error object", chunks: []string{`{"error":{"message":"overloaded","type":"server_error"}}`}, wantErr: "overloaded"},
		{name: "error object after a chunk", chunks: []string{`{"id":"a","created":1,"choices":[]}`, `{"choices":[],"error":{"message":"overloaded","type":"server_error"}}`}, wantErr: "overloaded"},
		{name: "not JSON after a chunk", chunks: []string{`{"id":"a","created":1,"choices":[]}`, `{"choices":[]} x`}, wantErr: `the upstream of backend up sent a stream event that is not JSON: "{\"choices\":[]} x"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := ChunkRewriter{Backend: "up", Model: []byte(`"gpt"`), FallbackID: "chatcmpl-gw", IncludeUsage: tt.includeUsage,
				Now: func() int64 { return 42 }}
			var got []string
			var gotChunk []Chunk
			for _, c := range tt.chunks {
				out, ch, err := p.AppendChunk(nil, []byte(c))
				if err != nil {
					var ue *translate.UpstreamError
					if !errors.As(err, &ue) || ue.Status != 502 || ue.Message != tt.wantErr {
						t.Fatalf("error %v, want a 502 with message %q", err, tt.wantErr)
					}
					return
				}
				got, gotChunk = append(got, string(out)), append(gotChunk, ch)
			}
			if tt.wantErr != "" {
				t.Fatalf("no error, want %q", tt.wantErr)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("chunks (-want +got):\n%s", diff)
			}
			// What a chunk says of its text is TestChunkRewriter_FollowsText's.
			if diff := cmp.Diff(tt.wantChunk, gotChunk, cmpopts.IgnoreFields(Chunk{}, "Text", "Finish", "Opaque", "Reasoning")); diff != "" {
				t.Errorf("read (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRewriteOpenAICompletion(t *testing.T) {
	tests := []struct {
		name      string
		body      string
		want      string
		wantUsage translate.Usage
		wantErr   string
	}{
		{
			name:      "model replaced, usage read",
			body:      `{"id":"c","model":"gpt-up","choices":[],"usage":{"prompt_tokens":1,"completion_tokens":2}}`,
			want:      `{"model":"gpt","id":"c","choices":[],"usage":{"prompt_tokens":1,"completion_tokens":2}}`,
			wantUsage: translate.Usage{PromptTokens: 1, CompletionTokens: 2},
		},
		{name: "not JSON", body: `oops`, wantErr: `the upstream of backend up answered with a body that is not JSON: "oops"`},
		{name: "not an object", body: `"x"`, wantErr: `the upstream of backend up answered with a body that is not a JSON object: "\"x\""`},
		{name: "no choices", body: `{"id":"c"}`, wantErr: "the upstream of backend up answered with a JSON object that is not a chat completion (no choices)"},
		{name: "error object", body: `{"error":{"message":"nope"}}`, wantErr: "nope"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, u, err := RewriteCompletion(nil, "up", []byte(tt.body), "gpt")
			gotErr := ""
			if ue := (*translate.UpstreamError)(nil); errors.As(err, &ue) && ue.Status == 502 {
				gotErr = ue.Message
			} else if err != nil {
				gotErr = "not a 502: " + err.Error()
			}
			if gotErr != tt.wantErr {
				t.Fatalf("error %q, want %q", gotErr, tt.wantErr)
			}
			if diff := cmp.Diff(tt.want, string(got)); diff != "" {
				t.Errorf("body (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantUsage, u); diff != "" {
				t.Errorf("usage (-want +got):\n%s", diff)
			}
		})
	}
}

// FuzzOpenAIChunkRewriter: whatever an upstream sends as a chunk, the rewriter either
// rejects it or returns one JSON object whose id, object, created and model are the
// stream's (each exactly once), without usage unless the client asked for it.
func FuzzOpenAIChunkRewriter(f *testing.F) {
	for _, name := range recordedStreams {
		for _, line := range recordedLines(f, name) {
			if d, ok := strings.CutPrefix(line, "data:"); ok {
				f.Add([]byte(strings.TrimPrefix(d, " ")), false)
			}
		}
	}
	for _, line := range bytes.Split(passthroughSeed(f, "azure-model-router.vercel.chunks.txt"), []byte("\n")) {
		f.Add(line, true)
	}
	f.Add([]byte(`{"id":1,"id":"a","created":"x","usage":{},"usage":null,"\u0069d":"b"}`), false)
	f.Add([]byte(`[1]`), false)
	f.Add([]byte(`{"choices":[{"finish_reason":"stop"}],"error":{"message":"x"}}`), true)
	f.Fuzz(func(t *testing.T, data []byte, includeUsage bool) {
		p := ChunkRewriter{Backend: "up", Model: []byte(`"gpt"`), FallbackID: "chatcmpl-gw", IncludeUsage: includeUsage,
			Now: func() int64 { return 42 }}
		for range 2 { // the first chunk fixes the head; the second must keep it
			out, ch, err := p.AppendChunk(nil, data)
			if err != nil {
				var ue *translate.UpstreamError
				if !errors.As(err, &ue) || ue.Status != 502 {
					t.Fatalf("error %v is not a 502", err)
				}
				return
			}
			payload, ok := bytes.CutPrefix(out, []byte("data: "))
			if !ok || !bytes.HasSuffix(payload, []byte("\n\n")) {
				t.Fatalf("not one SSE event: %q", out)
			}
			top, ok := jsonMembers(payload[:len(payload)-2])
			if !ok {
				t.Fatalf("not a JSON object: %q\nfrom %q", out, data)
			}
			count := map[string]int{}
			for _, m := range top {
				count[m.name]++
			}
			for _, k := range []string{"id", "object", "created", "model"} {
				if count[k] != 1 {
					t.Fatalf("%s appears %d times: %q", k, count[k], out)
				}
			}
			if !includeUsage && count["usage"] > 0 {
				t.Fatalf("usage forwarded unasked: %q", out)
			}
			var head struct {
				Object string `json:"object"`
				Model  string `json:"model"`
			}
			if err := json.Unmarshal(payload, &head); err != nil || head.Object != "chat.completion.chunk" || head.Model != "gpt" {
				t.Fatalf("head %+v (%v): %q", head, err, out)
			}
			if want := choicesRead(data); ch.Choices != want.Choices || ch.Finished != want.Finished {
				t.Fatalf("read %d choices, finished %t; want %d, %t: %q", ch.Choices, ch.Finished, want.Choices, want.Finished, data)
			}
		}
	})
}

// choicesRead is what AppendChunk must report of a valid chunk's choices, read the slow
// way, one lookup after another: the first choices member, if an array, has so many
// elements, and is finished if the first finish_reason of an element is a non-empty string.
func choicesRead(data []byte) Chunk {
	var ch Chunk
	sc := jsonx.NewScanner(string(data))
	root, ok := sc.Root()
	if !ok {
		return ch
	}
	if choices := sc.Get(root, "choices"); choices.Kind == jsonx.Array {
		sc.Each(choices, func(_ string, c jsonx.Value) bool {
			ch.Choices++
			if f := sc.Get(c, "finish_reason"); f.Kind == jsonx.String && f.Str != "" {
				ch.Finished = true
			}
			return true
		})
	}
	return ch
}

// TestRewriteCompletion_AppendsAndCopies pins the buffer contract the gateway relies on to
// pool both sides: the completion is appended to dst, and it never aliases body, which is
// overwritten after the call.
func TestRewriteCompletion_AppendsAndCopies(t *testing.T) {
	body := []byte(`{"id":"c","model":"gpt-up","choices":[{"message":{"content":"hi"}}]}`)
	dst := append(make([]byte, 0, 256), "kept:"...)
	got, _, err := RewriteCompletion(dst, "up", body, `a "quoted" model`)
	if err != nil {
		t.Fatal(err)
	}
	for i := range body {
		body[i] = 'X'
	}
	want := `kept:{"model":"a \"quoted\" model","id":"c","choices":[{"message":{"content":"hi"}}]}`
	if string(got) != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	if &got[0] != &dst[:1][0] {
		t.Error("the completion was not appended in dst's memory, which had room")
	}
}

// BenchmarkRewriteCompletion is the passthrough's check and model rewrite of a
// non-streaming chat completion, into a reused buffer: a recorded one with parallel tool
// calls, and the end-to-end benchmark's answer (a ~700-byte text and a full usage object).
func BenchmarkRewriteCompletion(b *testing.B) {
	for _, c := range []struct{ name, path string }{
		{"parallel-tool-calls", "../../testdata/fixtures/openai-chat/json/parallel-tool-calls.mirascope.json"},
		{"bench-answer", "testdata/bench-answer.json"},
	} {
		b.Run(c.name, func(b *testing.B) {
			body, err := os.ReadFile(c.path)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.SetBytes(int64(len(body)))
			var buf []byte // reused, as the gateway appends to a pooled response body
			for b.Loop() {
				if buf, _, err = RewriteCompletion(buf[:0], "up", body, "gpt"); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkAppendChunk is the passthrough's check and rewrite of each chunk of a recorded
// stream (a short text answer with its usage chunk, and parallel tool calls), per chunk,
// into a reused buffer; and of the bench's mock stream (../shared/bench: OpenAI's chunks
// without usage:null and obfuscation, so that the choices are their last member).
func BenchmarkAppendChunk(b *testing.B) {
	const head = `{"id":"chatcmpl-CoDWl5rS0pF10P0W0TDVgY3NA26dk","object":"chat.completion.chunk","created":1766084435,"model":"oai-bench","system_fingerprint":"fp_bench","choices":[{"index":0,"delta":`
	mock := [][]byte{[]byte(head + `{"role":"assistant","content":"","refusal":null},"logprobs":null,"finish_reason":null}]}`)}
	for i := range 200 {
		mock = append(mock, []byte(head+`{"content":" word`+strconv.Itoa(i)+`"},"logprobs":null,"finish_reason":null}]}`))
	}
	mock = append(mock, []byte(head+`{},"logprobs":null,"finish_reason":"stop"}]}`))
	for _, name := range []string{recordedStreams[0], recordedStreams[1], "bench-mock"} {
		var chunks [][]byte
		if name == "bench-mock" {
			chunks = mock
		} else {
			for _, line := range recordedLines(b, name) {
				if d, ok := strings.CutPrefix(line, "data:"); ok && strings.TrimSpace(d) != "[DONE]" {
					chunks = append(chunks, []byte(strings.TrimPrefix(d, " ")))
				}
			}
		}
		b.Run(strings.TrimSuffix(name, ".mirascope.sse"), func(b *testing.B) {
			b.ReportAllocs()
			p := ChunkRewriter{Backend: "up", Model: []byte(`"gpt"`), FallbackID: "chatcmpl-gw", Now: func() int64 { return 42 }}
			var buf []byte
			for b.Loop() {
				for _, c := range chunks {
					var err error
					if buf, _, err = p.AppendChunk(buf[:0], c); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(chunks)), "ns/chunk")
		})
	}
}

// FuzzChunkLeadMatchesWholeRead holds the reuse of a chunk's lead (the members before its
// choices, as the last chunk had them) to reading the chunk whole: after the same first
// chunk, a second chunk gives the same event, the same Chunk and the same error whether
// or not the rewriter kept the first chunk's lead. Seeded with consecutive recorded
// chunks and with pairs that share a lead up to the byte where they part.
func FuzzChunkLeadMatchesWholeRead(f *testing.F) {
	for _, name := range recordedStreams {
		var prev []byte
		for _, line := range recordedLines(f, name) {
			d, ok := strings.CutPrefix(line, "data: ")
			if !ok || d == "[DONE]" {
				continue
			}
			if prev != nil {
				f.Add(prev, []byte(d), true)
			}
			prev = []byte(d)
		}
	}
	const lead = `{"id":"c1","object":"chat.completion.chunk","created":17,"model":"m"`
	for _, second := range []string{
		lead + `,"choices":[]}`,
		lead + `}`,
		lead + `7,"choices":[]}`,
		lead + `,"choices":[{"finish_reason":"stop"}],"usage":{"prompt_tokens":1}}`,
		lead + `,"error":{"message":"x"}}`,
		lead + `,"choices":[],"choices":[{"x":1}]}`,
		lead + `,"choices":[]`,
		lead + ` ,"choices":[]}`,
	} {
		f.Add([]byte(lead+`,"choices":[{"delta":{"content":"a"}}]}`), []byte(second), false)
	}
	// The choices of a text or argument chunk after the lead (fastTail): last, as the bench's
	// mock writes them, followed by more members, or not quite in OpenAI's layout.
	const text = `,"choices":[{"index":0,"delta":{"content":"a"},"logprobs":null,"finish_reason":null}]`
	for _, second := range []string{
		lead + text + `}`,
		lead + `,"choices":[{"index":0,"delta":{"content":"\u00e9\n\"x"},"logprobs":null,"finish_reason":null}]}`,
		lead + `,"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"a\""}}]},"logprobs":null,"finish_reason":null}]}`,
		lead + `,"choices":[{"index":0,"delta":{"content":"\x"},"logprobs":null,"finish_reason":null}]}`,
		lead + `,"choices":[{"index":0,"delta":{"content":"a` + "\x01" + `"},"logprobs":null,"finish_reason":null}]}`,
		lead + text + `} `,
		lead + text + `}}`,
		lead + text,
		lead + text + `,"usage":null,"obfuscation":"xyz"}`,
		lead + text + `,"choices":[]}`,
		lead + text + `,"usage":{"prompt_tokens":1,"completion_tokens":2,"total_tokens":3}}`,
		lead + text + `,"Model":"x"}`,
		lead + `,"choices":[{"index":0,"delta":{"content":"a"},"logprobs":null,"finish_reason":"stop"}]}`,
	} {
		f.Add([]byte(lead+text+`}`), []byte(second), false)
		f.Add([]byte(lead+text+`}`), []byte(second), true)
	}
	f.Add([]byte(`{"id":"c1","created":1,"choices":[]}`), []byte(`{"id":"c1","created":12,"choices":[]}`), true)
	f.Add([]byte(`{"usage":null,"id":"c","choices":[]}`), []byte(`{"usage":null,"id":"c","choices":[]}`), true)
	f.Fuzz(func(t *testing.T, first, second []byte, includeUsage bool) {
		newRewriter := func() *ChunkRewriter {
			return &ChunkRewriter{Backend: "up", Model: []byte(`"gpt"`), FallbackID: "chatcmpl-gw", IncludeUsage: includeUsage,
				Now: func() int64 { return 42 }}
		}
		kept, whole := newRewriter(), newRewriter()
		kept.AppendChunk(nil, first)
		whole.AppendChunk(nil, first)
		whole.lead, whole.leadOut, whole.leadN = nil, nil, 0
		out1, ch1, err1 := kept.AppendChunk(nil, second)
		out2, ch2, err2 := whole.AppendChunk(nil, second)
		if (err1 == nil) != (err2 == nil) || err1 != nil && err1.Error() != err2.Error() {
			t.Fatalf("errors differ: with the lead %v, read whole %v\nfirst %q\nsecond %q", err1, err2, first, second)
		}
		if !bytes.Equal(out1, out2) || ch1 != ch2 {
			t.Fatalf("with the lead %q %+v\nread whole    %q %+v\nfirst %q\nsecond %q", out1, ch1, out2, ch2, first, second)
		}
	})
}

// TestChunkLead_IsReused checks that the lead of a recorded OpenAI stream is in fact
// reused from its second chunk on (the members before choices repeat), so that the fuzz
// target above compares two different paths: what the kept lead wrote is replaced by a
// marker after the first chunk, and every later chunk must carry the marker.
func TestChunkLead_IsReused(t *testing.T) {
	p := ChunkRewriter{Backend: "up", Model: []byte(`"gpt"`), FallbackID: "chatcmpl-gw", Now: func() int64 { return 42 }}
	const marker = `,"marker":1`
	chunks := 0
	for _, line := range recordedLines(t, "text-include-usage.mirascope.sse") {
		d, ok := strings.CutPrefix(line, "data: ")
		if !ok || d == "[DONE]" {
			continue
		}
		out, _, err := p.AppendChunk(nil, []byte(d))
		if err != nil {
			t.Fatal(err)
		}
		if chunks++; chunks == 1 {
			if len(p.lead) == 0 {
				t.Fatal("the first chunk left no lead")
			}
			p.leadOut = []byte(marker)
			continue
		}
		if !bytes.Contains(out, []byte(marker)) {
			t.Fatalf("chunk %d was read whole, not from the kept lead: %q", chunks, out)
		}
	}
	if chunks < 3 {
		t.Fatalf("only %d chunks", chunks)
	}
}

// FuzzFastChoicesMatchesGeneral holds fastChoices to the general reader of a choices
// array: on any input at a '[', whatever it accepts the general reader accepts too, with
// the same array, the same count and finish, and the cursor at the same place; what it
// refuses (a bad content string) the general reader refuses as well. Seeds: the choices of
// every recorded chunk, and near misses of the layout.
func FuzzFastChoicesMatchesGeneral(f *testing.F) {
	for _, name := range recordedStreams {
		for _, line := range recordedLines(f, name) {
			if _, c, ok := strings.Cut(line, `"choices":`); ok {
				f.Add(c)
			}
		}
	}
	for _, s := range []string{
		`[{"index":0,"delta":{"content":"a"},"logprobs":null,"finish_reason":null}]`,
		`[{"index":00,"delta":{"content":"a"},"logprobs":null,"finish_reason":null}]`,
		`[{"index":12,"delta":{"content":"a\"b\u00e9"},"logprobs":null,"finish_reason":null}],"usage":null}`,
		`[{"index":0,"delta":{"content":"a\x"},"logprobs":null,"finish_reason":null}]`,
		`[{"index":0,"delta":{"content":"a` + "\x01" + `"},"logprobs":null,"finish_reason":null}]`,
		`[{"index":0,"delta":{"content":"a"},"logprobs":null,"finish_reason":"stop"}]`,
		`[{"index":0,"delta":{"content":"a"},"logprobs":null,"finish_reason":null},{"index":1}]`,
		`[{"index":0,"delta":{"content":"a"} ,"logprobs":null,"finish_reason":null}]`,
		`[{"index":0,"delta":{"content":"a"},"logprobs":null,"finish_reason":null}`,
		`[{"index":1e2,"delta":{"content":"a"},"logprobs":null,"finish_reason":null}]`,
		`[{"index":0,"delta":{"content":"unterminated`,
		`[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"arguments":"{\"a\": 1"}}]},"logprobs":null,"finish_reason":null}]`,
		`[{"index":0,"delta":{"tool_calls":[{"index":01,"function":{"arguments":"x"}}]},"logprobs":null,"finish_reason":null}]`,
		`[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"arguments":"x"}}]},"logprobs":null,"finish_reason":"tool_calls"}]`,
		`[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"arguments":"x"}},{"index":2}]},"logprobs":null,"finish_reason":null}]`,
		`[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"arguments":"x"}}]}],"logprobs":null,"finish_reason":null}]`,
		`[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"arguments":"x"}}}]},"logprobs":null,"finish_reason":null}]`,
		`[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"arguments":"\q"}}]},"logprobs":null,"finish_reason":null}]`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !strings.HasPrefix(s, "[") {
			return
		}
		var fast, general jsonx.Scanner
		fast.Reset(s)
		general.Reset(s)
		var v1, v2 jsonx.Value
		var chFast Chunk
		matched, ok1 := fastChoices(&fast, &v1, &chFast)
		if !matched {
			if fast.Pos() != 0 || fast.Failed() {
				t.Fatalf("a miss moved the cursor to %d (failed %v)", fast.Pos(), fast.Failed())
			}
			return
		}
		var ch Chunk
		ok2 := readChoicesGeneral(&general, &v2, &ch)
		if ok1 != ok2 {
			t.Fatalf("fast ok %v, general ok %v on %q", ok1, ok2, s)
		}
		if !ok1 {
			return
		}
		if v1 != v2 || fast.Pos() != general.Pos() || ch != chFast || ch.Choices != 1 {
			t.Fatalf("fast %+v at %d %+v, general %+v at %d %+v, on %q", v1, fast.Pos(), chFast, v2, general.Pos(), ch, s)
		}
	})
}

// TestFastChoices_TakesOpenAILayout: every text and argument delta chunk of the recorded
// streams takes the fast path, so the fuzz target above compares two different readers.
func TestFastChoices_TakesOpenAILayout(t *testing.T) {
	deltas, args := 0, 0
	for _, line := range recordedLines(t, recordedStreams...) {
		_, c, ok := strings.Cut(line, `"choices":`)
		arg := strings.HasPrefix(c, `[{"index":0,"delta":{"tool_calls":[{"index":`) && !strings.Contains(c, `"id":`)
		if !ok || !strings.HasPrefix(c, `[{"index":0,"delta":{"content":`) && !arg {
			continue
		}
		if arg {
			args++
		}
		deltas++
		var s jsonx.Scanner
		s.Reset(c)
		var v jsonx.Value
		var ch Chunk
		if matched, ok := fastChoices(&s, &v, &ch); !matched || !ok {
			t.Fatalf("text delta %d took the general reader: %.120q", deltas, c)
		}
	}
	if deltas < 5 || args < 5 {
		t.Fatalf("only %d deltas, %d of them arguments", deltas, args)
	}
}

// TestShadows: shadows is strings.EqualFold against each name, for names of every
// length around k's, ASCII keys in any case and keys that fold to a name through
// U+017F and U+212A.
func TestShadows(t *testing.T) {
	names := []string{"id", "object", "created", "model", "choices", "usage", "s", "k"}
	for _, k := range []string{"", "id", "ID", "Id", "model", "MODEL", "Model", "mode", "models", "usage",
		"uſage", "choiceſ", "ſ", "\u212a", "i\u212a", "\u212aey", "object", "OBJECT", "objects", "x", "created_at",
		"system_fingerprint", "mod\xffl", "\xff", "Usage", "USAGE", "\u017fage", "\u017fAGE", "\u212a", "Created",
		"\u212aodel", "\xc5\xbfsage", "_id", "Id\u212a", "Ob\u017fect", "[", "{", "M", "m", "C", "c"} {
		want := false
		for _, n := range names {
			want = want || strings.EqualFold(k, n)
		}
		if got := shadows(k, names...); got != want {
			t.Errorf("shadows(%q) = %v, want %v", k, got, want)
		}
	}
}

// TestRewriteCompletion_MemberNames: a member name is written as the upstream wrote it
// when it has no escape and no whitespace around it, and from its value otherwise; an
// escaped name whose bytes happen to end in `\":` is not cut there.
func TestRewriteCompletion_MemberNames(t *testing.T) {
	for _, tc := range []struct{ body, want string }{
		{`{"id":"x","choices":[],"model":"up"}`, `{"model":"gpt","id":"x","choices":[]}`},
		{`{ "id" : "x" ,"choices":[]}`, `{"model":"gpt","id":"x","choices":[]}`},
		{`{"a\u0062":1,"choices":[]}`, `{"model":"gpt","ab":1,"choices":[]}`},
		{`{"\\\":":1,"choices":[]}`, `{"model":"gpt","\\\":":1,"choices":[]}`},
		{`{"a<b":1,"choices":[]}`, `{"model":"gpt","a<b":1,"choices":[]}`},
	} {
		got, _, err := RewriteCompletion(nil, "up", []byte(tc.body), "gpt")
		if err != nil {
			t.Fatalf("RewriteCompletion(%s): %v", tc.body, err)
		}
		if string(got) != tc.want {
			t.Errorf("RewriteCompletion(%s) = %s, want %s", tc.body, got, tc.want)
		}
		if !json.Valid(got) {
			t.Errorf("RewriteCompletion(%s) = %s, not JSON", tc.body, got)
		}
	}
}

// TestCompletionOutputBytes: the output of a completion's messages, as written; none for
// a body that is not a completion.
func TestCompletionOutputBytes(t *testing.T) {
	for body, want := range map[string]int{
		`{"choices":[{"index":0,"message":{"role":"assistant","content":"Hello\nyou","refusal":null}}]}`: 10,
		`{"choices":[{"message":{"content":null,"tool_calls":[{"id":"c","type":"function","function":{"name":"get","arguments":"{}"}}]}},` +
			`{"message":{"reasoning_content":"hm","content":"ok"}}]}`: 3 + 2 + 2 + 2,
		`{"choices":[]}`: 0,
		`[1]`:            0,
		`{"choices":`:    0,
	} {
		if got := CompletionOutputBytes([]byte(body)); got != want {
			t.Errorf("CompletionOutputBytes(%s) = %d, want %d", body, got, want)
		}
	}
}

// FuzzCompletionOutputBytes: any body is read without a panic, and the output it reports
// fits in it.
func FuzzCompletionOutputBytes(f *testing.F) {
	f.Add(`{"choices":[{"index":0,"message":{"role":"assistant","content":"Hello","tool_calls":[{"function":{"name":"f","arguments":"{}"}}]}}]}`)
	f.Add(`{"choices":[{"message":{"content":"a\"b"}},{"message":null},1]}`)
	f.Add(`{"choices":[{"message":{"content":"a"`)
	f.Fuzz(func(t *testing.T, body string) {
		if n := CompletionOutputBytes([]byte(body)); n < 0 || n > len(body) {
			t.Fatalf("CompletionOutputBytes(%q) = %d", body, n)
		}
	})
}
