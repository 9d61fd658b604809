package proxy

import (
	"strings"

	"github.com/agate-gateway/agate/internal/jsonx"
	"github.com/agate-gateway/agate/translate"
	"github.com/agate-gateway/agate/translate/anthropic"
	"github.com/agate-gateway/agate/translate/converse"
)

// bedrockProvider is the provider of a bedrock backend: Claude models through
// InvokeModel and InvokeModelWithResponseStream with the Anthropic dialect (the body as
// Bedrock takes it, anthropic.NewCloud; the stream's chunk events unwrapped by
// converse.InvokeStream), every other model through Converse and ConverseStream. The
// model id decides (bedrockClaude); the two dialects stay apart, composed here.
type bedrockProvider struct {
	claude, converse translate.Provider
}

func newBedrockProvider() bedrockProvider {
	return bedrockProvider{
		claude:   anthropic.NewCloud(anthropic.Cloud{Version: anthropic.BedrockVersion, NoStream: true}),
		converse: converse.New(),
	}
}

// bedrockClaude reports whether a Bedrock model id names an Anthropic model: a
// foundation model (anthropic.claude-...), a cross-region inference profile
// (us.anthropic.claude-..., global.anthropic...) or an ARN of either.
func bedrockClaude(model string) bool { return strings.Contains(model, "anthropic.") }

func (p bedrockProvider) Path(model string, stream bool) string {
	if !bedrockClaude(model) {
		return p.converse.Path(model, stream)
	}
	if stream {
		return "/model/" + converse.EscapeModel(model) + "/invoke-with-response-stream"
	}
	return "/model/" + converse.EscapeModel(model) + "/invoke"
}

// embedder is Bedrock's embedding models' InvokeModel (embedSource).
func (bedrockProvider) embedder() translate.Embedder { return converse.Embedder{} }

// Headers are none: the credential is the signer's (cloudauth.AWS).
func (bedrockProvider) Headers(string) []translate.Header { return nil }

func (p bedrockProvider) AppendRequest(dst []byte, req *translate.Request, opts *translate.Options) ([]byte, error) {
	if opts != nil && bedrockClaude(opts.UpstreamModel) {
		return p.claude.AppendRequest(dst, req, opts)
	}
	return p.converse.AppendRequest(dst, req, opts)
}

func (p bedrockProvider) NewStreamDecoder(opts *translate.Options) translate.StreamDecoder {
	if opts != nil && bedrockClaude(opts.UpstreamModel) {
		return converse.InvokeStream(p.claude.NewStreamDecoder(opts))
	}
	return p.converse.NewStreamDecoder(opts)
}

// DecodeResponse tells the two answers apart by their shape: a Converse answer has an
// output member at its root, an InvokeModel answer of Claude is a Messages API message
// (id, type, content...) and has none.
func (p bedrockProvider) DecodeResponse(body []byte, emit translate.Emit) error {
	sc := jsonx.NewScanner(jsonx.View(body))
	var m [1]jsonx.Value
	if _, ok := sc.RootMembers([]string{"output"}, m[:]); ok && !m[0].Exists() {
		return p.claude.DecodeResponse(body, emit)
	}
	return p.converse.DecodeResponse(body, emit)
}

// DecodeError reads Bedrock's error answer, the same for both APIs.
func (p bedrockProvider) DecodeError(status int, body []byte) *translate.UpstreamError {
	return converse.DecodeError(status, body)
}

// ContextExceeded implements translate.ContextLimit: Bedrock refuses a prompt over the
// model's context window the same way on both APIs (converse.ContextExceeded), so a
// model's context_fallbacks apply on bedrock backends too.
func (bedrockProvider) ContextExceeded(e *translate.UpstreamError) bool {
	return converse.ContextExceeded(e)
}
