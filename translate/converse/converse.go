package converse

import (
	"strings"

	"github.com/agate-gateway/agate/internal/jsonx"
	"github.com/agate-gateway/agate/translate"
)

// New returns the provider of Bedrock's Converse API. It is stateless and safe for
// concurrent use. Path and Headers are the API's own; a Bedrock backend signs each
// request itself (SigV4 or its API key as a bearer token: package cloudauth).
//
// Reasoning signatures survive a client that keeps only standard fields: the decoders
// attach the reasoningContent blocks before a toolUse to that call's id (CarryID, the
// state being the JSON array of the blocks as Converse spells them), and emit them as
// EventReasoningBlocks of Dialect "converse"; AppendRequest restores them in front of
// the toolUse blocks when the history comes back.
func New() translate.Provider { return provider{} }

type provider struct{}

var (
	_ translate.Provider      = provider{}
	_ translate.StreamDecoder = (*stream)(nil)
)

const (
	name = "bedrock"
	// Dialect names the reasoning blocks this dialect emits and takes back.
	Dialect = "converse"
	// defaultMaxTokens is inferenceConfig.maxTokens when neither the client nor the
	// route says: left out, each model has its own (often small) default.
	defaultMaxTokens = 4096
	cachePoint       = `{"cachePoint":{"type":"default"}}`
)

// Path is /model/{modelId}/converse or /converse-stream, the model id (a foundation
// model, a cross-region inference profile such as us.anthropic.claude-..., or an ARN)
// escaped as one path segment.
func (provider) Path(model string, stream bool) string {
	p := "/model/" + EscapeModel(model)
	if stream {
		return p + "/converse-stream"
	}
	return p + "/converse"
}

// EscapeModel escapes a Bedrock model id as one URL path segment, as the AWS SDKs do
// (RFC 3986 unreserved characters kept, everything else percent-encoded: ':' and '/' of
// versions and ARNs included).
func EscapeModel(model string) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	b.Grow(len(model) + 8)
	for i := 0; i < len(model); i++ {
		c := model[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~' {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hex[c>>4])
		b.WriteByte(hex[c&15])
	}
	return b.String()
}

// Headers asks for JSON; the credential is the signer's.
func (provider) Headers(string) []translate.Header {
	return []translate.Header{{Name: "Accept", Value: "application/json"}}
}

func (provider) NewStreamDecoder(*translate.Options) translate.StreamDecoder { return &stream{} }

func (provider) DecodeError(status int, body []byte) *translate.UpstreamError {
	return DecodeError(status, body)
}

// AppendRequest appends the Converse body for req: messages (consecutive messages of one
// role merged, tool results as the user's toolResult blocks), system, inferenceConfig and
// toolConfig.
func (provider) AppendRequest(dst []byte, req *translate.Request, opts *translate.Options) ([]byte, error) {
	if opts == nil {
		opts = &translate.Options{}
	}
	if err := opts.Refuse(name, req.Extra,
		translate.Param{Name: "n", Set: req.N > 1},
		translate.Param{Name: "logprobs", Set: req.Logprobs},
		translate.Param{Name: "top_logprobs", Set: req.TopLogprobs != nil},
		translate.Param{Name: "presence_penalty", Set: req.PresencePenalty != nil},
		translate.Param{Name: "frequency_penalty", Set: req.FrequencyPenalty != nil},
		translate.Param{Name: "seed", Set: req.Seed != nil},
		translate.Param{Name: "metadata", Set: req.Metadata != ""},
		translate.Param{Name: "user", Set: req.User != ""},
		translate.Param{Name: "top_k", Set: req.TopK != nil},
		translate.Param{Name: "reasoning_effort", Set: req.ReasoningEffort != "" && req.ReasoningEffort != "none"},
		translate.Param{Name: "response_format", Set: req.ResponseFormat.Type == translate.FormatJSONSchema || req.ResponseFormat.Type == translate.FormatJSONObject},
	); err != nil {
		return dst, err
	}
	w := writer{dst: append(dst, `{"messages":[`...), req: req, opts: opts}
	for i := range req.Messages {
		if err := w.message(i, &req.Messages[i]); err != nil {
			return dst, err
		}
	}
	if w.role != "" {
		w.dst = append(w.dst, "]}"...)
	}
	w.dst = append(w.dst, ']')

	nsys := 0
	for i := range req.Messages {
		m := &req.Messages[i]
		if m.Role != translate.RoleSystem && m.Role != translate.RoleDeveloper {
			continue
		}
		for j := range m.Content {
			p := &m.Content[j]
			if p.Type != translate.PartText || p.Text == "" {
				continue
			}
			if nsys == 0 {
				w.dst = append(w.dst, `,"system":[`...)
			} else {
				w.dst = append(w.dst, ',')
			}
			w.dst = append(w.dst, `{"text":`...)
			w.dst = req.AppendText(w.dst, p.Text)
			w.dst = append(w.dst, '}')
			if p.CacheControl != "" {
				w.dst = append(w.dst, ","+cachePoint...)
			}
			nsys++
		}
	}
	if nsys > 0 {
		if opts.PromptCache && !w.clientCache {
			w.dst = append(w.dst, ","+cachePoint...)
		}
		w.dst = append(w.dst, ']')
	}

	maxTokens := req.MaxTokens
	if maxTokens == 0 {
		maxTokens = opts.DefaultMaxTokens
	}
	if maxTokens <= 0 {
		maxTokens = defaultMaxTokens
	}
	w.dst = append(w.dst, `,"inferenceConfig":{"maxTokens":`...)
	w.dst = jsonx.AppendInt(w.dst, maxTokens)
	if t := req.Temperature; t != nil {
		w.dst = append(w.dst, `,"temperature":`...)
		w.dst = jsonx.AppendFloat(w.dst, *t)
	}
	if t := req.TopP; t != nil {
		w.dst = append(w.dst, `,"topP":`...)
		w.dst = jsonx.AppendFloat(w.dst, *t)
	}
	if len(req.Stop) > 0 {
		w.dst = append(w.dst, `,"stopSequences":[`...)
		for i, s := range req.Stop {
			if i > 0 {
				w.dst = append(w.dst, ',')
			}
			w.dst = jsonx.AppendString(w.dst, s)
		}
		w.dst = append(w.dst, ']')
	}
	w.dst = append(w.dst, '}')

	if req.Functions() > 0 && (req.ToolChoice.Mode != translate.ToolChoiceNone || w.calls) {
		w.dst = append(w.dst, `,"toolConfig":{"tools":[`...)
		n := 0
		for i := range req.Tools {
			t := &req.Tools[i]
			if t.Builtin != nil {
				continue
			}
			if n > 0 {
				w.dst = append(w.dst, ',')
			}
			n++
			w.dst = append(w.dst, `{"toolSpec":{"name":`...)
			w.dst = jsonx.AppendString(w.dst, t.Name)
			if t.Description != "" {
				w.dst = append(w.dst, `,"description":`...)
				w.dst = jsonx.AppendString(w.dst, t.Description)
			}
			w.dst = append(w.dst, `,"inputSchema":{"json":`...)
			w.dst = jsonx.AppendRawOr(w.dst, t.Parameters, `{"type":"object","properties":{}}`)
			w.dst = append(w.dst, "}}}"...)
			if t.CacheControl != "" {
				w.dst = append(w.dst, ","+cachePoint...)
			}
		}
		if opts.PromptCache && !w.clientCache {
			w.dst = append(w.dst, ","+cachePoint...)
		}
		w.dst = append(w.dst, ']')
		switch req.ToolChoice.Mode {
		case translate.ToolChoiceRequired:
			w.dst = append(w.dst, `,"toolChoice":{"any":{}}`...)
		case translate.ToolChoiceFunction:
			w.dst = append(w.dst, `,"toolChoice":{"tool":{"name":`...)
			w.dst = jsonx.AppendString(w.dst, req.ToolChoice.Name)
			w.dst = append(w.dst, "}}"...)
		case translate.ToolChoiceAuto:
			w.dst = append(w.dst, `,"toolChoice":{"auto":{}}`...)
		}
		w.dst = append(w.dst, '}')
	}
	return append(w.dst, '}'), nil
}

// writer writes the messages array.
type writer struct {
	dst  []byte
	req  *translate.Request
	opts *translate.Options
	// role is the role of the open message ("" before the first); blocks counts its
	// content blocks so far.
	role   string
	blocks int
	// calls is set once the history holds a toolUse: toolConfig must then be sent.
	calls bool
	// clientCache is set once a client's own cache_control was written as a cachePoint.
	clientCache bool
	// documents counts the document blocks written, which names them.
	documents int
}

// open starts a content block of a message of role, opening the message when the
// previous one had another role (Converse wants the roles to alternate).
func (w *writer) open(role string) {
	if w.role != role {
		if w.role != "" {
			w.dst = append(w.dst, "]},"...)
		}
		w.dst = append(w.dst, `{"role":"`...)
		w.dst = append(w.dst, role...)
		w.dst = append(w.dst, `","content":[`...)
		w.role, w.blocks = role, 0
	}
	if w.blocks > 0 {
		w.dst = append(w.dst, ',')
	}
	w.blocks++
}

func (w *writer) cache(cc string) {
	if cc != "" {
		w.dst = append(w.dst, ","+cachePoint...)
		w.clientCache = true
	}
}

func (w *writer) message(i int, m *translate.Message) error {
	switch m.Role {
	case translate.RoleSystem, translate.RoleDeveloper:
		return nil
	case translate.RoleTool:
		w.open("user")
		w.dst = append(w.dst, `{"toolResult":{"toolUseId":`...)
		w.dst = jsonx.AppendString(w.dst, translate.CarriedID(m.ToolCallID))
		w.dst = append(w.dst, `,"content":[{"text":`...)
		w.dst = w.req.AppendMessageText(w.dst, m)
		w.dst = append(w.dst, "}]"...)
		if m.ToolError {
			w.dst = append(w.dst, `,"status":"error"`...)
		}
		w.dst = append(w.dst, "}}"...)
		return nil
	case translate.RoleAssistant:
		return w.assistant(i, m)
	}
	for j := range m.Content {
		p := &m.Content[j]
		switch p.Type {
		case translate.PartText:
			if p.Text == "" {
				continue
			}
			w.open("user")
			w.dst = append(w.dst, `{"text":`...)
			w.dst = w.req.AppendText(w.dst, p.Text)
			w.dst = append(w.dst, '}')
		case translate.PartImage:
			param := translate.ParamIndex(translate.ParamIndex("messages", i)+".content", j) + ".image_url.url"
			format, data, ok := dataImage(p.Media.URL)
			if !ok {
				return translate.Errorf(param, "the bedrock backend takes images as data: URLs of png, jpeg, gif or webp only")
			}
			w.open("user")
			w.dst = append(w.dst, `{"image":{"format":"`...)
			w.dst = append(w.dst, format...)
			w.dst = append(w.dst, `","source":{"bytes":`...)
			w.dst = jsonx.AppendString(w.dst, data)
			w.dst = append(w.dst, "}}}"...)
		case translate.PartFile:
			// A PDF as a document block. Bedrock restricts a document's name (letters,
			// digits, single spaces, hyphens, parentheses, brackets) and wants each
			// unique: the gateway names them document-1, document-2... in order.
			param := translate.ParamIndex(translate.ParamIndex("messages", i)+".content", j) + ".file.file_data"
			mt, data, ok := translate.ParseDataURL(p.Media.FileData)
			if !ok || mt != "application/pdf" {
				return translate.Errorf(param, "the bedrock backend takes files as data:application/pdf;base64 URLs only")
			}
			w.documents++
			w.open("user")
			w.dst = append(w.dst, `{"document":{"format":"pdf","name":"document-`...)
			w.dst = jsonx.AppendInt(w.dst, w.documents)
			w.dst = append(w.dst, `","source":{"bytes":`...)
			w.dst = jsonx.AppendString(w.dst, data)
			w.dst = append(w.dst, "}}}"...)
		default:
			return translate.Errorf(translate.ParamIndex(translate.ParamIndex("messages", i)+".content", j), "the bedrock backend takes text, image and PDF file parts only")
		}
		w.cache(p.CacheControl)
	}
	return nil
}

func (w *writer) assistant(i int, m *translate.Message) error {
	// Reasoning blocks of this dialect, sent back by a client that keeps them.
	for k := range m.ThinkingBlocks {
		b := &m.ThinkingBlocks[k]
		if b.Dialect != Dialect {
			continue
		}
		w.open("assistant")
		w.reasoning(b)
	}
	for j := range m.Content {
		p := &m.Content[j]
		if p.Type != translate.PartText || p.Text == "" {
			continue
		}
		w.open("assistant")
		w.dst = append(w.dst, `{"text":`...)
		w.dst = w.req.AppendText(w.dst, p.Text)
		w.dst = append(w.dst, '}')
		w.cache(p.CacheControl)
	}
	for k := range m.ToolCalls {
		tc := &m.ToolCalls[k]
		if len(m.ThinkingBlocks) == 0 {
			if _, state := w.req.SplitID(tc.ID); len(state) > 0 {
				w.restore(state)
			}
		}
		w.calls = true
		w.open("assistant")
		w.dst = append(w.dst, `{"toolUse":{"toolUseId":`...)
		w.dst = jsonx.AppendString(w.dst, translate.CarriedID(tc.ID))
		w.dst = append(w.dst, `,"name":`...)
		w.dst = jsonx.AppendString(w.dst, tc.Name)
		w.dst = append(w.dst, `,"input":`...)
		args := strings.TrimSpace(tc.Arguments)
		if args == "" {
			args = translate.NoArguments
		}
		if !jsonx.Valid(args) || args[0] != '{' {
			return translate.Errorf(translate.ParamIndex("messages", i)+".tool_calls", "the arguments of tool call %q are not a JSON object", tc.Name)
		}
		w.dst = append(w.dst, args...)
		w.dst = append(w.dst, "}}"...)
	}
	return nil
}

// reasoning writes one reasoningContent block.
func (w *writer) reasoning(b *translate.ThinkingBlock) {
	if b.Type == "redacted_thinking" {
		w.dst = append(w.dst, `{"reasoningContent":{"redactedContent":`...)
		w.dst = jsonx.AppendString(w.dst, b.Data)
		w.dst = append(w.dst, "}}"...)
		return
	}
	w.dst = append(w.dst, `{"reasoningContent":{"reasoningText":{"text":`...)
	w.dst = jsonx.AppendString(w.dst, b.Thinking)
	if b.Signature != "" {
		w.dst = append(w.dst, `,"signature":`...)
		w.dst = jsonx.AppendString(w.dst, b.Signature)
	}
	w.dst = append(w.dst, "}}}"...)
}

// restore writes back the reasoningContent blocks a tool call's id carried: the JSON
// array of the blocks' reasoningContent values. State that is not such an array (another
// dialect's) is left out.
func (w *writer) restore(state []byte) {
	sc := jsonx.NewScanner(jsonx.View(state))
	root, ok := sc.Root()
	if !ok || root.Kind != jsonx.Array {
		return
	}
	sc.Each(root, func(_ string, v jsonx.Value) bool {
		if v.Kind != jsonx.Object || !(sc.Get(v, "reasoningText").Exists() || sc.Get(v, "redactedContent").Exists()) {
			return true
		}
		w.open("assistant")
		w.dst = append(w.dst, `{"reasoningContent":`...)
		w.dst = append(w.dst, v.Raw...)
		w.dst = append(w.dst, '}')
		return true
	})
}

// dataImage splits a data: URL of an image Converse takes into its format and base64 data.
func dataImage(url string) (format, data string, ok bool) {
	mt, data, ok := translate.ParseDataURL(url)
	if !ok {
		return "", "", false
	}
	switch mt {
	case "image/png", "image/gif", "image/webp", "image/jpeg":
		return mt[len("image/"):], data, true
	case "image/jpg":
		return "jpeg", data, true
	}
	return "", "", false
}
