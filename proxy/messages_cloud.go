package proxy

import (
	"github.com/agate-gateway/agate/translate"
	"github.com/agate-gateway/agate/translate/anthropic"
	"github.com/agate-gateway/agate/translate/converse"
	"github.com/agate-gateway/agate/translate/messagesin"
)

// The Messages passthrough to Claude on the clouds: a /v1/messages request whose routes
// are all Claude, on anthropic backends or on a cloud's (Vertex AI publisher anthropic,
// Bedrock Claude model ids), is passed through like one to Anthropic, changing only what
// the cloud's endpoint takes otherwise, as the clouds document it and the Anthropic SDK's
// vertex and bedrock options do:
//   - the body has no model (the URL names it) and anthropic_version vertex-2023-10-16 or
//     bedrock-2023-05-31 instead of the anthropic-version header;
//   - Bedrock's has no stream (InvokeModel or InvokeModelWithResponseStream says it) and
//     takes the client's anthropic-beta names, as far as the backend's allowed_betas go,
//     as its anthropic_beta member; Vertex keeps them in the anthropic-beta header;
//   - Bedrock's stream is AWS event-stream frames whose chunk events each hold one of
//     Claude's events in base64: each is decoded and forwarded as that SSE event.
// The answers are Anthropic's own (Vertex's SSE, Bedrock's decoded chunks, either's
// Message), so the client gets them as a client of Anthropic's API does, thinking
// signatures and tool_use blocks byte for byte.

// cloudClaude returns how route r's backend takes a passed-through Messages body when it
// serves Claude on a cloud; ok is false for any other route.
func cloudClaude(r *route) (c messagesin.CloudPass, ok bool) {
	b := r.backend
	switch {
	case b.typ == "vertex" && b.cfg.Vertex.Publisher == "anthropic":
		return messagesin.CloudPass{Version: anthropic.VertexVersion}, true
	case b.typ == "bedrock" && bedrockClaude(r.upstreamModel):
		return messagesin.CloudPass{Version: anthropic.BedrockVersion, NoStream: true}, true
	}
	return messagesin.CloudPass{}, false
}

// speaksMessages reports whether route r takes a Messages body passed through: an
// anthropic backend, or Claude on a cloud.
func speaksMessages(r *route) bool {
	if r.backend.dialect == "anthropic" {
		return true
	}
	_, ok := cloudClaude(r)
	return ok
}

// cloudBody appends the Messages body of route r, Claude on a cloud (c), to dst: on
// Bedrock, with the client's anthropic-beta names the backend allows.
func (f *messagesForward) cloudBody(dst []byte, r *route, c messagesin.CloudPass) []byte {
	if c.NoStream && f.c.call.betas != nil {
		b := r.backend
		c.Betas = f.c.call.betas.valueFor(b.name, b.betas, f.c.call.metrics)
	}
	return messagesin.AppendCloudPassBody(dst, f.body, c)
}

// cloudHeaders returns the request's own headers for backend b when b is a cloud's
// (ok): none, its body holding the version (and Bedrock's the betas), but on Vertex the
// client's anthropic-beta names b allows.
func (c *modelCall) cloudHeaders(b *backend) (h []translate.Header, ok bool) {
	switch {
	case b.typ != "vertex" && b.typ != "bedrock":
		return nil, false
	case b.typ == "bedrock" || c.betas == nil:
		return nil, true
	}
	if value := c.betas.valueFor(b.name, b.betas, c.metrics); value != "" {
		return []translate.Header{{Name: "anthropic-beta", Value: value}}, true
	}
	return nil, true
}

// beginBedrock starts an attempt's stream from route r, Claude on Bedrock: its events
// are event-stream chunks, unwrapped (f.chunks) before the Anthropic decoder reads them.
func (f *messagesForward) beginBedrock(r *route) {
	if bp, ok := r.backend.provider.(bedrockProvider); ok { // a bedrock backend's (cloudOf)
		f.dec = bp.claude.NewStreamDecoder(nil)
	}
	if f.chunks == nil {
		f.chunks = &converse.ChunkReader{}
	}
}
