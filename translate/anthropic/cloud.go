package anthropic

import (
	"github.com/agate-gateway/agate/internal/jsonx"
	"github.com/agate-gateway/agate/translate"
)

// Cloud is how a cloud's Claude endpoint takes the Messages body (Bedrock's InvokeModel,
// Vertex AI's rawPredict): the model is in the URL, so the body has anthropic_version
// instead of model, and on some no stream member (the endpoint says whether the answer
// streams).
type Cloud struct {
	// Version is the body's anthropic_version (BedrockVersion, VertexVersion); "" writes
	// the model as Anthropic's API takes it.
	Version string
	// NoStream leaves out "stream":true (Bedrock's InvokeModelWithResponseStream; Vertex
	// AI's streamRawPredict takes it).
	NoStream bool
}

// The anthropic_version each cloud's Claude endpoint takes in the body.
const (
	// BedrockVersion is Bedrock's InvokeModel and InvokeModelWithResponseStream.
	BedrockVersion = "bedrock-2023-05-31"
	// VertexVersion is Vertex AI's rawPredict and streamRawPredict.
	VertexVersion = "vertex-2023-10-16"
)

// NewCloud returns the Messages provider with the body of c. Its Path is Anthropic's: the
// cloud's backend gives its own; it sends no headers (a Version set): the cloud's signer
// authenticates the request. Its decoders are Anthropic's, fed the Messages API events and
// bodies the cloud forwards.
func NewCloud(c Cloud) translate.Provider { return anthropicProvider{cloud: c} }

// appendHead opens the body: {"model":<model> or {"anthropic_version":<version>.
func (c Cloud) appendHead(dst []byte, model string) []byte {
	if c.Version != "" {
		dst = append(dst, `{"anthropic_version":`...)
		return jsonx.AppendString(dst, c.Version)
	}
	dst = append(dst, `{"model":`...)
	return jsonx.AppendString(dst, model)
}
