package proxy

import (
	"encoding/base64"
	"net/url"
	"strings"

	"github.com/agate-gateway/agate/translate"
	"github.com/agate-gateway/agate/translate/anthropic"
	"github.com/agate-gateway/agate/translate/converse"
	"github.com/agate-gateway/agate/translate/gemini"
)

// The token counts of Claude on the clouds (handleCountTokens), each the cloud's own
// endpoint for it:
//   - Vertex AI: POST .../publishers/anthropic/models/count-tokens:rawPredict, the
//     Messages count_tokens body with the model in it and anthropic_version
//     vertex-2023-10-16, answered {"input_tokens": n};
//   - Bedrock: CountTokens, POST /model/{modelId}/count-tokens with
//     {"input":{"invokeModel":{"body": <the InvokeModel body, base64>}}}, answered
//     {"inputTokens": n}. It takes foundation model ids only, so a cross-region
//     inference profile's geography prefix (us., eu., global. ...) is left out.
//   - Gemini on Vertex AI: POST .../publishers/google/models/{model}:countTokens with the
//     request's inputs as generateContent takes them (gemini.AppendVertexCountTokens),
//     answered {"totalTokens": n, ...}.
// Converse models on Bedrock: converseCount (messages_count_bedrock.go).

// vertexCountPath is the count-tokens path of a vertex backend of publisher anthropic.
func vertexCountPath(b *backend) string {
	return vertexModelPath(b, "anthropic", "count-tokens") + ":rawPredict"
}

// vertexModelPath is the path of a publisher's model on vertex backend b.
func vertexModelPath(b *backend, publisher, model string) string {
	v := b.cfg.Vertex
	return "/v1/projects/" + url.PathEscape(v.Project) + "/locations/" + url.PathEscape(v.Location) + "/publishers/" + publisher + "/models/" + url.PathEscape(model)
}

// cloudCounted reports whether route r's backend is a cloud's that counts its model's
// tokens (cloudCount).
func cloudCounted(r *route) bool {
	_, ok := cloudClaude(r)
	return ok || r.backend.typ == "vertex"
}

// cloudCount returns the request that counts the tokens of req on route r's cloud
// backend: its path, body and the member of the answer that holds the count; ok is false
// when the backend has no count endpoint for the model.
func (m *messagesRun) cloudCount(r *route, req *translate.Request) (path string, body []byte, field string, ok bool, err error) {
	b := r.backend
	switch {
	case !cloudCounted(r):
	case b.typ == "vertex" && b.cfg.Vertex.Publisher != "anthropic": // Gemini
		body, err = gemini.AppendVertexCountTokens(nil, req, m.c.call.options(r, false))
		if err != nil {
			return "", nil, "", false, err
		}
		return vertexModelPath(b, "google", r.upstreamModel) + ":countTokens", body, "totalTokens", true, nil
	case b.typ == "vertex":
		pass := m.passBody(nil, r) // the client's body, the upstream model in it
		body = append([]byte(`{"anthropic_version":"`+anthropic.VertexVersion+`",`), pass[1:]...)
		return vertexCountPath(b), body, "input_tokens", true, nil
	default: // bedrock's Claude
		invoke, err := b.provider.AppendRequest(nil, req, m.c.call.options(r, false))
		if err != nil {
			return "", nil, "", false, err
		}
		body = append(body, `{"input":{"invokeModel":{"body":"`...)
		body = base64.StdEncoding.AppendEncode(body, invoke)
		body = append(body, `"}}}`...)
		return "/model/" + converse.EscapeModel(foundationModel(r.upstreamModel)) + "/count-tokens", body, "inputTokens", true, nil
	}
	return "", nil, "", false, nil
}

// foundationModel is the foundation model id of a Bedrock model id: a cross-region
// inference profile's id ("us.anthropic.claude-...") without its geography prefix; an ARN
// or a foundation model id as it is.
func foundationModel(model string) string {
	if strings.HasPrefix(model, "arn:") {
		return model
	}
	if i := strings.Index(model, "anthropic."); i > 0 && !strings.Contains(model[:i-1], ".") && model[i-1] == '.' {
		return model[i:]
	}
	return model
}
