package messagesin_test

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/tidwall/gjson"
	"golang.org/x/tools/txtar"

	"github.com/agate-gateway/agate/internal/splittest"
	"github.com/agate-gateway/agate/internal/sse"
	"github.com/agate-gateway/agate/translate"
	"github.com/agate-gateway/agate/translate/anthropic"
	"github.com/agate-gateway/agate/translate/gemini"
	"github.com/agate-gateway/agate/translate/internal/spectest"
	"github.com/agate-gateway/agate/translate/messagesin"
	"github.com/agate-gateway/agate/translate/openai"
	"github.com/agate-gateway/agate/translate/responses"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// fixturesDir is the repository's testdata/fixtures (recorded provider traffic; provenance
// in its SOURCES.md).
var fixturesDir = filepath.Join("..", "..", "testdata", "fixtures")

const (
	goldenID    = "msg_golden"
	goldenModel = "client-model"
)

// wireProviders are the upstream dialects whose recorded streams are replayed, by fixture
// folder.
var wireProviders = map[string]func() translate.Provider{
	"anthropic":   anthropic.New,
	"gemini":      gemini.New,
	"openai-chat": openai.New,
	"responses":   responses.New,
}

// replay feeds an upstream SSE body, in the given reads, through the wire's decoder and
// the Messages encoder, and returns the Messages stream the gateway would send, ending in
// an error event when the upstream failed. It also returns the events' Message object.
func replay(t testing.TB, p translate.Provider, chunks [][]byte) (stream, message []byte) {
	t.Helper()
	return replayWrapped(p, chunks, nil)
}

// replayWrapped is replay with the parser's handler wrapped by wrap (splittest.Poison),
// if not nil.
func replayWrapped(p translate.Provider, chunks [][]byte, wrap func(sse.Handler) sse.Handler) (stream, message []byte) {
	dec := p.NewStreamDecoder(&translate.Options{Stream: true})
	enc := messagesin.NewEncoder(goldenID, goldenModel)
	var asm messagesin.Assembler
	var out []byte
	emit := func(ev *translate.Event) error {
		if ev.Kind == translate.EventError {
			return ev.Err
		}
		asm.Add(ev)
		var err error
		out, err = enc.Encode(out, ev)
		return err
	}
	var parser sse.Parser
	var fn sse.Handler = func(typ, data []byte) error { return dec.Event(typ, data, emit) }
	if wrap != nil {
		fn = wrap(fn)
	}
	var err error
	for _, c := range chunks {
		if err = parser.Feed(c, fn); err != nil {
			break
		}
	}
	if err == nil {
		err = dec.Close(emit)
	}
	if err != nil {
		var ue *translate.UpstreamError
		status := 502
		if errors.As(err, &ue) {
			status = ue.Status
		}
		return messagesin.AppendErrorEvent(out, status, err.Error(), "req_golden"), nil
	}
	return enc.Finish(out), asm.AppendMessage(nil, goldenID, goldenModel)
}

// TestReplayRecordedStreams replays every recorded upstream stream through the Messages
// encoder: the output matches its golden (testdata/replay/<wire>/<name>.txtar, rewritten
// by -update), is the same however the upstream bytes are split, keeps the Messages
// stream invariants, and its Message object satisfies the published Message schema.
// The splits are checked as package splittest says: the parser's events at every
// offset, one replay with each event's memory poisoned after its call, and a few splits
// replayed in full.
func TestReplayRecordedStreams(t *testing.T) {
	message := spectest.Schema(t, "anthropic/messages.json", "#/components/schemas/Message")
	spectest.MustRejectInvalid(t, message, `{"type":"message"}`)
	for wire, provider := range wireProviders {
		files, _ := filepath.Glob(filepath.Join(fixturesDir, wire, "stream", "*.sse"))
		if len(files) == 0 {
			t.Fatalf("no recorded streams for %s", wire)
		}
		for _, f := range files {
			name := strings.TrimSuffix(filepath.Base(f), ".sse")
			t.Run(wire+"/"+name, func(t *testing.T) {
				upstream, err := os.ReadFile(f)
				if err != nil {
					t.Fatal(err)
				}
				p := provider()
				want, msg := replay(t, p, [][]byte{upstream})
				golden(t, filepath.Join("testdata", "replay", wire, name+".txtar"), want)
				if err := checkStream(want); err != nil {
					t.Errorf("stream invariants: %v\n%s", err, want)
				}
				if msg != nil {
					if err := spectest.Validate(message, msg); err != nil {
						t.Errorf("message against the spec: %v\n%s", err, msg)
					}
				}
				if got, _ := replayWrapped(p, [][]byte{upstream}, splittest.Poison); !bytes.Equal(got, want) {
					t.Fatalf("with each event's memory overwritten after its call, the output differs: a view of an event is kept (-want +got):\n%s", cmp.Diff(string(want), string(got)))
				}
				splittest.CheckEventSplits(t, upstream, splitOffsets(upstream))
				for _, i := range splittest.SampleOffsets(len(upstream), 8) {
					if got, _ := replay(t, p, [][]byte{upstream[:i], upstream[i:]}); !bytes.Equal(got, want) {
						t.Fatalf("split at byte %d differs (-want +got):\n%s", i, cmp.Diff(string(want), string(got)))
					}
				}
			})
		}
	}
}

// splitOffsets are the split points checked: every offset of a short stream; for a long
// one the first 2 KiB, the last 1 KiB, within 3 bytes of every event boundary, and every
// 31st offset elsewhere. One over 64 KiB (two recordings of some 97 KiB, each split
// decoding the whole stream) is split where longSplitOffsets says.
func splitOffsets(upstream []byte) []int {
	n := len(upstream)
	if n > 64<<10 {
		return longSplitOffsets(upstream)
	}
	var out []int
	for i := 1; i < n; i++ {
		if n <= 4096 || i < 2048 || i > n-1024 || i%31 == 0 || nearBoundary(upstream, i) {
			out = append(out, i)
		}
	}
	return out
}

// longSplitOffsets are the split points of a stream over 64 KiB, one of each place a
// split can fall for the parser rather than every 31st byte: every offset of the first
// 2 KiB and the last 1 KiB (inside and at the end of each field of the first and last
// events), every offset within 3 bytes of the first 8 and the last 8 event boundaries,
// the offset between the two newlines of every event boundary (a line complete, its
// event not yet dispatched), and about 16 MiB / len(upstream) offsets evenly spaced
// over the rest (inside long data lines, the parser holding a large partial event).
func longSplitOffsets(upstream []byte) []int {
	n := len(upstream)
	pick := make([]bool, n)
	for i := 1; i < n; i++ {
		pick[i] = i < 2048 || i > n-1024
	}
	var bounds []int
	for j := 1; j+1 < n; j++ {
		if upstream[j] == '\n' && (upstream[j+1] == '\n' || upstream[j+1] == '\r') {
			bounds = append(bounds, j)
			pick[j+1] = true
		}
	}
	for k, j := range bounds {
		if k >= 8 && k < len(bounds)-8 {
			continue
		}
		for d := -3; d <= 3; d++ {
			if i := j + d; i > 0 && i < n {
				pick[i] = true
			}
		}
	}
	even := max(1, (16<<20)/n)
	for k := 1; k <= even; k++ {
		if i := k * n / (even + 1); i > 0 && i < n {
			pick[i] = true
		}
	}
	var out []int
	for i, ok := range pick {
		if ok {
			out = append(out, i)
		}
	}
	return out
}

func nearBoundary(b []byte, i int) bool {
	for d := -3; d <= 3; d++ {
		if j := i + d; j > 0 && j+1 < len(b) && b[j] == '\n' && (b[j+1] == '\n' || b[j+1] == '\r') {
			return true
		}
	}
	return false
}

// checkStream checks the Messages stream invariants: one message_start first; content
// blocks opened with dense indexes from 0, one at a time, each delta addressed to the open
// block and of its kind; then either one message_delta (stop reason, usage) and one
// message_stop last, or an error event last.
func checkStream(stream []byte) error {
	var parser sse.Parser
	var events [][2]string
	if err := parser.Feed(stream, func(typ, data []byte) error {
		events = append(events, [2]string{string(typ), string(data)})
		return nil
	}); err != nil {
		return err
	}
	if len(events) == 0 || events[0][0] != "message_start" {
		return errors.New("the stream does not begin with message_start")
	}
	open, next, deltas, stops := -1, 0, 0, 0
	kind := ""
	for i, ev := range events {
		typ, data := ev[0], ev[1]
		if !gjson.Valid(data) {
			return fmt.Errorf("event %d: data is not JSON: %s", i, data)
		}
		if got := gjson.Get(data, "type").Str; got != typ {
			return fmt.Errorf("event %d: event %q carries type %q", i, typ, got)
		}
		if stops > 0 && typ != "message_stop" {
			return fmt.Errorf("event %d: %s after message_delta", i, typ)
		}
		switch typ {
		case "message_start":
			if i != 0 {
				return fmt.Errorf("event %d: a second message_start", i)
			}
		case "content_block_start":
			if open >= 0 {
				return fmt.Errorf("event %d: block %d opened while %d is open", i, next, open)
			}
			if idx := int(gjson.Get(data, "index").Int()); idx != next {
				return fmt.Errorf("event %d: block index %d, want %d", i, idx, next)
			}
			open, kind = next, gjson.Get(data, "content_block.type").Str
			next++
		case "content_block_delta":
			if idx := int(gjson.Get(data, "index").Int()); idx != open {
				return fmt.Errorf("event %d: delta for block %d while %d is open", i, idx, open)
			}
			want := map[string]string{"text": "text_delta", "thinking": "thinking_delta", "tool_use": "input_json_delta"}[kind]
			if got := gjson.Get(data, "delta.type").Str; got != want && !(kind == "thinking" && got == "signature_delta") {
				return fmt.Errorf("event %d: %s in a %s block", i, got, kind)
			}
			deltas++
		case "content_block_stop":
			if idx := int(gjson.Get(data, "index").Int()); idx != open {
				return fmt.Errorf("event %d: stop for block %d while %d is open", i, idx, open)
			}
			open = -1
		case "message_delta":
			if open >= 0 {
				return fmt.Errorf("event %d: message_delta with block %d open", i, open)
			}
			if gjson.Get(data, "delta.stop_reason").Str == "" || !gjson.Get(data, "usage.output_tokens").Exists() {
				return fmt.Errorf("event %d: message_delta without stop_reason or usage: %s", i, data)
			}
			stops++
		case "message_stop":
			if stops != 1 || i != len(events)-1 {
				return fmt.Errorf("event %d: message_stop not once, last, after one message_delta", i)
			}
			return nil
		case "error":
			if i != len(events)-1 {
				return fmt.Errorf("event %d: events after the error", i)
			}
			return nil
		default:
			return fmt.Errorf("event %d: unknown event %q", i, typ)
		}
	}
	return errors.New("the stream ends without message_stop or error")
}

// golden compares got with the want.sse section of the txtar archive at path, or rewrites
// it under -update.
func golden(t *testing.T, path string, got []byte) {
	t.Helper()
	ar, err := txtar.ParseFile(path)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		ar = &txtar.Archive{Comment: []byte("Messages stream the gateway sends for the recorded upstream stream of the same name.\n"),
			Files: []txtar.File{{Name: "want.sse", Data: got}}}
		if err := os.WriteFile(path, txtar.Format(ar), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if err != nil {
		t.Fatalf("reading golden (run go test -update): %v", err)
	}
	if diff := cmp.Diff(string(ar.Files[0].Data), string(got)); diff != "" {
		t.Errorf("%s differs from golden (-want +got):\n%s", path, diff)
	}
}
