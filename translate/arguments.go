package translate

// NoArguments is the arguments of a tool call whose upstream streamed no argument text:
// the empty JSON object, as OpenAI writes the call of a function without parameters and
// as an Anthropic tool_use block has input {}. It is the one rule for every client API:
// chat (function.arguments, streamed and whole), Responses (function_call_arguments.done,
// the function_call item, streamed and whole) and Messages (tool_use input).
const NoArguments = "{}"

// NoArgumentText reports whether args, the argument text a tool call collected, is no
// arguments at all: empty or only JSON whitespace.
func NoArgumentText[S ~string | ~[]byte](args S) bool {
	for i := 0; i < len(args); i++ {
		switch args[i] {
		case ' ', '\t', '\n', '\r':
		default:
			return false
		}
	}
	return true
}

// Arguments returns the arguments a client gets for a tool call that collected args:
// args itself, or NoArguments when NoArgumentText(args).
func Arguments(args string) string {
	if NoArgumentText(args) {
		return NoArguments
	}
	return args
}
