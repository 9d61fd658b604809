package proxy

import (
	"context"
	"net/http"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/agate-gateway/agate/translate"
	"github.com/agate-gateway/agate/translate/converse"
	"github.com/agate-gateway/agate/translate/messagesin"
	"github.com/agate-gateway/agate/upstream"
)

// The token count of a Converse model on Bedrock (handleCountTokens): Bedrock's CountTokens
// (POST /model/{modelId}/count-tokens, bedrock-runtime 2023-09-30) with the union member
// converse, a ConverseTokensRequest: the messages, system, toolConfig and
// additionalModelRequestFields of the Converse body the request would be sent as (the
// members the Smithy model gives that shape), answered {"inputTokens": n}. CountTokens
// takes foundation model ids only (converseFoundationModel), and only some models count:
// Bedrock refuses the others with a 400 ValidationException ("The provided model doesn't
// support counting tokens", as for Amazon Nova), and the count is then
// messagesin.EstimateTokens, marked estimated; the backend remembers such a model and does
// not ask again.

// tokenCountHeader is the header of a count_tokens answer saying whether its input_tokens
// were counted by the upstream ("exact") or estimated by the gateway ("estimated").
const tokenCountHeader = "X-Agate-Token-Count" // canonical: the server writes response names as given

// converseCountMembers are the members of a Converse body that ConverseTokensRequest takes.
var converseCountMembers = [...]string{"messages", "system", "toolConfig", "additionalModelRequestFields"}

// converseCount returns the input tokens of req on route r, a Converse model on a bedrock
// backend, and whether Bedrock counted them (else they are estimated).
func (m *messagesRun) converseCount(ctx context.Context, r *route, req *translate.Request) (n int, exact bool, err error) {
	b := r.backend
	model := converseFoundationModel(r.upstreamModel)
	if _, refused := b.uncounted.Load(model); refused {
		return messagesin.EstimateTokens(req), false, nil
	}
	whole, err := b.provider.AppendRequest(nil, req, m.c.call.options(r, false))
	if err != nil {
		return 0, false, err
	}
	n, err = m.countUpstream(ctx, "/model/"+converse.EscapeModel(model)+"/count-tokens", converseCountBody(whole), "inputTokens")
	if ue := upstream.AsError(err); ue != nil && ue.Status == http.StatusBadRequest {
		if strings.Contains(ue.Message, "counting tokens") {
			b.uncounted.Store(model, struct{}{})
		}
		return messagesin.EstimateTokens(req), false, nil
	}
	return n, err == nil, err
}

// converseCountBody is the CountTokens body of a Converse body: {"input":{"converse":{...}}}
// with the members ConverseTokensRequest takes, in the order the body has them.
func converseCountBody(whole []byte) []byte {
	body := make([]byte, 0, len(whole)+32)
	body = append(body, `{"input":{"converse":{`...)
	first := true
	gjson.ParseBytes(whole).ForEach(func(k, v gjson.Result) bool {
		for _, name := range converseCountMembers {
			if k.Str == name {
				if !first {
					body = append(body, ',')
				}
				first = false
				body = append(body, k.Raw...)
				body = append(body, ':')
				body = append(body, v.Raw...)
			}
		}
		return true
	})
	return append(body, "}}}"...)
}

// converseFoundationModel is the foundation model id of a Bedrock Converse model id: a
// cross-region inference profile's id, "<geography>.<provider>.<model>" (us.amazon.nova-lite-v1:0),
// without its geography; a foundation model id ("<provider>.<model>") or an ARN as it is.
func converseFoundationModel(model string) string {
	if strings.HasPrefix(model, "arn:") {
		return model
	}
	id, _, _ := strings.Cut(model, ":")
	if strings.Count(id, ".") >= 2 {
		_, rest, _ := strings.Cut(model, ".")
		return rest
	}
	return model
}
