package responsesin

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agate-gateway/agate/internal/sse"
	"github.com/agate-gateway/agate/translate"
	"github.com/agate-gateway/agate/translate/anthropic"
	"github.com/agate-gateway/agate/translate/gemini"
	"github.com/agate-gateway/agate/translate/internal/spectest"
)

// upstreamTurn is one recorded upstream answer that leaves opaque state for the next turn.
type upstreamTurn struct {
	name     string
	provider translate.Provider
	dialect  string
	model    string // the upstream model of the next turn (Gemini 3 checks signatures)
	sse      []byte // a stream, or
	json     []byte // a whole body
}

func chunksToSSE(chunks []byte) []byte {
	var out bytes.Buffer
	for _, line := range bytes.Split(chunks, []byte("\n")) {
		if line = bytes.TrimSpace(line); len(line) > 0 {
			out.WriteString("data: ")
			out.Write(line)
			out.WriteString("\n\n")
		}
	}
	return out.Bytes()
}

func txtarSection(t *testing.T, file, section string) []byte {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := bytes.Cut(b, []byte("-- "+section+" --\n"))
	if !ok {
		t.Fatalf("%s has no %s section", file, section)
	}
	if i := bytes.Index(rest, []byte("\n-- ")); i >= 0 {
		rest = rest[:i+1]
	}
	return rest
}

func stateTurns(t *testing.T) []upstreamTurn {
	return []upstreamTurn{
		{name: "anthropic thinking and redacted_thinking before two tool_use blocks (stream)", provider: anthropic.New(), dialect: "anthropic", model: "claude-sonnet-4-5",
			sse: txtarSection(t, filepath.Join("..", "anthropic", "testdata", "stream-thinking-tool-use.txtar"), "upstream.sse")},
		{name: "anthropic thinking before tool_use (recorded body)", provider: anthropic.New(), dialect: "anthropic", model: "claude-sonnet-4-6",
			json: readFixture(t, "anthropic/vercel-chunks/issue-13430-thinking-tool-call.json")},
		{name: "gemini 3 thought signature on a function call", provider: gemini.New(), dialect: "gemini", model: "gemini-3-pro-preview",
			sse: chunksToSSE(readFixture(t, "gemini/vercel-chunks/google-tool-call-gemini3.chunks.txt"))},
		{name: "gemini 3 thought signature on a text-only turn", provider: gemini.New(), dialect: "gemini", model: "gemini-3-pro-preview",
			sse: chunksToSSE(readFixture(t, "gemini/vercel-chunks/google-reasoning-gemini3.chunks.txt"))},
	}
}

// answer decodes the turn and encodes it for req, streamed when the turn is a stream; it
// returns the stream (nil for a whole body), the final Response object and the blocks the
// decoder emitted, copied.
func (u *upstreamTurn) answer(t *testing.T, req *Request) (stream, response []byte, blocks []translate.ThinkingBlock) {
	t.Helper()
	enc := NewEncoder(req, EncoderOptions{ID: "resp_test", Model: "client-model", Created: 1700000000, Stream: u.sse != nil})
	emit := func(ev *translate.Event) error {
		if ev.Kind == translate.EventError {
			return ev.Err
		}
		if ev.Kind == translate.EventReasoningBlock {
			b := *ev.Block
			b.Thinking, b.Signature, b.Data = strings.Clone(b.Thinking), strings.Clone(b.Signature), strings.Clone(b.Data)
			blocks = append(blocks, b)
		}
		stream = enc.Encode(stream, ev)
		return nil
	}
	if u.sse != nil {
		dec := u.provider.NewStreamDecoder(&translate.Options{Stream: true})
		var p sse.Parser
		if err := p.Feed(u.sse, func(typ, data []byte) error { return dec.Event(typ, data, emit) }); err != nil {
			t.Fatal(err)
		}
		if err := dec.Close(emit); err != nil {
			t.Fatal(err)
		}
	} else if err := u.provider.DecodeResponse(u.json, emit); err != nil {
		t.Fatal(err)
	}
	stream = enc.Finish(stream, 1700000001)
	if u.sse == nil {
		stream = nil
	}
	return stream, enc.AppendResponse(nil), blocks
}

type outputItem struct {
	Type             string  `json:"type"`
	CallID           string  `json:"call_id"`
	EncryptedContent *string `json:"encrypted_content"`
}

// nextInput is the input of the next turn of a stateless client: its message, the output
// items as they came, and an output for every function call.
func nextInput(t *testing.T, response []byte) (string, []outputItem) {
	t.Helper()
	var resp struct{ Output []json.RawMessage }
	if err := json.Unmarshal(response, &resp); err != nil {
		t.Fatal(err)
	}
	items := []string{`{"type":"message","role":"user","content":"use the tool"}`}
	var parsed []outputItem
	for _, raw := range resp.Output {
		var it outputItem
		if err := json.Unmarshal(raw, &it); err != nil {
			t.Fatal(err)
		}
		parsed = append(parsed, it)
		items = append(items, string(raw))
		if it.Type == "function_call" {
			id, _ := json.Marshal(it.CallID)
			items = append(items, `{"type":"function_call_output","call_id":`+string(id)+`,"output":"sunny"}`)
		}
	}
	return "[" + strings.Join(items, ",") + "]", parsed
}

func requestBody(input string, include bool) string {
	s := `{"model":"m","store":false,"reasoning":{"effort":"high"},"input":` + input
	if include {
		s += `,"include":["reasoning.encrypted_content"]`
	}
	return s + "}"
}

// wantInRequest is Anthropic block b as an Anthropic request spells it.
func wantInRequest(t *testing.T, b *translate.ThinkingBlock) string {
	t.Helper()
	q := func(s string) string {
		j, _ := json.Marshal(s)
		return strings.NewReplacer(`\u003c`, "<", `\u003e`, ">", `\u0026`, "&").Replace(string(j))
	}
	switch b.Type {
	case "thinking":
		return `{"type":"thinking","thinking":` + q(b.Thinking) + `,"signature":` + q(b.Signature) + `}`
	case "redacted_thinking":
		return `{"type":"redacted_thinking","data":` + q(b.Data) + `}`
	}
	return ""
}

// TestEncryptedReasoning_RoundTrip: with include reasoning.encrypted_content, the opaque
// state of an Anthropic or Gemini turn rides in reasoning items' encrypted_content (sealed,
// naming its dialect) and the function calls have their plain ids; a stateless client that
// sends the items back gets that state to the upstream exactly: Claude's thinking blocks
// with their signatures, Gemini's thought signatures. The stream satisfies the published
// schema.
func TestEncryptedReasoning_RoundTrip(t *testing.T) {
	eventSchema, responseSchema := schemas(t)
	for _, u := range stateTurns(t) {
		t.Run(u.name, func(t *testing.T) {
			stream, response, blocks := u.answer(t, mustParse(t, requestBody(`"use the tool"`, true)))
			if len(blocks) == 0 {
				t.Fatal("the recording has no reasoning blocks")
			}
			if stream != nil {
				checkStream(t, stream)
				for i, f := range frames(t, stream) {
					if err := eventSchema.validate(f.data); err != nil {
						t.Errorf("event %d (%s) does not satisfy ResponseStreamEvent: %v\n%s", i, f.typ, err, f.data)
					}
				}
			}
			if err := spectest.Validate(responseSchema, response); err != nil {
				t.Errorf("Response does not satisfy the schema: %v\n%s", err, response)
			}
			input, items := nextInput(t, response)
			var sealed []translate.ThinkingBlock
			for _, it := range items {
				switch {
				case it.Type == "function_call" && strings.Contains(it.CallID, translate.CarrySep):
					t.Errorf("call_id %q carries state; it rides in encrypted_content", it.CallID)
				case it.Type == "reasoning" && it.EncryptedContent != nil:
					b, ok := translate.OpenBlock(*it.EncryptedContent)
					if !ok {
						t.Fatalf("encrypted_content %q does not open", *it.EncryptedContent)
					}
					sealed = append(sealed, b)
				}
			}
			if diff := cmp.Diff(blocks, sealed); diff != "" {
				t.Errorf("sealed blocks differ from the decoder's (-decoded +sealed):\n%s", diff)
			}

			next := mustParse(t, requestBody(input, true))
			if err := next.Translatable(false); err != nil {
				t.Fatal(err)
			}
			body, err := u.provider.AppendRequest(nil, next.Core, &translate.Options{UpstreamModel: u.model})
			if err != nil {
				t.Fatalf("next turn: %v", err)
			}
			for i := range blocks {
				b := &blocks[i]
				switch u.dialect {
				case "anthropic":
					if w := wantInRequest(t, b); !bytes.Contains(body, []byte(w)) {
						t.Errorf("next turn lacks block %d, %s:\n%s", i, w, body)
					}
				case "gemini":
					for _, sig := range geminiSignatures(t, u.sse) {
						if !bytes.Contains(body, []byte(`"thoughtSignature":"`+sig+`"`)) {
							t.Errorf("next turn lacks thoughtSignature %.40s...:\n%.2000s", sig, body)
						}
					}
				}
			}
			if bytes.Contains(body, []byte(translate.CarrySep)) || bytes.Contains(body, []byte(translate.SealedPrefix)) {
				t.Errorf("next turn leaks gateway state:\n%.2000s", body)
			}
		})
	}
}

// TestEncryptedReasoning_NotIncluded: without include the reasoning items have no
// encrypted_content and the state stays in the call ids (translate.CarryID), as before:
// the next turn still gets it.
func TestEncryptedReasoning_NotIncluded(t *testing.T) {
	for _, u := range stateTurns(t)[:3] {
		t.Run(u.name, func(t *testing.T) {
			_, response, blocks := u.answer(t, mustParse(t, requestBody(`"use the tool"`, false)))
			input, items := nextInput(t, response)
			carried := false
			for _, it := range items {
				if it.EncryptedContent != nil {
					t.Errorf("a %s item has encrypted_content without include", it.Type)
				}
				carried = carried || strings.Contains(it.CallID, translate.CarrySep)
			}
			if !carried {
				t.Error("no call_id carries the state")
			}
			next := mustParse(t, requestBody(input, false))
			body, err := u.provider.AppendRequest(nil, next.Core, &translate.Options{UpstreamModel: u.model})
			if err != nil {
				t.Fatal(err)
			}
			if u.dialect == "anthropic" {
				if w := wantInRequest(t, &blocks[0]); !bytes.Contains(body, []byte(w)) {
					t.Errorf("next turn lacks %s:\n%s", w, body)
				}
			}
		})
	}
}

// TestEncryptedReasoning_OtherDialect: a sealed block of one dialect sent to a backend of
// another is dropped without error; the conversation goes on without it.
func TestEncryptedReasoning_OtherDialect(t *testing.T) {
	turns := stateTurns(t)
	tests := []struct {
		name   string
		from   upstreamTurn
		to     translate.Provider
		model  string
		absent []string
	}{
		{"anthropic state to gemini", turns[0], gemini.New(), "gemini-3-pro-preview", []string{`"thinking"`, `redacted`, "EuYDCmMIDBgCKkC05Zda"}},
		{"gemini state to anthropic", turns[2], anthropic.New(), "claude-sonnet-4-5", []string{"EpEgCo4gAb4", `"type":"thinking"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, response, _ := tt.from.answer(t, mustParse(t, requestBody(`"use the tool"`, true)))
			input, _ := nextInput(t, response)
			next := mustParse(t, requestBody(input, true))
			body, err := tt.to.AppendRequest(nil, next.Core, &translate.Options{UpstreamModel: tt.model})
			if err != nil {
				t.Fatalf("next turn on another dialect: %v", err)
			}
			for _, s := range tt.absent {
				if bytes.Contains(body, []byte(s)) {
					t.Errorf("the other dialect's request contains %s:\n%.2000s", s, body)
				}
			}
		})
	}
}

// TestParse_EncryptedContent: reasoning items' encrypted_content becomes the next
// assistant message's ThinkingBlocks when Agate sealed it; anything else is ignored, and a
// non-string is an error naming the field.
func TestParse_EncryptedContent(t *testing.T) {
	sealed := translate.SealBlock(&translate.ThinkingBlock{Dialect: "anthropic", Type: "thinking", Thinking: "hmm", Signature: "sig"})
	tests := []struct {
		name      string
		items     string
		want      []translate.ThinkingBlock
		wantParam string
	}{
		{"sealed block goes to the next assistant turn",
			`{"type":"reasoning","summary":[],"encrypted_content":"` + sealed + `"},{"type":"function_call","call_id":"toolu_1","name":"f","arguments":"{}"}`,
			[]translate.ThinkingBlock{{Dialect: "anthropic", Type: "thinking", Thinking: "hmm", Signature: "sig"}}, ""},
		{"OpenAI's own encrypted content is ignored",
			`{"type":"reasoning","summary":[],"encrypted_content":"gAAAAABpPDIVOKrs"},{"type":"message","role":"assistant","content":"ok"}`, nil, ""},
		{"null is no content",
			`{"type":"reasoning","summary":[],"encrypted_content":null},{"type":"message","role":"assistant","content":"ok"}`, nil, ""},
		{"a number is an error",
			`{"type":"reasoning","summary":[],"encrypted_content":5}`, nil, "input[1].encrypted_content"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := Parse([]byte(`{"model":"m","input":[{"role":"user","content":"hi"},` + tt.items + `]}`))
			if tt.wantParam != "" {
				var pe *translate.ParamError
				if !errors.As(err, &pe) || pe.Param != tt.wantParam {
					t.Fatalf("err = %v, want a ParamError for %s", err, tt.wantParam)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []translate.ThinkingBlock
			for _, m := range r.Core.Messages {
				got = append(got, m.ThinkingBlocks...)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("blocks (-want +got):\n%s", diff)
			}
		})
	}
}

// geminiSignatures returns the thoughtSignature values of a recorded Gemini stream.
func geminiSignatures(t *testing.T, stream []byte) []string {
	t.Helper()
	var sigs []string
	for _, line := range bytes.Split(stream, []byte("\n")) {
		data, ok := bytes.CutPrefix(line, []byte("data: "))
		if !ok {
			continue
		}
		var chunk struct {
			Candidates []struct {
				Content struct {
					Parts []struct {
						ThoughtSignature string `json:"thoughtSignature"`
					} `json:"parts"`
				} `json:"content"`
			} `json:"candidates"`
		}
		if err := json.Unmarshal(data, &chunk); err != nil {
			t.Fatal(err)
		}
		for _, c := range chunk.Candidates {
			for _, p := range c.Content.Parts {
				if p.ThoughtSignature != "" {
					sigs = append(sigs, p.ThoughtSignature)
				}
			}
		}
	}
	if len(sigs) == 0 {
		t.Fatal("the recording has no thoughtSignature")
	}
	return sigs
}
