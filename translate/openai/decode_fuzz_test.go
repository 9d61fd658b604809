package openai

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/agate-gateway/agate/internal/jsonx"
	"github.com/agate-gateway/agate/translate"
)

// FuzzDecodeMatchesGet holds the decoder, which reads each object of a chunk or a
// completion in one pass (Scanner.Members), to the one it replaced, which looked each
// member up with its own Get (getDecodeChunk below): on any payload, decoded as a whole
// completion and as one stream event, both emit the same events and return the same
// error. Seeded from the recorded completions and streams (testdata/fixtures/openai-chat:
// json, stream, vercel-chunks; SOURCES.md there) and the cases the member lookup can
// tell apart.
func FuzzDecodeMatchesGet(f *testing.F) {
	root := filepath.Join("..", "..", "testdata", "fixtures", "openai-chat")
	for _, glob := range []string{"json/*.mirascope.json", "stream/*.sse", "vercel-chunks/*.chunks.txt"} {
		files, err := filepath.Glob(filepath.Join(root, glob))
		if err != nil || len(files) == 0 {
			f.Fatalf("no recordings at %s (%v)", glob, err)
		}
		for _, name := range files {
			if strings.HasSuffix(name, ".request.json") {
				continue
			}
			b, err := os.ReadFile(name)
			if err != nil {
				f.Fatal(err)
			}
			if strings.HasSuffix(name, ".json") {
				f.Add(b)
				continue
			}
			for sc := bufio.NewScanner(bytes.NewReader(b)); sc.Scan(); {
				if line := bytes.TrimPrefix(sc.Bytes(), []byte("data: ")); len(line) > 0 && line[0] == '{' {
					f.Add(bytes.Clone(line))
				}
			}
		}
	}
	for _, s := range []string{
		`{"id":"a","id":"b","model":"m","choices":[{"index":1,"index":2,"delta":{"content":"x","content":"y"},"message":{"content":"z"}}]}`,
		`{"choices":[{"message":{"reasoning":"r","reasoning_content":"","refusal":"no","tool_calls":[{"id":"c","function":{"name":"f","name":"g","arguments":"{}"}},{"index":5,"function":{"arguments":"1"}}]},"finish_reason":"tool_calls","logprobs":{"content":[{"token":"a","logprob":-1,"bytes":[97]}]}}],"usage":{"prompt_tokens":1}}`,
		`{"choices":[{"delta":{"reasoning":5,"content":"\u00e9\"","tool_calls":{"id":"x"}},"logprobs":{"content":[]}}],"usage":[1]}`,
		`{"error":{"message":"boom","type":"server_error"},"choices":[]}`,
		`{"error":null,"choices":[{"delta":null,"message":{"content":"m"}}]}`,
		`[{"choices":[]}]`, `{"choices":{}}`, `{}`, `{"choices":[1,"x",null,{"delta":"s"}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var got, want []translate.Event
		record := func(to *[]translate.Event) translate.Emit {
			return func(ev *translate.Event) error { *to = append(*to, *ev); return nil }
		}
		gerr := openAIChat{}.DecodeResponse(bytes.Clone(data), record(&got))
		werr := getDecodeResponse(bytes.Clone(data), record(&want))
		if !reflect.DeepEqual(got, want) || !reflect.DeepEqual(gerr, werr) {
			t.Fatalf("DecodeResponse(%q):\n%+v %v\nthe lookups':\n%+v %v", data, got, gerr, want, werr)
		}
		got, want = nil, nil
		d := &openAIChatStream{}
		gerr = d.Event(nil, bytes.Clone(data), record(&got))
		w := &openAIChatStream{}
		werr = w.getEvent(bytes.Clone(data), record(&want))
		if !reflect.DeepEqual(got, want) || !reflect.DeepEqual(gerr, werr) || d.started != w.started || d.finish != w.finish {
			t.Fatalf("Event(%q):\n%+v %v\nthe lookups':\n%+v %v", data, got, gerr, want, werr)
		}
	})
}

// getDecodeResponse is DecodeResponse as it was, each member found by its own Get.
func getDecodeResponse(body []byte, emit translate.Emit) error {
	sc := jsonx.NewScanner(jsonx.View(body))
	root, ok := sc.Root()
	if !ok {
		return upstreamMalformed("openai", body)
	}
	if e := sc.Get(root, "error"); e.Kind == jsonx.Object {
		return openAIError(&sc, 502, e)
	}
	if root.Kind != jsonx.Object || sc.Get(root, "choices").Kind != jsonx.Array {
		return upstreamMalformed("openai", body)
	}
	started, finished := false, false
	return getDecodeChunk(&sc, root, &started, &finished, emit)
}

// getEvent is openAIChatStream.Event as it was, for a data payload (not [DONE]); its
// scanner is left as Event leaves d.sc.
func (d *openAIChatStream) getEvent(data []byte, emit translate.Emit) error {
	sc := &d.sc
	sc.Reset(jsonx.View(data))
	root, ok := sc.Root()
	if !ok {
		return translate.MalformedEvent(upstreamMalformed("openai", data))
	}
	if e := sc.Get(root, "error"); e.Exists() {
		ue := openAIError(sc, 500, e)
		if err := emit(&translate.Event{Kind: translate.EventError, Err: ue}); err != nil {
			return err
		}
		return ue
	}
	return getDecodeChunk(sc, root, &d.started, &d.finish, emit)
}

// getDecodeChunk is decodeOpenAIChunk as it was.
func getDecodeChunk(sc *jsonx.Scanner, root jsonx.Value, started, finished *bool, emit translate.Emit) error {
	var err error
	send := func(ev *translate.Event) {
		if err == nil {
			err = emit(ev)
		}
	}
	if !*started {
		*started = true
		send(&translate.Event{Kind: translate.EventStart, ID: sc.Get(root, "id").Str, Model: sc.Get(root, "model").Str})
	}
	sc.Each(sc.Get(root, "choices"), func(_ string, c jsonx.Value) bool {
		choice := int(sc.Get(c, "index").Int())
		d := sc.Get(c, "delta")
		if !d.Exists() {
			d = sc.Get(c, "message")
		}
		if r := sc.Get(d, "reasoning_content"); r.Str != "" {
			send(&translate.Event{Kind: translate.EventReasoningDelta, Choice: choice, Text: r.Str})
		} else if r := sc.Get(d, "reasoning"); r.Kind == jsonx.String && r.Str != "" {
			send(&translate.Event{Kind: translate.EventReasoningDelta, Choice: choice, Text: r.Str})
		}
		lp := openAILogprobs(sc, sc.Path(c, "logprobs", "content"))
		if t := sc.Get(d, "content"); t.Str != "" {
			send(&translate.Event{Kind: translate.EventTextDelta, Choice: choice, Text: t.Str, Logprobs: lp})
		} else if lp != nil {
			send(&translate.Event{Kind: translate.EventLogprobs, Choice: choice, Logprobs: lp})
		}
		if t := sc.Get(d, "refusal"); t.Str != "" {
			send(&translate.Event{Kind: translate.EventRefusalDelta, Choice: choice, Text: t.Str})
		}
		pos := 0
		sc.Each(sc.Get(d, "tool_calls"), func(_ string, tc jsonx.Value) bool {
			key := pos
			if ix := sc.Get(tc, "index"); ix.Exists() {
				key = int(ix.Int())
			}
			pos++
			if id := sc.Get(tc, "id"); id.Str != "" {
				send(&translate.Event{Kind: translate.EventToolCallStart, Choice: choice, Index: key, CallID: id.Str, Name: sc.Path(tc, "function", "name").Str})
			}
			if a := sc.Path(tc, "function", "arguments"); a.Str != "" {
				send(&translate.Event{Kind: translate.EventToolCallArgsDelta, Choice: choice, Index: key, Text: a.Str})
			}
			return err == nil
		})
		if f := sc.Get(c, "finish_reason"); f.Str != "" {
			*finished = true
			send(&translate.Event{Kind: translate.EventFinish, Choice: choice, FinishReason: f.Str})
		}
		return err == nil
	})
	if u := sc.Get(root, "usage"); u.Kind == jsonx.Object {
		send(&translate.Event{Kind: translate.EventUsage, Usage: openAIUsage(sc, u)})
	}
	return err
}
