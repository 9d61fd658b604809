package openaichat

import (
	"testing"

	"github.com/agate-gateway/agate/internal/openaitest"
	"github.com/agate-gateway/agate/translate"
)

// TestChunkEncoder_SetModel: a model set before the first event is the model of every
// chunk, the usage chunk's included, with the id and created the encoder was made with;
// an encoder whose model is set to the one it was made for writes the same bytes.
func TestChunkEncoder_SetModel(t *testing.T) {
	events := []translate.Event{
		{Kind: translate.EventStart},
		{Kind: translate.EventTextDelta, Text: "hi"},
		{Kind: translate.EventUsage, Usage: translate.Usage{PromptTokens: 3, CompletionTokens: 1}},
		{Kind: translate.EventFinish, FinishReason: translate.FinishStop},
	}
	encode := func(e *ChunkEncoder) []byte {
		var out []byte
		for i := range events {
			out = e.Encode(out, &events[i])
		}
		return e.Finish(out)
	}
	tests := []struct{ name, set, want string }{
		{"a fallback's name", "spare \"model\" é", "spare \"model\" é"},
		{"the same name", goldenModel, goldenModel},
		{"a longer name", "a-much-longer-fallback-model-name-than-the-one-asked-for-0123456789", "a-much-longer-fallback-model-name-than-the-one-asked-for-0123456789"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := NewChunkEncoder(goldenID, goldenModel, goldenCreated, true)
			e.SetModel(tt.set)
			got := encode(e)
			want := encode(NewChunkEncoder(goldenID, tt.want, goldenCreated, true))
			if string(got) != string(want) {
				t.Errorf("after SetModel(%q):\n%s\nwant:\n%s", tt.set, got, want)
			}
			openaitest.CheckChunks(t, got, openaitest.Want{Model: tt.want})
		})
	}
}
