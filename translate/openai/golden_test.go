package openai

import (
	"testing"

	"github.com/agate-gateway/agate/translate"
	"github.com/agate-gateway/agate/translate/internal/goldentest"
	"github.com/agate-gateway/agate/translate/internal/spectest"
)

// TestGolden runs every transcript in testdata (goldentest.Dialect says what each section
// means): adding a case is adding a file.
func TestGolden(t *testing.T) {
	goldentest.Run(t, goldentest.Dialect{
		Provider:   New(),
		NewDecoder: func() translate.StreamDecoder { return New().NewStreamDecoder(&translate.Options{}) },
		Schema:     spectest.ChatRequest,
	})
}
