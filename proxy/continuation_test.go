package proxy

import (
	"errors"
	"strings"
	"testing"

	"github.com/agate-gateway/agate/translate"
)

func text(s string) translate.Event { return translate.Event{Kind: translate.EventTextDelta, Text: s} }

// TestResume_Recording: what reached the client decides whether a failure may be
// continued: plain text may; a tool call (whole or cut inside its arguments), a refusal,
// a finish, or reasoning without text may not.
func TestResume_Recording(t *testing.T) {
	t.Parallel() // nothing shared, no clock or environment of the process (#54)
	for _, tt := range []struct {
		name   string
		events []translate.Event
		ok     bool
		said   string
	}{
		{"text", []translate.Event{{Kind: translate.EventStart}, text("Hel"), text("lo")}, true, "Hello"},
		{"nothing but the start", []translate.Event{{Kind: translate.EventStart}}, true, ""},
		{"reasoning then text", []translate.Event{{Kind: translate.EventReasoningDelta, Text: "hmm"}, text("Hi")}, true, "Hi"},
		{"reasoning alone", []translate.Event{{Kind: translate.EventReasoningDelta, Text: "hmm"}}, false, ""},
		{"cut inside a tool call's arguments", []translate.Event{text("Let me look."), {Kind: translate.EventToolCallStart, Name: "f"},
			{Kind: translate.EventToolCallArgsDelta, Text: `{"a":`}}, false, "Let me look."},
		{"after a refusal", []translate.Event{{Kind: translate.EventRefusalDelta, Text: "no"}}, false, ""},
		{"after the finish", []translate.Event{text("Done."), {Kind: translate.EventFinish, FinishReason: "stop"}}, false, "Done."},
	} {
		t.Run(tt.name, func(t *testing.T) {
			k := resume{on: true}
			var room translate.Event
			for i := range tt.events {
				if shown, err := k.pass(&tt.events[i], &room); shown != &tt.events[i] || err != nil {
					t.Fatalf("event %d: shown %v, %v; want it shown as it is", i, shown, err)
				}
			}
			if k.continuable() != tt.ok || string(k.said) != tt.said {
				t.Errorf("continuable %v, said %q; want %v, %q", k.continuable(), k.said, tt.ok, tt.said)
			}
		})
	}
}

// TestResume_Continuation: a continuation's events as the client sees them: its start
// and reasoning swallowed, its text relayed from where the client's ends (restart: when
// it repeats the client's text; prefill: past the whitespace the prefill left out), its
// usage added to the earlier attempts', a divergence an error.
func TestResume_Continuation(t *testing.T) {
	t.Parallel() // nothing shared, no clock or environment of the process (#54)
	for _, tt := range []struct {
		name     string
		pending  string
		lenient  bool
		events   []translate.Event
		want     string // the texts shown, joined by |
		diverged bool
	}{
		{"restart repeats, across deltas", "The quick", false,
			[]translate.Event{{Kind: translate.EventStart}, text("The q"), text("uick br"), text("own")}, " br|own", false},
		{"restart repeats exactly", "The", false, []translate.Event{text("The"), text(" end")}, " end", false},
		{"restart differs", "The quick", false, []translate.Event{text("A quick")}, "", true},
		{"restart ends short", "The quick", false, []translate.Event{text("The"), {Kind: translate.EventFinish}}, "", true},
		{"restart calls a tool instead", "The", false, []translate.Event{{Kind: translate.EventToolCallStart}}, "", true},
		{"prefill repeats the trimmed space", " ", true, []translate.Event{text(" fox"), text(" jumps")}, "fox| jumps", false},
		{"prefill does not repeat it", " ", true, []translate.Event{text("fox")}, "fox", false},
		{"reasoning swallowed", "", false, []translate.Event{{Kind: translate.EventReasoningDelta, Text: "x"}, text("more")}, "more", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			k := resume{on: true, active: true, pending: tt.pending, lenient: tt.lenient}
			var room translate.Event
			var shown []string
			var err error
			for i := range tt.events {
				var ev *translate.Event
				if ev, err = k.pass(&tt.events[i], &room); err != nil {
					break
				}
				if ev != nil && ev.Kind == translate.EventTextDelta {
					shown = append(shown, ev.Text)
				}
			}
			if got := strings.Join(shown, "|"); got != tt.want || errors.Is(err, errDiverged) != tt.diverged {
				t.Errorf("shown %q, error %v; want %q, diverged %v", got, err, tt.want, tt.diverged)
			}
		})
	}
}

// TestResume_UsageSummed: a continuation's usage events carry the earlier attempts'
// usage added to their own.
func TestResume_UsageSummed(t *testing.T) {
	t.Parallel() // nothing shared, no clock or environment of the process (#54)
	k := resume{on: true, active: true, prior: translate.Usage{PromptTokens: 10, CompletionTokens: 4}}
	var room translate.Event
	ev := translate.Event{Kind: translate.EventUsage, Usage: translate.Usage{PromptTokens: 12, CompletionTokens: 7}}
	shown, err := k.pass(&ev, &room)
	if err != nil || shown.Usage != (translate.Usage{PromptTokens: 22, CompletionTokens: 11}) || ev.Usage.PromptTokens != 12 {
		t.Errorf("usage shown %+v, %v; want 22+11, the decoder's event untouched", shown.Usage, err)
	}
}

// TestContinuationOf_Clouds: a model on a cloud backend takes the default continuation of
// the dialect that serves it: Claude on Vertex and Bedrock and Gemini on Vertex prefill,
// Bedrock's Converse models restart; a model's own setting wins.
func TestContinuationOf_Clouds(t *testing.T) {
	t.Parallel() // nothing shared, no clock or environment of the process (#54)
	vertex := func(publisher string) *backend {
		b := &backend{typ: "vertex"}
		b.cfg.Vertex.Publisher = publisher
		return b
	}
	bedrock := &backend{typ: "bedrock"}
	for _, tt := range []struct {
		b          *backend
		model, set string
		want       contMode
	}{
		{vertex("anthropic"), "claude-sonnet-4-5@20250929", "", contPrefill},
		{vertex("google"), "gemini-2.5-flash", "", contPrefill},
		{bedrock, "us.anthropic.claude-sonnet-4-20250514-v1:0", "", contPrefill},
		{bedrock, "anthropic.claude-3-5-haiku-20241022-v1:0", "", contPrefill},
		{bedrock, "us.amazon.nova-lite-v1:0", "", contRestart},
		{bedrock, "meta.llama3-70b-instruct-v1:0", "", contRestart},
		{bedrock, "us.anthropic.claude-sonnet-4-20250514-v1:0", "off", contOff},
		{bedrock, "mistral.mistral-large-2402-v1:0", "prefill", contPrefill},
	} {
		if got := continuationOf(tt.b, tt.model, tt.set); got != tt.want {
			t.Errorf("%s %s (set %q): %v; want %v", tt.b.typ, tt.model, tt.set, got, tt.want)
		}
	}
}
