package respcache

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agate-gateway/agate/internal/sse"
	"github.com/agate-gateway/agate/translate"
	"github.com/agate-gateway/agate/translate/anthropic"
	"github.com/agate-gateway/agate/translate/openai"
)

// record records events and returns the entry.
func record(t testing.TB, events []translate.Event) []byte {
	t.Helper()
	var r Recorder
	for i := range events {
		r.Add(&events[i])
	}
	e, ok := r.Entry()
	if !ok {
		t.Fatalf("the recorder refused %d events", len(events))
	}
	return e
}

// replay returns the events of entry, deep-copied.
func replay(t testing.TB, entry []byte) []translate.Event {
	t.Helper()
	var got []translate.Event
	err := Replay(entry, func(ev *translate.Event) error {
		c := *ev
		c.Logprobs = append([]translate.TokenLogprob(nil), ev.Logprobs...)
		if ev.Block != nil {
			b := *ev.Block
			c.Block = &b
		}
		if ev.Item != nil {
			it := *ev.Item
			c.Item = &it
		}
		got = append(got, c)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func TestEntry_RoundTrip(t *testing.T) {
	bytesA := []byte("a")
	tests := []struct {
		name   string
		events []translate.Event
	}{
		{name: "text", events: []translate.Event{
			{Kind: translate.EventStart, ID: "chatcmpl-1", Model: "gpt"},
			{Kind: translate.EventTextDelta, Text: "Hello"},
			{Kind: translate.EventUsage, Usage: translate.Usage{PromptTokens: 10, CompletionTokens: 5, CachedTokens: 2, CacheCreationTokens: 1, ReasoningTokens: 3}},
			{Kind: translate.EventFinish, FinishReason: translate.FinishStop},
		}},
		{name: "tool calls on two choices", events: []translate.Event{
			{Kind: translate.EventToolCallStart, Choice: 1, Index: 2, CallID: "call_1~1a", Name: "weather"},
			{Kind: translate.EventToolCallArgsDelta, Choice: 1, Index: 2, Text: `{"city":"Paris"}`},
			{Kind: translate.EventToolCallEnd, Choice: 1, Index: 2},
			{Kind: translate.EventFinish, Choice: 1, FinishReason: translate.FinishToolCalls},
		}},
		{name: "reasoning, refusal, builtin item, logprobs", events: []translate.Event{
			{Kind: translate.EventReasoningDelta, Text: "thinking"},
			{Kind: translate.EventReasoningBlock, Block: &translate.ThinkingBlock{Type: "thinking", Thinking: "t", Signature: "sig", ID: "rs_1", Dialect: "anthropic", CallID: "c"}},
			{Kind: translate.EventBuiltinItem, Item: &translate.Item{Dialect: "responses", Type: "web_search_call", Raw: `{"id":"ws_1"}`}},
			{Kind: translate.EventRefusalDelta, Text: "no"},
			{Kind: translate.EventTextDelta, Text: "a", Logprobs: []translate.TokenLogprob{{Token: "a", Logprob: -0.25, Bytes: bytesA,
				Top: []translate.TopLogprob{{Token: "a", Logprob: -0.25, Bytes: bytesA}, {Token: "b", Logprob: -3}}}}},
			{Kind: translate.EventLogprobs, Logprobs: []translate.TokenLogprob{{Token: "x", Logprob: -1}}},
			{Kind: translate.EventFinish, FinishReason: translate.FinishLength},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := replay(t, record(t, tt.events))
			if diff := cmp.Diff(tt.events, got); diff != "" {
				t.Errorf("replayed events differ (-recorded +replayed):\n%s", diff)
			}
		})
	}
}

func TestRecorder_Refuses(t *testing.T) {
	finish := translate.Event{Kind: translate.EventFinish, FinishReason: "stop"}
	text := translate.Event{Kind: translate.EventTextDelta, Text: strings.Repeat("x", 100)}
	tests := []struct {
		name   string
		max    int
		events []translate.Event
	}{
		{name: "no finish (a truncated answer)", events: []translate.Event{text}},
		{name: "an error event", events: []translate.Event{text, {Kind: translate.EventError, Err: &translate.UpstreamError{Status: 500}}, finish}},
		{name: "over max", max: 50, events: []translate.Event{text, finish}},
		{name: "nothing", events: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := Recorder{Max: tt.max}
			for i := range tt.events {
				r.Add(&tt.events[i])
			}
			if e, ok := r.Entry(); ok {
				t.Errorf("recorded %d bytes, want a refusal", len(e))
			}
		})
	}
}

func TestReplay_Corrupt(t *testing.T) {
	good := record(t, []translate.Event{{Kind: translate.EventTextDelta, Text: "hello"}, {Kind: translate.EventFinish, FinishReason: "stop"}})
	for name, b := range map[string][]byte{
		"empty":         nil,
		"version":       append([]byte{9}, good[1:]...),
		"truncated":     good[:len(good)-2],
		"bad kind":      {entryVersion, 0, 0},
		"error kind":    {entryVersion, byte(translate.EventError), 0},
		"unknown field": {entryVersion, byte(translate.EventTextDelta), 0x80, 0x80, 0x01},
		"long string":   {entryVersion, byte(translate.EventTextDelta), fText, 0xff, 0x01, 'a'},
	} {
		emitted := 0
		err := Replay(b, func(*translate.Event) error { emitted++; return nil })
		if !errors.Is(err, ErrCorrupt) || emitted != 0 {
			t.Errorf("%s: err %v after %d events, want ErrCorrupt before any", name, err, emitted)
		}
	}
}

// recordings are entries of recorded upstream streams (testdata/fixtures; provenance in
// its SOURCES.md), decoded by their providers as the gateway does.
func recordings(t testing.TB) [][]byte {
	var out [][]byte
	for _, d := range []struct {
		glob string
		p    translate.Provider
	}{
		{"../testdata/fixtures/openai-chat/stream/*.sse", openai.New()},
		{"../testdata/fixtures/anthropic/stream/*.sse", anthropic.New()},
	} {
		files, _ := filepath.Glob(d.glob)
		for _, f := range files {
			raw, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			var r Recorder
			add := func(ev *translate.Event) error { r.Add(ev); return nil }
			dec := d.p.NewStreamDecoder(&translate.Options{Stream: true})
			var ps sse.Parser
			if ps.Feed(raw, func(typ, data []byte) error { return dec.Event(typ, data, add) }) != nil || dec.Close(add) != nil {
				continue
			}
			if e, ok := r.Entry(); ok {
				out = append(out, e)
			}
		}
	}
	if len(out) == 0 {
		t.Fatal("no recording decoded")
	}
	return out
}

// TestEntry_Recordings: every recorded stream replays to the events it was recorded from.
func TestEntry_Recordings(t *testing.T) {
	for i, e := range recordings(t) {
		again := record(t, replay(t, e))
		if string(again) != string(e) {
			t.Errorf("recording %d: re-recording its replay gives other bytes", i)
		}
	}
}

// FuzzReplay: no input makes Replay panic, and the events of an entry it accepts, once
// recorded, replay to the same events (the entry re-records to itself).
func FuzzReplay(f *testing.F) {
	for _, e := range recordings(f) {
		f.Add(e)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		rerecord := func(b []byte) ([]byte, bool) {
			var r Recorder
			if Replay(b, func(ev *translate.Event) error { r.Add(ev); return nil }) != nil {
				return nil, false
			}
			return r.Entry()
		}
		e1, ok := rerecord(b)
		if !ok {
			return
		}
		if e2, ok := rerecord(e1); !ok || string(e2) != string(e1) {
			t.Errorf("re-recorded %x, then %x", e1, e2)
		}
	})
}
