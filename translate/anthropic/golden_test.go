package anthropic

import (
	"testing"

	"github.com/agate-gateway/agate/translate/internal/goldentest"
	"github.com/agate-gateway/agate/translate/internal/spectest"
)

// TestGolden runs every transcript in testdata (goldentest.Dialect says what each section
// means): adding a recording is adding a file.
func TestGolden(t *testing.T) {
	goldentest.Run(t, goldentest.Dialect{
		Provider: New(), NewDecoder: newAnthropicStream, Typed: true,
		Splits: anthropicCheckSplits, Schema: spectest.AnthropicRequest,
	})
}
