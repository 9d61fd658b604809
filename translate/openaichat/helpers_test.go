package openaichat

import (
	"testing"

	"github.com/agate-gateway/agate/internal/openaitest"
)

// Fixed values the encoder tests encode with, as goldentest does.
const (
	goldenID      = "chatcmpl-golden"
	goldenModel   = "client-model"
	goldenCreated = 1700000000
)

// checkChunkInvariants checks an OpenAI SSE body the encoder tests produce (include_usage
// on) against the chunk contract; it tolerates a final in-band error frame.
func checkChunkInvariants(t testing.TB, body []byte) {
	t.Helper()
	openaitest.CheckChunks(t, body, openaitest.Want{ErrorEnd: true})
}
