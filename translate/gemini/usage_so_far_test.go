package gemini

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agate-gateway/agate/translate"
)

// TestUsageSoFar_CurrentWithUsageMetadata: Gemini's usageMetadata is cumulative, each
// chunk's counting the candidates up to it, so the figures are current once a chunk
// carried them; before that there are none.
func TestUsageSoFar_CurrentWithUsageMetadata(t *testing.T) {
	type state struct {
		Usage   translate.Usage
		Current bool
	}
	chunks := []string{
		`{"candidates":[{"content":{"parts":[{"text":"Hi"}],"role":"model"},"index":0}],"modelVersion":"m"}`,
		`{"candidates":[{"content":{"parts":[{"text":" there"}],"role":"model"},"index":0}],"usageMetadata":{"promptTokenCount":9,"candidatesTokenCount":2,"totalTokenCount":11},"modelVersion":"m"}`,
	}
	want := []state{
		{translate.Usage{}, false},
		{translate.Usage{PromptTokens: 9, CompletionTokens: 2}, true},
	}
	dec := newGeminiDecoder()
	ur := dec.(translate.UsageReporter)
	var got []state
	for _, c := range chunks {
		if err := dec.Event(nil, []byte(c), func(*translate.Event) error { return nil }); err != nil {
			t.Fatal(err)
		}
		u, current := ur.UsageSoFar()
		got = append(got, state{u, current})
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("UsageSoFar after each chunk (-want +got):\n%s", diff)
	}
}
