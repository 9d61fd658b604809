package translate

import "strconv"

// MaxToolName is the longest name a function tool may have: OpenAI's and Gemini's limit,
// within Anthropic's (128).
const MaxToolName = 64

// ValidToolName reports whether name may name a function tool a client declares: 1 to
// MaxToolName bytes of a-z, A-Z, 0-9, _ and -, the set every upstream accepts. It is the
// one rule of the three client parsers (chat, Responses, Messages), so that a request one
// dialect accepts is not refused in another's terms.
func ValidToolName(name string) bool {
	if len(name) == 0 || len(name) > MaxToolName {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// ToolNameRule says what ValidToolName accepts, for error messages.
const ToolNameRule = "function names must be 1 to 64 characters of a-z, A-Z, 0-9, _ and -"

// CheckToolName applies the client parsers' rule to the name of a function tool declared
// after tools: a valid name (ValidToolName) that none of tools has. It returns nil or the
// error naming param (a *ParamError: a caller that returns it as an error checks for nil
// first).
func CheckToolName(tools []Tool, name, param string) *ParamError {
	if !ValidToolName(name) {
		return Errorf(param, ToolNameRule)
	}
	for k := range tools {
		if tools[k].Builtin == nil && tools[k].Name == name {
			return Errorf(param, "duplicate function name %s", strconv.Quote(name))
		}
	}
	return nil
}
