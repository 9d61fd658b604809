package responsesin

import "github.com/agate-gateway/agate/translate"

// Codes of the ParamErrors for a body that is not UTF-8 and for ambiguous member names:
// the chat completions parser's codes, so that both endpoints answer alike.
const (
	CodeInvalidUTF8  = translate.CodeInvalidUTF8
	CodeDuplicateKey = translate.CodeDuplicateKey
	CodeKeyCase      = translate.CodeKeyCase
)
