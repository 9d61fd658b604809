package gemini

import (
	"fmt"
	"testing"

	"github.com/agate-gateway/agate/translate/internal/goldentest"
	"github.com/agate-gateway/agate/translate/internal/spectest"
)

// TestGolden runs every transcript in testdata (goldentest.Dialect says what each section
// means): adding a recording is adding a file. The vertex backend sends the same request
// bodies to Vertex AI, so each must satisfy both published specs: the Gemini API's
// GenerateContentRequest and Vertex AI's (its aiplatform v1 discovery document).
func TestGolden(t *testing.T) {
	goldentest.Run(t, goldentest.Dialect{
		Provider: New(), NewDecoder: newGeminiDecoder, ArrayStream: geminiJSONArrayToSSE,
		Schema: func(t testing.TB) func([]byte) error {
			gemini, vertex := spectest.GeminiRequest(t), spectest.VertexGenerateContentRequest(t)
			return func(body []byte) error {
				if err := gemini(body); err != nil {
					return err
				}
				if err := vertex(body); err != nil {
					return fmt.Errorf("vertex AI: %w", err)
				}
				return nil
			}
		},
	})
}
