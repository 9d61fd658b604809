package translate

// Request is the gateway's model of a request for a completion: what a client dialect
// parses into (OpenAI chat completions today, ParseRequest; OpenAI Responses and Anthropic
// Messages are planned, issues 14 and 16) and what every upstream dialect encodes from. It
// is not any one wire's shape: fields that only some dialects have (TopK, thinking
// blocks, cache_control, built-in tool items) are plain optional fields, the zero value
// meaning absent, and an upstream that cannot honour one rejects or drops it
// (Options.Drop). Strings alias Body, which the Request owns; a Request is immutable once parsed except by its owner (the tool loop
// appends messages and tools to its own copy, see Clone).
type Request struct {
	// Body is the request body as received.
	Body string
	// Literals, when set, is memory (a lazy parse's body, see openaichat.ParseRequestLazy)
	// in which every string of the request is the contents of a JSON string literal as
	// written, escapes kept. A string lying elsewhere is a decoded value. Encoders read
	// strings through AppendText and Decoded, which tell the two apart.
	Literals string
	// Edited is set by Clone: Messages, Tools and ToolChoice may no longer match Body,
	// so encoders that reuse Body must re-encode those.
	Edited bool
	// Spans locate in Body the members an encoder that reuses Body rewrites in place
	// (the OpenAI chat passthrough): set by the chat parser, zero otherwise.
	Spans BodySpans

	Model        string
	Stream       bool
	IncludeUsage bool // stream_options.include_usage
	Messages     []Message
	Tools        []Tool
	ToolChoice   ToolChoice
	// ParallelToolCalls is nil when the client did not say.
	ParallelToolCalls *bool
	// MaxTokens is max_completion_tokens, else max_tokens; 0 when unset.
	MaxTokens int
	// MaxTokensParam names the field MaxTokens came from, for error messages.
	MaxTokensParam   string
	Temperature      *float64
	TopP             *float64
	PresencePenalty  *float64
	FrequencyPenalty *float64
	Stop             []string
	// N is the number of choices; 0 when unset (meaning 1).
	N           int
	Seed        *int64
	Logprobs    bool
	TopLogprobs *int
	// ResponseFormat is the zero value when unset.
	ResponseFormat ResponseFormat
	// ReasoningEffort is "" when unset, else none|minimal|low|medium|high|xhigh.
	ReasoningEffort string
	// TopK samples from the K most likely tokens (Anthropic top_k, Gemini topK); nil
	// when unset. OpenAI chat has no such field.
	TopK *int
	User string
	// Metadata is the raw JSON object, "" when unset.
	Metadata string
	// Extra holds every other top-level field in order of appearance. The OpenAI
	// passthrough forwards them; translating backends reject or drop them.
	Extra []Field
	// Carried holds the compressed state of the request's carry ids, opened once by its
	// client parser under the request's Allowance (OpenCarried), by id: nil for state
	// that did not inflate. Encoders read carry ids through Request.SplitID. Read-only
	// once parsed; Clone shares it.
	Carried map[string][]byte
}

// Span is the byte range [Start, End) of a JSON value in Request.Body; End == 0 means
// the member is absent.
type Span struct{ Start, End int }

// BodySpans are the values, in Body, of the top-level members the OpenAI passthrough
// rewrites: model, stream and stream_options (an explicit null included).
type BodySpans struct {
	Model, Stream, StreamOptions Span
}

// Field is a raw top-level JSON field.
type Field struct {
	Name string
	Raw  string
}

// Message roles.
const (
	RoleSystem    = "system"
	RoleDeveloper = "developer"
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool"
)

// Message is one chat message.
type Message struct {
	Role string
	Name string
	// Content is the message content; a string content is one PartText.
	Content []Part
	// ToolCalls are an assistant message's tool calls.
	ToolCalls []ToolCall
	// ToolCallID is a tool message's call id.
	ToolCallID string
	// ToolError marks a tool message whose Content is the error of a failed call rather
	// than its result. The tool loop sets it for server tools, and Messages clients send it
	// as a tool_result's is_error; the chat parser never sets it. Encoders mark it the
	// upstream's way (Anthropic is_error, a Gemini "error" response) or, where the upstream
	// has no such mark, prefix the text with "Error: ".
	ToolError bool
	// Reasoning is reasoning_content a client sent back on an assistant message.
	Reasoning string
	// ThinkingBlocks are Anthropic thinking blocks a client sent back on an assistant
	// message (the "thinking_blocks" extension some clients keep).
	ThinkingBlocks []ThinkingBlock
	// Refusal is an assistant message's refusal text.
	Refusal string
}

// Text returns the concatenated text parts of the message.
func (m *Message) Text() string {
	if len(m.Content) == 1 && m.Content[0].Type == PartText {
		return m.Content[0].Text
	}
	n := 0
	for i := range m.Content {
		n += len(m.Content[i].Text)
	}
	b := make([]byte, 0, n)
	for i := range m.Content {
		if m.Content[i].Type == PartText {
			b = append(b, m.Content[i].Text...)
		}
	}
	return string(b)
}

// ThinkingBlock is an Anthropic thinking or redacted_thinking block.
type ThinkingBlock struct {
	// Type is "thinking" or "redacted_thinking" (Anthropic), or "reasoning" (an OpenAI
	// Responses reasoning item).
	Type string
	// Thinking is the readable reasoning: a thinking block's text, a reasoning item's
	// summary parts joined by blank lines.
	Thinking string
	// Signature is a thinking block's signature.
	Signature string
	// Data is the opaque part: a redacted_thinking block's data, a reasoning item's
	// encrypted_content.
	Data string
	// ID is a reasoning item's id; "" for Anthropic blocks.
	ID string
	// Dialect is the upstream dialect whose opaque state the block holds (anthropic,
	// gemini); an upstream encoder uses only its own dialect's blocks. "" is a block a
	// client sent in a wire's own terms (thinking_blocks, a Messages thinking block),
	// known by its Type.
	Dialect string
	// CallID is, for state that belongs to one tool call (Gemini thought signatures), the
	// id of that call in the message's ToolCalls; "" for state of the whole turn.
	CallID string
}

// PartType is a content part's kind.
type PartType uint8

// Content part kinds.
const (
	PartText PartType = iota + 1
	PartImage
	PartFile
	PartAudio
	PartRefusal
	// PartItem is an opaque upstream item (Part.Item): a built-in tool call or result.
	PartItem
)

// Part is one content part. It is small (Type, Text and three words) because a request
// holds many and most are text: the data of the rarer kinds sits behind Media.
type Part struct {
	Type PartType
	// Text of a PartText or PartRefusal.
	Text string
	// Media is the data of a PartImage, PartFile or PartAudio, never nil for those (the
	// parsers set it); nil for the other types.
	Media *Media
	// Item is a PartItem's upstream item; nil for every other type.
	Item *Item
	// CacheControl is the part's prompt-cache breakpoint as raw JSON (Anthropic
	// cache_control, {"type":"ephemeral"} and its ttl); "" for none.
	CacheControl string
}

// Media is the data of an image, file or audio part; only the fields of the part's Type
// are set.
type Media struct {
	// URL of a PartImage: an https URL or a data: URL.
	URL string
	// Detail of a PartImage: auto|low|high or "".
	Detail string
	// FileData of a PartFile: a data: URL or bare base64; FileID and Filename as sent.
	FileData, FileID, Filename string
	// AudioData (base64) and AudioFormat (wav, mp3...) of a PartAudio.
	AudioData, AudioFormat string
}

// Item is a conversation item the core keeps opaque: a built-in (server-side) tool call
// or result the upstream ran itself, such as Anthropic's server_tool_use and
// web_search_tool_result blocks or a Responses web_search_call. An upstream of Dialect
// gets Raw back as it is, and a client dialect of the same wire (an Anthropic Messages
// client for DialectAnthropic, a Responses client for DialectResponses) shows it as it
// is; the others drop the item.
type Item struct {
	// Dialect is the upstream dialect the item came from: DialectAnthropic or
	// DialectResponses.
	Dialect string
	// Type is the item's type as that dialect names it (web_search_tool_result...).
	Type string
	// Raw is the item's JSON as that dialect spells it.
	Raw string
}

// Item dialects: the wire an Item's Raw is spelled in.
const (
	DialectAnthropic = "anthropic" // a Messages API content block
	DialectResponses = "responses" // a Responses API output item
)

// ToolCall is an assistant tool call.
type ToolCall struct {
	ID   string
	Name string
	// Arguments is the JSON text of the arguments as the model produced them.
	Arguments string
}

// Tool is a function tool the model may call.
type Tool struct {
	Name        string
	Description string
	// Parameters is the raw JSON Schema; "" when the tool has none.
	Parameters string
	// ParametersTyped is set by a parser that found a member named type at the top of
	// Parameters. Clear, it says nothing: an encoder that needs to know reads Parameters.
	ParametersTyped bool
	Strict          *bool
	// CacheControl is a prompt-cache breakpoint after this tool, raw JSON; "" for none.
	CacheControl string
	// Builtin, when set, makes this a built-in (server-side) tool such as web_search,
	// defined by Builtin.Raw in that dialect's terms; Name, Description and Parameters are
	// then unused. An upstream of Builtin.Dialect gets Raw as it is; the others leave the
	// tool out (Functions).
	Builtin *Item
}

// Functions returns the number of function tools of the request, its tools less the
// built-in ones.
func (r *Request) Functions() int {
	n := 0
	for i := range r.Tools {
		if r.Tools[i].Builtin == nil {
			n++
		}
	}
	return n
}

// For reports whether an upstream of dialect d (DialectAnthropic, DialectResponses, or
// another) gets the tool: a function tool, or a built-in tool of d.
func (t *Tool) For(d string) bool { return t.Builtin == nil || t.Builtin.Dialect == d }

// ToolsFor returns the number of tools an upstream of dialect d gets (Tool.For).
func (r *Request) ToolsFor(d string) int {
	n := 0
	for i := range r.Tools {
		if r.Tools[i].For(d) {
			n++
		}
	}
	return n
}

// AppendTools appends, comma-separated, the tools an upstream of dialect d gets
// (Tool.For): a built-in tool as the client defined it (Builtin.Raw), a function tool as
// function appends it in d's terms.
func (r *Request) AppendTools(dst []byte, d string, function func(dst []byte, t *Tool) []byte) []byte {
	k := 0
	for i := range r.Tools {
		t := &r.Tools[i]
		if !t.For(d) {
			continue // another API's built-in tool
		}
		if k > 0 {
			dst = append(dst, ',')
		}
		k++
		if t.Builtin != nil {
			dst = append(dst, t.Builtin.Raw...)
			continue
		}
		dst = function(dst, t)
	}
	return dst
}

// Tool choice modes.
const (
	ToolChoiceAuto     = "auto"
	ToolChoiceNone     = "none"
	ToolChoiceRequired = "required"
	ToolChoiceFunction = "function"
)

// ToolChoice is the client's tool_choice; Mode is "" when unset.
type ToolChoice struct {
	Mode string
	// Name is the forced function when Mode is ToolChoiceFunction.
	Name string
}

// Response format types.
const (
	FormatText       = "text"
	FormatJSONObject = "json_object"
	FormatJSONSchema = "json_schema"
)

// ResponseFormat is the client's response_format; Type is "" when unset.
type ResponseFormat struct {
	Type        string
	Name        string
	Description string
	// Schema is the raw JSON Schema of a json_schema format.
	Schema string
	Strict *bool
}

// Clone returns a copy of r whose Messages and Tools slices may be appended to without
// affecting r.
func (r *Request) Clone() *Request {
	c := *r
	c.Edited = true
	c.Messages = append([]Message(nil), r.Messages...)
	c.Tools = append([]Tool(nil), r.Tools...)
	return &c
}

// Choices returns the number of choices the request asks for (at least 1).
func (r *Request) Choices() int {
	if r.N < 1 {
		return 1
	}
	return r.N
}

// ToolOutput returns a tool message's text for upstreams that have no error mark on tool
// results: a failed call's error text is prefixed with "Error: ".
func (m *Message) ToolOutput() string {
	if m.ToolError {
		return "Error: " + m.Text()
	}
	return m.Text()
}
