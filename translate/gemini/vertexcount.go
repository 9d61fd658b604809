package gemini

import "github.com/agate-gateway/agate/translate"

// AppendVertexCountTokens appends the body of Vertex AI's countTokens
// (publishers/google/models/{model}:countTokens) for req: the CountTokensRequest of
// Vertex's v1 REST reference, whose members are the request's inputs as generateContent
// takes them (contents, systemInstruction, tools), without the generation settings and
// tool choice, which count no tokens. The answer is {"totalTokens":N,
// "totalBillableCharacters":N,"promptTokensDetails":[...]}. The Gemini API's countTokens
// (wrapping a whole generateContentRequest) is another body.
func AppendVertexCountTokens(dst []byte, req *translate.Request, opts *translate.Options) ([]byte, error) {
	return appendRequest(dst, req, opts, true)
}
