// Package embeddingsin is the client dialect of OpenAI's embeddings API (POST
// /v1/embeddings): Parse reads a client's body into a translate.EmbedRequest, AppendBody
// writes the answer from translate.Embeddings (vectors as JSON numbers, or as the base64 of
// their little-endian float32 bytes, which the Node SDK asks for by default and decodes),
// and the passthrough to an OpenAI upstream forwards the client's body with only its model
// rewritten (AppendForward) and the upstream's answer with only its model rewritten
// (RewriteAnswer), reading its usage.
//
// The request's shape is OpenAI's: input is a string, an array of strings, an array of
// token ids or an array of token-id arrays (at most translate.MaxEmbedInputs inputs,
// counted before any is kept, and at most translate.MaxEmbedTokenIDs token ids); model; dimensions; encoding_format "float" (default) or
// "base64"; user. The extension member task_type (Gemini's taskType) is read too. Other
// members are ignored when translated and forwarded by the passthrough.
package embeddingsin
