package anthropic

import (
	"testing"

	"github.com/agate-gateway/agate/translate"
	"github.com/agate-gateway/agate/translate/converse"
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

// TestGoldenVertex runs the transcripts of Claude on Vertex AI (testdata/vertex): its
// recorded answers through the same decoders, and its requests with NewCloud's
// VertexVersion (anthropic_version in the body, no model). rawPredict has no published
// request schema of its own.
func TestGoldenVertex(t *testing.T) {
	goldentest.Run(t, goldentest.Dialect{
		Provider: NewCloud(Cloud{Version: VertexVersion}), NewDecoder: newAnthropicStream, Typed: true,
		Splits: anthropicCheckSplits, Dir: "testdata/vertex",
	})
}

// TestGoldenBedrock runs the transcripts of Claude on Amazon Bedrock (testdata/bedrock):
// InvokeModel answers through the same decoders, and InvokeModelWithResponseStream answers
// (upstream.eventstream.b64, the recorded event-stream frames) through converse.InvokeStream
// around this dialect's stream decoder, as the bedrock backend decodes them; requests with
// NewCloud's BedrockVersion and NoStream, as proxy/bedrock.go builds it.
func TestGoldenBedrock(t *testing.T) {
	goldentest.Run(t, goldentest.Dialect{
		Provider: NewCloud(Cloud{Version: BedrockVersion, NoStream: true}), Typed: true, Dir: "testdata/bedrock",
		NewDecoder: func() translate.StreamDecoder { return converse.InvokeStream(newAnthropicStream()) },
	})
}
