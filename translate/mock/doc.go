// Package mock is the offline mock backend (backends.<name>.type: mock): a
// translate.Provider that answers in process, deterministic, with no network, clock or
// randomness. Like every dialect it reads JSON (a tool's schema) with internal/jsonx only.
//
// The contract: Provider.Answer emits the events of one turn for a request, as an
// upstream's decoder would (EventStart, then the answer's deltas, EventUsage,
// EventFinish), stopping at the first error emit returns or once ctx is done. It echoes
// the last user message word by word. When the request carries tools, its tool_choice
// is not none and the last user message names one of them (the first named, in request
// order), it calls that tool instead, with arguments filled from the tool's schema
// (Arguments: the required properties, with their defaults, examples, enums or values
// of their type) and finish reason tool_calls. A Scripted mock answers turn i of a
// conversation (i = the assistant messages the request holds) with its script's turn i
// (text, or tool calls), and past the script's end as the unscripted mock.
// When the conversation ends with tool results, it answers "Tool results:" followed by
// them. Usage counts words: the prompt's of every message, the completion's of the
// answer (1 for a tool call).
//
// Provider's translate.Provider methods phrase and decode nothing: a caller that finds
// Answer (proxy's localProvider) calls it instead of a round trip. Like every dialect it
// imports only translate.
package mock
