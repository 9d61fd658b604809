package translate

// EventKind says which fields of an Event are set.
type EventKind uint8

// The normalized event vocabulary every upstream dialect decodes into.
const (
	// EventStart carries ID and Model. Decoders emit it once, first.
	EventStart EventKind = iota + 1
	// EventTextDelta carries Text for Choice, and, when the client asked for them and the
	// upstream sent them, the Logprobs of the tokens of that Text.
	EventTextDelta
	// EventRefusalDelta carries refusal Text for Choice.
	EventRefusalDelta
	// EventReasoningDelta carries reasoning Text for Choice.
	EventReasoningDelta
	// EventToolCallStart carries Index, CallID and Name.
	EventToolCallStart
	// EventToolCallArgsDelta carries Index and an argument JSON fragment in Text.
	EventToolCallArgsDelta
	// EventToolCallEnd carries Index. A call that ends with no argument text (an
	// Anthropic tool_use with input {}, a Gemini functionCall without args) has the
	// arguments NoArguments for every client API (see Arguments).
	EventToolCallEnd
	// EventUsage carries Usage, replacing any earlier usage of the response (decoders emit
	// the cumulative figures).
	EventUsage
	// EventFinish carries FinishReason for Choice.
	EventFinish
	// EventError carries Err: an upstream failure that arrived mid-stream.
	EventError
	// EventLogprobs carries Logprobs for Choice: content token log probabilities that
	// arrived without text to carry them (decoders attach them to the EventTextDelta of
	// their text when there is one). They belong to the content emitted before them.
	EventLogprobs
	// EventReasoningBlock carries Block for Choice: one complete reasoning block the
	// upstream needs back on the next turn (an Anthropic thinking block and its
	// signature, a redacted_thinking block, a Responses reasoning item with its
	// encrypted content), emitted when the block ends, after the EventReasoningDelta of
	// its text. The OpenAI chat encoders ignore it: that wire has no place for it, so
	// decoders also carry the blocks in the next tool call's id (CarryID). Client
	// dialects that have a place for it (OpenAI Responses, Anthropic Messages) encode it.
	// A decoder that sets Block.Dialect emits, before each EventToolCallStart whose
	// CallID carries state, blocks holding all of that state (Gemini: one block with the
	// call's CallID), so a client dialect that returns the blocks (SealBlock) may send
	// the call's plain id (SplitID) instead.
	EventReasoningBlock
	// EventBuiltinItem carries Item for Choice: a built-in (server-side) tool call or
	// result the upstream ran itself (a Responses web_search_call, an Anthropic
	// server_tool_use or web_search_tool_result block), emitted whole when it is done. The
	// client dialect of the item's wire shows it (responsesin, messagesin); the others,
	// the OpenAI chat encoders among them, ignore it.
	EventBuiltinItem
)

// Finish reasons, as OpenAI names them.
const (
	FinishStop          = "stop"
	FinishLength        = "length"
	FinishToolCalls     = "tool_calls"
	FinishContentFilter = "content_filter"
)

// Event is one normalized upstream event. Only the fields of its Kind are meaningful.
// Strings in an Event may alias the decoder's input buffer: they are valid only during the
// callback that receives the event, and a consumer that keeps one must copy it.
type Event struct {
	Kind EventKind
	// Choice is the choice (candidate) index; 0 unless the request asked for n > 1.
	Choice int
	// ID and Model are the upstream response id and model (EventStart).
	ID, Model string
	// Text is the text, reasoning, refusal or argument fragment.
	Text string
	// Index identifies a tool call within its choice. It need not be dense: encoders number
	// calls 0, 1, 2... in order of EventToolCallStart.
	Index int
	// CallID and Name identify a tool call (EventToolCallStart).
	CallID, Name string
	// Usage is the token usage so far (EventUsage).
	Usage Usage
	// FinishReason is an OpenAI finish reason (EventFinish).
	FinishReason string
	// Err is the mid-stream upstream failure (EventError).
	Err *UpstreamError
	// Logprobs are content token log probabilities (EventTextDelta, EventLogprobs); nil
	// when there are none. The slice, its Top slices and its strings may alias decoder
	// buffers, like the strings above: a consumer that keeps them must copy them.
	Logprobs []TokenLogprob
	// Block is the reasoning block (EventReasoningBlock); its strings alias like Text.
	Block *ThinkingBlock
	// Item is the built-in tool item (EventBuiltinItem); its strings alias like Text.
	Item *Item
}

// TokenLogprob is the log probability of one output token, with the most likely tokens at
// its position, as OpenAI's ChatCompletionTokenLogprob carries them.
type TokenLogprob struct {
	Token   string
	Logprob float64
	// Bytes are the token's UTF-8 bytes when they are not Token's own (a token that holds
	// part of a multi-byte character); nil means the bytes of Token.
	Bytes []byte
	// Top are the most likely tokens at this position, most likely first; nil when the
	// upstream sent none.
	Top []TopLogprob
}

// TopLogprob is one of the most likely tokens at a position.
type TopLogprob struct {
	Token   string
	Logprob float64
	// Bytes are as in TokenLogprob: nil means the bytes of Token.
	Bytes []byte
}

// Usage is token usage in OpenAI semantics: PromptTokens includes cached and cache-write
// input tokens; CompletionTokens includes reasoning tokens.
type Usage struct {
	PromptTokens        int
	CompletionTokens    int
	CachedTokens        int
	CacheCreationTokens int
	ReasoningTokens     int
}

// Add adds u2 to u, field by field.
func (u *Usage) Add(u2 Usage) {
	u.PromptTokens += u2.PromptTokens
	u.CompletionTokens += u2.CompletionTokens
	u.CachedTokens += u2.CachedTokens
	u.CacheCreationTokens += u2.CacheCreationTokens
	u.ReasoningTokens += u2.ReasoningTokens
}

// Emit receives events. Returning an error stops decoding and is returned by the decoder.
type Emit func(*Event) error
