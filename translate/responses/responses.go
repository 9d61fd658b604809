package responses

import (
	"strings"

	"github.com/agate-gateway/agate/internal/jsonx"
	"github.com/agate-gateway/agate/translate"
)

// Responses returns the provider for OpenAI's Responses API (POST {base_url}/responses),
// serving chat completions from it. It is stateless and safe for concurrent use.
//
// Encrypted reasoning survives a stateless (store: false) client round trip inside the
// first tool call id of a turn: the decoders mint it with CarryID and AppendRequest
// restores the reasoning input items from it (see responsesCarry).
func New() translate.Provider { return responsesProvider{} }

type responsesProvider struct{}

var (
	_ translate.Provider      = responsesProvider{}
	_ translate.StreamDecoder = (*responsesStream)(nil)
)

const responsesName = "responses"

func (responsesProvider) Path(string, bool) string { return "/responses" }

func (responsesProvider) Headers(apiKey string) []translate.Header {
	return []translate.Header{{Name: "Authorization", Value: "Bearer " + apiKey}}
}

// NewStreamDecoder returns a decoder for one streamed response.
func (responsesProvider) NewStreamDecoder(*translate.Options) translate.StreamDecoder {
	return &responsesStream{}
}

// AppendRequest appends the Responses request body for req to dst.
func (responsesProvider) AppendRequest(dst []byte, req *translate.Request, opts *translate.Options) ([]byte, error) {
	if opts == nil {
		opts = &translate.Options{}
	}
	if err := responsesCheck(req, opts); err != nil {
		return dst, err
	}
	model := opts.UpstreamModel
	if model == "" {
		model = req.Model
	}
	dst = append(dst, `{"model":`...)
	dst = jsonx.AppendString(dst, model)

	// Leading system messages become instructions; a system message later in the
	// conversation stays in place as a system input item.
	first := 0
	for first < len(req.Messages) && req.Messages[first].Role == translate.RoleSystem {
		first++
	}
	if first > 0 {
		dst = append(dst, `,"instructions":`...)
		if first == 1 {
			dst = req.AppendMessageText(dst, &req.Messages[0])
		} else {
			var b []byte
			for i := 0; i < first; i++ {
				if i > 0 {
					b = append(b, "\n\n"...)
				}
				b = req.AppendDecodedText(b, &req.Messages[i])
			}
			dst = jsonx.AppendString(dst, jsonx.View(b))
		}
	}

	dst = append(dst, `,"input":[`...)
	carried := false
	n := 0 // items written
	var err error
	for i := first; i < len(req.Messages); i++ {
		var c bool
		dst, n, c, err = appendResponsesMessage(dst, n, i, req, &req.Messages[i], opts)
		if err != nil {
			return dst, err
		}
		carried = carried || c
	}
	dst = append(dst, ']')

	if req.ToolsFor(translate.DialectResponses) > 0 {
		dst = append(dst, `,"tools":[`...)
		dst = req.AppendTools(dst, translate.DialectResponses, responsesTool)
		dst = append(dst, ']')
	}
	switch req.ToolChoice.Mode {
	case "":
	case translate.ToolChoiceFunction:
		dst = append(dst, `,"tool_choice":{"type":"function","name":`...)
		dst = jsonx.AppendString(dst, req.ToolChoice.Name)
		dst = append(dst, '}')
	default:
		dst = append(dst, `,"tool_choice":`...)
		dst = jsonx.AppendString(dst, req.ToolChoice.Mode)
	}
	if req.ParallelToolCalls != nil {
		dst = append(dst, `,"parallel_tool_calls":`...)
		dst = jsonx.AppendBool(dst, *req.ParallelToolCalls)
	}
	if req.MaxTokens > 0 {
		dst = append(dst, `,"max_output_tokens":`...)
		dst = jsonx.AppendInt(dst, req.MaxTokens)
	}
	if req.Temperature != nil {
		dst = append(dst, `,"temperature":`...)
		dst = jsonx.AppendFloat(dst, *req.Temperature)
	}
	if req.TopP != nil {
		dst = append(dst, `,"top_p":`...)
		dst = jsonx.AppendFloat(dst, *req.TopP)
	}
	if req.User != "" {
		dst = append(dst, `,"user":`...)
		dst = jsonx.AppendString(dst, req.User)
	}
	if req.Metadata != "" {
		dst = append(dst, `,"metadata":`...)
		dst = append(dst, req.Metadata...)
	}
	if rf := &req.ResponseFormat; rf.Type != "" {
		dst = append(dst, `,"text":{"format":{"type":`...)
		dst = jsonx.AppendString(dst, rf.Type)
		if rf.Type == translate.FormatJSONSchema {
			dst = append(dst, `,"name":`...)
			dst = jsonx.AppendString(dst, rf.Name)
			if rf.Description != "" {
				dst = append(dst, `,"description":`...)
				dst = jsonx.AppendString(dst, rf.Description)
			}
			dst = append(dst, `,"schema":`...)
			dst = jsonx.AppendRawOr(dst, rf.Schema, `{}`)
			if rf.Strict != nil {
				dst = append(dst, `,"strict":`...)
				dst = jsonx.AppendBool(dst, *rf.Strict)
			}
		}
		dst = append(dst, `}}`...)
	}
	if e := req.ReasoningEffort; e != "" {
		dst = append(dst, `,"reasoning":{"effort":`...)
		dst = jsonx.AppendString(dst, e)
		if e != "none" {
			dst = append(dst, `,"summary":"auto"`...)
		}
		dst = append(dst, '}')
	}
	if responsesWantsEncrypted(req, model, carried) {
		dst = append(dst, `,"include":["reasoning.encrypted_content"]`...)
	}
	dst = append(dst, `,"store":`...)
	dst = jsonx.AppendBool(dst, opts.Store)
	if opts.Stream {
		dst = append(dst, `,"stream":true`...)
	}
	return append(dst, '}'), nil
}

// responsesCheck rejects what the Responses API cannot honour, unless the operator lets
// such parameters be dropped.
func responsesCheck(req *translate.Request, opts *translate.Options) error {
	return opts.Refuse(responsesName, req.Extra,
		translate.Param{Name: "stop", Set: len(req.Stop) > 0},
		translate.Param{Name: "n", Set: req.N > 1},
		// Responses can return logprobs, but Agate has no chat-shaped way to pass them on.
		translate.Param{Name: "logprobs", Set: req.Logprobs},
		translate.Param{Name: "top_logprobs", Set: req.TopLogprobs != nil},
		translate.Param{Name: "presence_penalty", Set: req.PresencePenalty != nil},
		translate.Param{Name: "frequency_penalty", Set: req.FrequencyPenalty != nil},
		translate.Param{Name: "seed", Set: req.Seed != nil},
	)
}

// responsesWantsEncrypted reports whether to ask for encrypted reasoning: when the client
// asked for reasoning, when the history carries reasoning state (so the model reasons),
// or when the upstream model is a reasoning model by name (reasoning is on by default
// there, and without the encrypted items a stateless next turn loses it).
func responsesWantsEncrypted(req *translate.Request, model string, carried bool) bool {
	if req.ReasoningEffort == "none" {
		return carried
	}
	return req.ReasoningEffort != "" || carried || responsesReasoningModel(model)
}

func responsesReasoningModel(model string) bool {
	if i := strings.LastIndexByte(model, '/'); i >= 0 {
		model = model[i+1:]
	}
	switch {
	case strings.HasPrefix(model, "gpt-5"):
		return !strings.Contains(model, "-chat")
	case len(model) >= 2 && model[0] == 'o' && model[1] >= '1' && model[1] <= '9':
		return true
	case strings.Contains(model, "codex"):
		return true
	}
	return false
}

// appendResponsesMessage appends the input items for message i. It returns the new item
// count and whether reasoning state was restored.
func appendResponsesMessage(dst []byte, n, i int, req *translate.Request, m *translate.Message, opts *translate.Options) ([]byte, int, bool, error) {
	sep := func() {
		if n > 0 {
			dst = append(dst, ',')
		}
		n++
	}
	switch m.Role {
	case translate.RoleSystem, translate.RoleDeveloper, translate.RoleUser:
		sep()
		dst = append(dst, `{"role":`...)
		dst = jsonx.AppendString(dst, m.Role)
		dst = append(dst, `,"content":`...)
		if len(m.Content) == 1 && m.Content[0].Type == translate.PartText || m.Role != translate.RoleUser {
			dst = req.AppendMessageText(dst, m)
		} else {
			var err error
			if dst, err = appendResponsesParts(dst, i, req, m.Content, opts); err != nil {
				return dst, n, false, err
			}
		}
		dst = append(dst, '}')
	case translate.RoleTool:
		sep()
		id := translate.CarriedID(m.ToolCallID)
		dst = append(dst, `{"type":"function_call_output","call_id":`...)
		dst = jsonx.AppendString(dst, id)
		dst = append(dst, `,"output":`...)
		dst = req.AppendToolOutput(dst, m)
		dst = append(dst, '}')
	case translate.RoleAssistant:
		carried := false
		// Reasoning items restored from call ids go first: the upstream produced them
		// before the message and its calls.
		var fcIDs []string
		for j := range m.ToolCalls {
			_, state := req.SplitID(m.ToolCalls[j].ID)
			if state == nil {
				continue
			}
			sc := jsonx.NewScanner(jsonx.View(state))
			st, ok := sc.Root()
			if !ok || st.Kind != jsonx.Object {
				continue
			}
			if fcIDs == nil {
				fcIDs = make([]string, len(m.ToolCalls))
			}
			fcIDs[j] = sc.Get(st, "id").Str
			sc.Each(sc.Get(st, "reasoning"), func(_ string, r jsonx.Value) bool {
				enc := sc.Get(r, "encrypted_content").Str
				rid := sc.Get(r, "id").Str
				if rid == "" || (enc == "" && !opts.Store) {
					return true // an item the upstream could not resolve statelessly
				}
				sep()
				carried = true
				dst = append(dst, `{"type":"reasoning","id":`...)
				dst = jsonx.AppendString(dst, rid)
				dst = append(dst, `,"summary":[`...)
				k := 0
				sc.Each(sc.Get(r, "summary"), func(_ string, s jsonx.Value) bool {
					if k > 0 {
						dst = append(dst, ',')
					}
					k++
					dst = append(dst, `{"type":"summary_text","text":`...)
					dst = jsonx.AppendString(dst, sc.Get(s, "text").Str)
					dst = append(dst, '}')
					return true
				})
				dst = append(dst, ']')
				if enc != "" {
					dst = append(dst, `,"encrypted_content":`...)
					dst = jsonx.AppendString(dst, enc)
				}
				dst = append(dst, '}')
				return true
			})
		}
		// The text, then the refusal, then refusal parts: one assistant message.
		refusals := m.Refusal != ""
		for _, p := range m.Content {
			refusals = refusals || p.Type == translate.PartRefusal
		}
		if !refusals && len(m.Content) == 1 && m.Content[0].Type == translate.PartText {
			if m.Content[0].Text != "" {
				sep()
				dst = append(dst, `{"role":"assistant","content":`...)
				dst = req.AppendText(dst, m.Content[0].Text)
				dst = append(dst, '}')
			}
		} else {
			text := req.AppendDecoded(req.AppendDecodedText(nil, m), m.Refusal)
			for _, p := range m.Content {
				if p.Type == translate.PartRefusal {
					text = req.AppendDecoded(text, p.Text)
				}
			}
			if len(text) > 0 {
				sep()
				dst = append(dst, `{"role":"assistant","content":`...)
				dst = jsonx.AppendString(dst, jsonx.View(text))
				dst = append(dst, '}')
			}
		}
		var decoded []byte // a tool call's arguments, decoded to be checked
		for j := range m.ToolCalls {
			tc := &m.ToolCalls[j]
			decoded = req.AppendDecoded(decoded[:0], tc.Arguments)
			args := tc.Arguments // written as AppendText writes it
			if strings.TrimSpace(jsonx.View(decoded)) == "" {
				args = "{}"
			} else if !jsonx.Valid(jsonx.View(decoded)) {
				return dst, n, false, translate.Errorf(translate.ParamIndex(translate.ParamIndex("messages", i)+".tool_calls", j)+".function.arguments", "must be a string of valid JSON")
			}
			id := translate.CarriedID(tc.ID)
			sep()
			dst = append(dst, `{"type":"function_call","call_id":`...)
			dst = jsonx.AppendString(dst, id)
			dst = append(dst, `,"name":`...)
			dst = jsonx.AppendString(dst, tc.Name)
			dst = append(dst, `,"arguments":`...)
			dst = req.AppendText(dst, args)
			if fcIDs != nil && fcIDs[j] != "" {
				dst = append(dst, `,"id":`...)
				dst = jsonx.AppendString(dst, fcIDs[j])
			}
			dst = append(dst, '}')
		}
		return dst, n, carried, nil
	}
	return dst, n, false, nil
}

func appendResponsesParts(dst []byte, i int, req *translate.Request, parts []translate.Part, opts *translate.Options) ([]byte, error) {
	dst = append(dst, '[')
	n := 0
	for j := range parts {
		p := &parts[j]
		if p.Type == translate.PartAudio {
			param := translate.ParamIndex(translate.ParamIndex("messages", i)+".content", j) + ".type"
			if !opts.Drop(param) {
				return dst, translate.Unsupported(param, responsesName)
			}
			continue
		}
		if n > 0 {
			dst = append(dst, ',')
		}
		n++
		switch p.Type {
		case translate.PartText, translate.PartRefusal:
			dst = append(dst, `{"type":"input_text","text":`...)
			dst = req.AppendText(dst, p.Text)
		case translate.PartImage:
			dst = append(dst, `{"type":"input_image","image_url":`...)
			dst = jsonx.AppendString(dst, p.Media.URL)
			detail := p.Media.Detail
			if detail == "" {
				detail = "auto"
			}
			dst = append(dst, `,"detail":`...)
			dst = jsonx.AppendString(dst, detail)
		case translate.PartFile:
			dst = append(dst, `{"type":"input_file"`...)
			if p.Media.FileID != "" {
				dst = append(dst, `,"file_id":`...)
				dst = jsonx.AppendString(dst, p.Media.FileID)
			}
			if p.Media.FileData != "" {
				dst = append(dst, `,"file_data":`...)
				if strings.HasPrefix(p.Media.FileData, "data:") {
					dst = jsonx.AppendString(dst, p.Media.FileData)
				} else { // bare base64, as some chat clients send: PDF is what chat accepts
					dst = jsonx.AppendString(dst, "data:application/pdf;base64,"+p.Media.FileData)
				}
			}
			if p.Media.Filename != "" {
				dst = append(dst, `,"filename":`...)
				dst = jsonx.AppendString(dst, p.Media.Filename)
			}
		}
		dst = append(dst, '}')
	}
	return append(dst, ']'), nil
}

// responsesTool appends function tool t in the Responses API's terms.
func responsesTool(dst []byte, t *translate.Tool) []byte {
	dst = append(dst, `{"type":"function","name":`...)
	dst = jsonx.AppendString(dst, t.Name)
	if t.Description != "" {
		dst = append(dst, `,"description":`...)
		dst = jsonx.AppendString(dst, t.Description)
	}
	dst = append(dst, `,"parameters":`...)
	dst = jsonx.AppendRawOr(dst, t.Parameters, `{"type":"object","properties":{}}`)
	// Responses defaults strict to true; chat completions to false.
	dst = append(dst, `,"strict":`...)
	dst = jsonx.AppendBool(dst, t.Strict != nil && *t.Strict)
	return append(dst, '}')
}

// ReadsLiterals marks the encoder as a translate.LiteralReader: AppendRequest reads
// message strings only through the request's Append* text methods.
func (responsesProvider) ReadsLiterals() {}
