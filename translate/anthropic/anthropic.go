package anthropic

import (
	"strings"

	"github.com/agate-gateway/agate/internal/jsonx"
	"github.com/agate-gateway/agate/translate"
)

// Anthropic returns the provider for Anthropic's Messages API (POST /v1/messages). It is
// stateless and safe for concurrent use.
//
// Thinking signatures survive a client that keeps only standard fields: the decoders
// attach the thinking and redacted_thinking blocks that precede a tool_use block to that
// call's id (CarryID), and AppendRequest restores them in front of the tool_use blocks
// when the history comes back.
func New() translate.Provider { return anthropicProvider{} }

type anthropicProvider struct {
	// cloud is the body a cloud's Claude endpoint takes (NewCloud); zero for Anthropic's.
	cloud Cloud
}

// Interface guards.
var (
	_ translate.Provider      = anthropicProvider{}
	_ translate.StreamDecoder = (*anthropicStream)(nil)
)

const (
	anthropicName    = "anthropic"
	anthropicVersion = "2023-06-01"
	// anthropicDefaultMaxTokens is max_tokens when neither the client nor the route says:
	// the API requires the field.
	anthropicDefaultMaxTokens = 4096
	// anthropicMinBudget is the smallest thinking budget the API accepts.
	anthropicMinBudget = 1024
	// anthropicJSONInstruction is appended to the system prompt for response_format
	// json_object: Anthropic's structured outputs need a schema with closed objects, which
	// json_object does not give.
	anthropicJSONInstruction = "Respond with a single valid JSON object and nothing else: no prose, no code fences."
	anthropicCacheControl    = `,"cache_control":{"type":"ephemeral"}`
)

func (anthropicProvider) Path(string, bool) string { return "/v1/messages" }

// Headers returns x-api-key and anthropic-version; on a cloud (NewCloud) none, the cloud
// authenticating the request its own way. No feature Agate maps needs an
// anthropic-beta header: structured outputs (output_config.format), PDFs, URL images and
// prompt caching are generally available.
func (a anthropicProvider) Headers(apiKey string) []translate.Header {
	if a.cloud.Version != "" {
		return nil
	}
	return []translate.Header{{Name: "x-api-key", Value: apiKey}, {Name: "anthropic-version", Value: anthropicVersion}}
}

func (anthropicProvider) NewStreamDecoder(*translate.Options) translate.StreamDecoder {
	return &anthropicStream{}
}

// anthropicBudget returns the thinking budget for an OpenAI reasoning_effort; 0 means no
// thinking.
func anthropicBudget(effort string) int {
	switch effort {
	case "low":
		return 1024
	case "medium":
		return 4096
	case "high":
		return 12288
	case "xhigh":
		return 24576
	}
	return 0 // "", none, minimal
}

// anthropicPlan is what AppendRequest decided before writing anything.
type anthropicPlan struct {
	maxTokens   int
	budget      int // thinking budget_tokens; 0 = thinking off
	temperature *float64
	topP        *float64
}

func anthropicCheck(req *translate.Request, opts *translate.Options) (anthropicPlan, error) {
	if err := opts.Refuse(anthropicName, req.Extra,
		translate.Param{Name: "n", Set: req.N > 1},
		translate.Param{Name: "logprobs", Set: req.Logprobs},
		translate.Param{Name: "top_logprobs", Set: req.TopLogprobs != nil},
		translate.Param{Name: "presence_penalty", Set: req.PresencePenalty != nil},
		translate.Param{Name: "frequency_penalty", Set: req.FrequencyPenalty != nil},
		translate.Param{Name: "seed", Set: req.Seed != nil},
		translate.Param{Name: "metadata", Set: req.Metadata != ""},
	); err != nil {
		return anthropicPlan{}, err
	}
	if len(req.User) > 512 && !opts.Drop("user") {
		return anthropicPlan{}, translate.Errorf("user", "must be at most 512 characters for the anthropic backend (metadata.user_id)")
	}

	p := anthropicPlan{temperature: req.Temperature, topP: req.TopP, budget: anthropicBudget(req.ReasoningEffort)}
	if t := p.temperature; t != nil && *t > 1 {
		if !opts.Drop("temperature") {
			return p, translate.Errorf("temperature", "must be between 0 and 1 for the anthropic backend, got %g", *t)
		}
		p.temperature = nil
	}
	if p.budget > 0 && (req.ToolChoice.Mode == translate.ToolChoiceRequired || req.ToolChoice.Mode == translate.ToolChoiceFunction) {
		if !opts.Drop("reasoning_effort") {
			return p, translate.Errorf("tool_choice", "tool_choice %q cannot be combined with reasoning_effort on the anthropic backend: extended thinking allows only auto or none", req.ToolChoice.Mode)
		}
		p.budget = 0
	}
	if p.budget > 0 {
		if t := p.temperature; t != nil && *t != 1 {
			if !opts.Drop("temperature") {
				return p, translate.Errorf("temperature", "must be unset or 1 when reasoning_effort enables extended thinking on the anthropic backend, got %g", *t)
			}
			p.temperature = nil
		}
		if t := p.topP; t != nil && *t < 0.95 {
			if !opts.Drop("top_p") {
				return p, translate.Errorf("top_p", "must be unset or between 0.95 and 1 when reasoning_effort enables extended thinking on the anthropic backend, got %g", *t)
			}
			p.topP = nil
		}
	}

	p.maxTokens = req.MaxTokens
	switch {
	case p.maxTokens > 0 && p.budget > 0:
		// The client's limit covers thinking and answer, as max_completion_tokens covers
		// reasoning: shrink the budget to leave a quarter for the answer.
		if p.budget >= p.maxTokens {
			p.budget = p.maxTokens * 3 / 4
		}
		if p.budget < anthropicMinBudget {
			return p, translate.Errorf(req.MaxTokensParam, "%s %d is too small for reasoning_effort %q on the anthropic backend: extended thinking needs at least %d budget tokens below max_tokens, so use at least 1366 or reasoning_effort minimal",
				req.MaxTokensParam, p.maxTokens, req.ReasoningEffort, anthropicMinBudget)
		}
	case p.maxTokens == 0:
		p.maxTokens = opts.DefaultMaxTokens
		if p.maxTokens <= 0 {
			p.maxTokens = anthropicDefaultMaxTokens
		}
		if p.budget >= p.maxTokens {
			p.maxTokens += p.budget // the default is for the answer; thinking comes on top
		}
	}
	return p, nil
}

// AppendRequest appends the Messages API body for req.
func (a anthropicProvider) AppendRequest(dst []byte, req *translate.Request, opts *translate.Options) ([]byte, error) {
	if opts == nil {
		opts = &translate.Options{}
	}
	plan, err := anthropicCheck(req, opts)
	if err != nil {
		return dst, err
	}
	w := anthropicWriter{dst: dst, thinking: plan.budget > 0, req: req}
	var breakpoints [4]int
	nbp := 0

	model := opts.UpstreamModel
	if model == "" {
		model = req.Model
	}
	w.dst = a.cloud.appendHead(w.dst, model)
	w.dst = append(w.dst, `,"max_tokens":`...)
	w.dst = jsonx.AppendInt(w.dst, plan.maxTokens)

	// System and developer messages, in order, become the top-level system blocks.
	nsys := 0
	for i := range req.Messages {
		m := &req.Messages[i]
		if m.Role != translate.RoleSystem && m.Role != translate.RoleDeveloper {
			continue
		}
		for j := range m.Content {
			if m.Content[j].Text == "" {
				continue
			}
			w.dst = w.systemBlock(nsys, m.Content[j].Text, m.Content[j].CacheControl)
			nsys++
		}
	}
	if req.ResponseFormat.Type == translate.FormatJSONObject {
		w.dst = w.systemBlock(nsys, anthropicJSONInstruction, "")
		nsys++
	}
	if nsys > 0 {
		if opts.PromptCache {
			breakpoints[nbp] = len(w.dst) - 1
			nbp++
		}
		w.dst = append(w.dst, ']')
	}

	w.dst = append(w.dst, `,"messages":[`...)
	for i := range req.Messages {
		if err := w.message(i, &req.Messages[i], opts); err != nil {
			return dst, err
		}
	}
	w.closeTurn()
	w.dst = append(w.dst, ']')
	if opts.PromptCache {
		for _, end := range w.userEnds {
			if end > 0 {
				breakpoints[nbp] = end
				nbp++
			}
		}
	}

	if req.ToolsFor(translate.DialectAnthropic) > 0 {
		w.dst = append(w.dst, `,"tools":[`...)
		w.dst = req.AppendTools(w.dst, translate.DialectAnthropic, w.tool)
		if opts.PromptCache {
			breakpoints[nbp] = len(w.dst) - 1
			nbp++
		}
		w.dst = append(w.dst, ']')
		w.dst = anthropicToolChoice(w.dst, req)
	}
	if plan.budget > 0 {
		w.dst = append(w.dst, `,"thinking":{"type":"enabled","budget_tokens":`...)
		w.dst = jsonx.AppendInt(w.dst, plan.budget)
		w.dst = append(w.dst, '}')
	}
	if plan.temperature != nil {
		w.dst = append(w.dst, `,"temperature":`...)
		w.dst = jsonx.AppendFloat(w.dst, *plan.temperature)
	}
	if plan.topP != nil {
		w.dst = append(w.dst, `,"top_p":`...)
		w.dst = jsonx.AppendFloat(w.dst, *plan.topP)
	}
	if req.TopK != nil {
		w.dst = append(w.dst, `,"top_k":`...)
		w.dst = jsonx.AppendInt(w.dst, *req.TopK)
	}
	if len(req.Stop) > 0 {
		w.dst = append(w.dst, `,"stop_sequences":[`...)
		for i, s := range req.Stop {
			if i > 0 {
				w.dst = append(w.dst, ',')
			}
			w.dst = jsonx.AppendString(w.dst, s)
		}
		w.dst = append(w.dst, ']')
	}
	if req.User != "" && len(req.User) <= 512 {
		w.dst = append(w.dst, `,"metadata":{"user_id":`...)
		w.dst = jsonx.AppendString(w.dst, req.User)
		w.dst = append(w.dst, '}')
	}
	if req.ResponseFormat.Type == translate.FormatJSONSchema {
		if req.ResponseFormat.Schema == "" {
			return dst, translate.Errorf("response_format.json_schema.schema", "the anthropic backend needs a schema for json_schema output")
		}
		w.dst = append(w.dst, `,"output_config":{"format":{"type":"json_schema","schema":`...)
		w.dst = append(w.dst, req.ResponseFormat.Schema...)
		w.dst = append(w.dst, `}}`...)
	}
	if opts.Stream && !a.cloud.NoStream {
		w.dst = append(w.dst, `,"stream":true`...)
	}
	w.dst = append(w.dst, '}')

	// Insert the cache breakpoints back to front so earlier offsets stay valid. A client
	// that placed its own (an Anthropic Messages client's cache_control) manages its cache:
	// automatic ones would add to its count, which the API limits to four.
	if w.clientCache {
		nbp = 0
	}
	for k := nbp - 1; k >= 0; k-- {
		w.dst = anthropicInsert(w.dst, breakpoints[k], anthropicCacheControl)
	}
	return w.dst, nil
}

func (w *anthropicWriter) systemBlock(n int, text, cacheControl string) []byte {
	dst := w.dst
	if n == 0 {
		dst = append(dst, `,"system":[`...)
	} else {
		dst = append(dst, ',')
	}
	dst = append(dst, `{"type":"text","text":`...)
	dst = w.req.AppendText(dst, text)
	w.dst = dst
	w.cacheControl(cacheControl)
	return append(w.dst, '}')
}

// cacheControl writes a block's cache_control member, raw JSON the client parser checked
// is an object, unless it is "".
func (w *anthropicWriter) cacheControl(raw string) {
	if raw == "" {
		return
	}
	w.clientCache = true
	w.dst = append(w.dst, `,"cache_control":`...)
	w.dst = append(w.dst, raw...)
}

// anthropicInsert inserts s into dst before offset pos.
func anthropicInsert(dst []byte, pos int, s string) []byte {
	n := len(dst)
	dst = append(dst, s...)
	copy(dst[pos+len(s):], dst[pos:n])
	copy(dst[pos:], s)
	return dst
}

// tool appends function tool t to dst, which continues w.dst.
func (w *anthropicWriter) tool(dst []byte, t *translate.Tool) []byte {
	dst = append(dst, `{"name":`...)
	dst = jsonx.AppendString(dst, t.Name)
	if t.Description != "" {
		dst = append(dst, `,"description":`...)
		dst = jsonx.AppendString(dst, t.Description)
	}
	dst = append(dst, `,"input_schema":`...)
	switch ps := strings.TrimSpace(t.Parameters); {
	case ps == "":
		dst = append(dst, `{"type":"object","properties":{}}`...)
	case !t.ParametersTyped && !hasMember(ps, "type"):
		// input_schema must say type object; OpenAI accepts a schema without it.
		dst = append(dst, `{"type":"object"`...)
		if rest := strings.TrimSpace(ps[1:]); rest != "}" {
			dst = append(dst, ',')
			dst = append(dst, rest...)
		} else {
			dst = append(dst, '}')
		}
	default:
		dst = append(dst, ps...)
	}
	if t.Strict != nil && *t.Strict {
		dst = append(dst, `,"strict":true`...)
	}
	w.dst = dst
	w.cacheControl(t.CacheControl)
	return append(w.dst, '}')
}

func anthropicToolChoice(dst []byte, req *translate.Request) []byte {
	noParallel := req.ParallelToolCalls != nil && !*req.ParallelToolCalls
	switch req.ToolChoice.Mode {
	case translate.ToolChoiceNone:
		return append(dst, `,"tool_choice":{"type":"none"}`...)
	case translate.ToolChoiceRequired:
		dst = append(dst, `,"tool_choice":{"type":"any"`...)
	case translate.ToolChoiceFunction:
		dst = append(dst, `,"tool_choice":{"type":"tool","name":`...)
		dst = jsonx.AppendString(dst, req.ToolChoice.Name)
	case translate.ToolChoiceAuto:
		dst = append(dst, `,"tool_choice":{"type":"auto"`...)
	default:
		if !noParallel {
			return dst
		}
		dst = append(dst, `,"tool_choice":{"type":"auto"`...)
	}
	if noParallel {
		dst = append(dst, `,"disable_parallel_tool_use":true`...)
	}
	return append(dst, '}')
}

// anthropicWriter writes the messages array, merging consecutive messages of one role
// into one turn (tool results and the user message after them share a user turn).
type anthropicWriter struct {
	dst []byte
	// req is the request written; its message strings are read through its
	// AppendText, AppendMessageText and AppendDecoded (translate.LiteralReader).
	req      *translate.Request
	thinking bool // the request enables thinking, so thinking blocks are restored
	role     turnRole
	open     bool
	turns    int
	blockEnd int    // offset of the closing brace of the last block written
	userEnds [2]int // closing braces of the last blocks of the last two user turns
	// clientCache is set once a cache_control of the request's own is written.
	clientCache bool
}

// turnRole is the role of a turn of the messages array: the Messages API has two.
type turnRole bool

const (
	userTurn      turnRole = false // translate.RoleUser
	assistantTurn turnRole = true  // translate.RoleAssistant
)

// block starts a content block of a role's turn, opening the turn if needed: the turn's
// head, and the comma before it, in one append.
func (w *anthropicWriter) block(role turnRole) {
	if w.open && w.role == role {
		w.dst = append(w.dst, ',')
		return
	}
	w.closeTurn()
	head := `,{"role":"user","content":[`
	if role == assistantTurn {
		head = `,{"role":"assistant","content":[`
	}
	if w.turns == 0 {
		head = head[1:]
	}
	w.turns++
	w.dst = append(w.dst, head...)
	w.role, w.open = role, true
}

// end records the block just written.
func (w *anthropicWriter) end() { w.blockEnd = len(w.dst) - 1 }

func (w *anthropicWriter) closeTurn() {
	if !w.open {
		return
	}
	if w.role == userTurn {
		w.userEnds[0], w.userEnds[1] = w.userEnds[1], w.blockEnd
	}
	w.dst = append(w.dst, "]}"...)
	w.open = false
}

func (w *anthropicWriter) message(i int, m *translate.Message, opts *translate.Options) error {
	switch m.Role {
	case translate.RoleUser:
		for j := range m.Content {
			if err := w.userPart(i, j, &m.Content[j], opts); err != nil {
				return err
			}
		}
	case translate.RoleTool:
		w.block(userTurn)
		w.dst = append(w.dst, `{"type":"tool_result","tool_use_id":`...)
		w.dst = anthropicAppendCarriedID(w.dst, m.ToolCallID)
		w.dst = append(w.dst, `,"content":`...)
		w.dst = w.req.AppendMessageText(w.dst, m)
		if m.ToolError {
			w.dst = append(w.dst, `,"is_error":true`...)
		}
		// The content goes as one string, so a breakpoint on any part marks the block.
		for j := len(m.Content) - 1; j >= 0; j-- {
			if cc := m.Content[j].CacheControl; cc != "" {
				w.cacheControl(cc)
				break
			}
		}
		w.dst = append(w.dst, '}')
		w.end()
	case translate.RoleAssistant:
		return w.assistant(i, m)
	}
	return nil
}

func (w *anthropicWriter) text(role turnRole, text, cacheControl string) {
	if text == "" {
		return // text blocks must not be empty
	}
	w.block(role)
	w.dst = append(w.dst, `{"type":"text","text":`...)
	w.dst = w.req.AppendText(w.dst, text)
	w.cacheControl(cacheControl)
	w.dst = append(w.dst, '}')
	w.end()
}

func (w *anthropicWriter) assistant(i int, m *translate.Message) error {
	// Thinking blocks go first in the turn: the client's own (thinking_blocks), else the
	// ones Agate carried in the first call's id. Later calls carry the blocks that
	// preceded them (interleaved thinking).
	explicit := w.thinking && anthropicHasBlocks(m.ThinkingBlocks)
	var first []byte
	if explicit {
		for k := range m.ThinkingBlocks {
			if b := &m.ThinkingBlocks[k]; b.Dialect == "" || b.Dialect == anthropicName {
				w.thinkingBlock(b)
			}
		}
	} else if w.thinking && len(m.ToolCalls) > 0 {
		_, first = w.req.SplitID(m.ToolCalls[0].ID)
		w.restore(first)
	}
	for j := range m.Content {
		w.text(assistantTurn, m.Content[j].Text, m.Content[j].CacheControl)
	}
	w.text(assistantTurn, m.Refusal, "")
	for j := range m.ToolCalls {
		tc := &m.ToolCalls[j]
		if j > 0 && w.thinking && !explicit {
			_, state := w.req.SplitID(tc.ID)
			w.restore(state)
		}
		// The arguments, decoded, are the input object as the client wrote it.
		w.block(assistantTurn)
		w.dst = append(w.dst, `{"type":"tool_use","id":`...)
		// The plain id: the state, read only to be restored above.
		w.dst = anthropicAppendCarriedID(w.dst, tc.ID)
		w.dst = append(w.dst, `,"name":`...)
		w.dst = jsonx.AppendString(w.dst, tc.Name)
		w.dst = append(w.dst, `,"input":`...)
		if jsonx.Within(tc.Arguments, w.req.Literals) {
			var ok bool
			if w.dst, ok = appendInputLiteral(w.dst, tc.Arguments); ok {
				w.dst = append(w.dst, '}')
				w.end()
				continue
			}
		}
		at := len(w.dst)
		w.dst = w.req.AppendDecoded(w.dst, tc.Arguments)
		switch args := strings.TrimSpace(jsonx.View(w.dst[at:])); {
		case args == "":
			w.dst = append(w.dst[:at], "{}"...)
		case args[0] != '{' || !jsonx.Valid(args):
			return translate.Errorf(translate.ParamIndex(translate.ParamIndex("messages", i)+".tool_calls", j)+".function.arguments", "must be a JSON object, as the anthropic backend sends it as the tool_use input")
		case len(args) != len(w.dst)-at: // trimmed: args lies at or after at, and moves down
			w.dst = append(w.dst[:at], args...)
		}
		w.dst = append(w.dst, '}')
		w.end()
	}
	return nil
}

// anthropicHasBlocks reports whether blocks holds a block of Anthropic's (another
// dialect's state is not sent to Claude).
func anthropicHasBlocks(blocks []translate.ThinkingBlock) bool {
	for k := range blocks {
		if d := blocks[k].Dialect; d == "" || d == anthropicName {
			return true
		}
	}
	return false
}

func (w *anthropicWriter) thinkingBlock(b *translate.ThinkingBlock) {
	switch {
	case b.Type == "redacted_thinking" && b.Data != "":
		w.block(assistantTurn)
		w.dst = append(w.dst, `{"type":"redacted_thinking","data":`...)
		w.dst = jsonx.AppendString(w.dst, b.Data)
	case b.Type == "thinking" && b.Signature != "":
		w.block(assistantTurn)
		w.dst = append(w.dst, `{"type":"thinking","thinking":`...)
		w.dst = jsonx.AppendString(w.dst, b.Thinking)
		w.dst = append(w.dst, `,"signature":`...)
		w.dst = jsonx.AppendString(w.dst, b.Signature)
	default:
		return // without a signature Claude would reject the block
	}
	w.dst = append(w.dst, '}')
	w.end()
}

// restore writes the thinking blocks carried in a tool call id (see anthropicThinking).
// State that does not parse is ignored: the id came from the client.
func (w *anthropicWriter) restore(state []byte) {
	sc := jsonx.NewScanner(jsonx.View(state))
	root, ok := sc.Root()
	if !ok {
		return
	}
	sc.Each(root, func(_ string, b jsonx.Value) bool {
		w.thinkingBlock(&translate.ThinkingBlock{
			Type: sc.Get(b, "type").Str, Thinking: sc.Get(b, "thinking").Str,
			Signature: sc.Get(b, "signature").Str, Data: sc.Get(b, "data").Str,
		})
		return true
	})
}

// hasMember reports whether the JSON object obj, which the request parser checked, has
// a member named key. It stops at that member: a tool's "type" comes first in most schemas.
func hasMember(obj, key string) bool {
	sc := jsonx.NewScanner(obj)
	for n := 0; sc.NextField(&n); {
		if sc.Key() == key {
			return true
		}
		if !sc.Skip() {
			return false
		}
	}
	return false
}

// ReadsLiterals marks the encoder as a translate.LiteralReader: AppendRequest reads
// message strings only through the request's AppendText, AppendMessageText and
// AppendDecoded.
func (anthropicProvider) ReadsLiterals() {}
