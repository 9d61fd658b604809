package openaichat

import (
	"strings"

	"github.com/agate-gateway/agate/translate"
	"github.com/agate-gateway/agate/translate/internal/members"
)

// Member names in the objects the parser reads. A JSON object that names a member twice, or
// names one of the fields below in another case, means different things to different
// decoders: gjson and the gateway take the first, most JSON libraries the last, and Go's
// encoding/json (and so many upstreams) the last of any case ("MODEL" sets Model). The
// OpenAI passthrough forwards the client's bytes, so such a body could reach the upstream
// as a different request than the one the gateway authorized and metered. The parser
// rejects both shapes in every object it interprets; forwarded bodies then read the same to
// every decoder.
//
// The lists are space-separated and all lowercase ASCII.
const (
	topLevelFields = "model messages stream stream_options tools tool_choice parallel_tool_calls " +
		"max_tokens max_completion_tokens temperature top_p presence_penalty frequency_penalty stop n seed " +
		"logprobs top_logprobs response_format reasoning_effort user metadata"
	streamOptionsFields  = "include_usage"
	messageFields        = "role content name tool_call_id tool_calls reasoning_content thinking_blocks refusal"
	partFields           = "type text refusal image_url file input_audio"
	toolCallFields       = "id type function"
	toolCallFuncFields   = "name arguments"
	toolFields           = "type function"
	toolFuncFields       = "name description parameters strict"
	toolChoiceFields     = "type function"
	responseFormatFields = "type json_schema"
)

// The lists above as members.Names, for member; noNames is the list of an object whose
// member names the parser does not interpret (metadata, a thinking block).
var (
	topLevelNames       = members.NewNames(topLevelFields)
	streamOptionsNames  = members.NewNames(streamOptionsFields)
	messageNames        = members.NewNames(messageFields)
	partNames           = members.NewNames(partFields)
	toolCallNames       = members.NewNames(toolCallFields)
	toolCallFuncNames   = members.NewNames(toolCallFuncFields)
	toolNames           = members.NewNames(toolFields)
	toolFuncNames       = members.NewNames(toolFuncFields)
	toolChoiceNames     = members.NewNames(toolChoiceFields)
	responseFormatNames = members.NewNames(responseFormatFields)
	noNames             members.Names
)

// The positions of the names of messageFields, toolCallFields, toolCallFuncFields and
// partFields in their lists, as the field functions below return them: the parser reads
// the objects it meets most often (a history's messages and tool calls) by these, so a
// member's name is compared once, by the compiler's switch, and checked by a bit test
// (members.Set.Known). TestFieldSwitchesMatchNames holds each function to its list.
const (
	mRole = iota
	mContent
	mName
	mToolCallID
	mToolCalls
	mReasoningContent
	mThinkingBlocks
	mRefusal
)

const (
	tcID = iota
	tcType
	tcFunction
)

const (
	fnName = iota
	fnArguments
)

const (
	tlType = iota
	tlFunction
)

const (
	tfName = iota
	tfDescription
	tfParameters
	tfStrict
)

const (
	ptType = iota
	ptText
	ptRefusal
	ptImageURL
	ptFile
	ptInputAudio
)

// messageField returns k's position in messageFields, -1 when it is none of them.
func messageField(k string) int {
	switch k {
	case "role":
		return mRole
	case "content":
		return mContent
	case "name":
		return mName
	case "tool_call_id":
		return mToolCallID
	case "tool_calls":
		return mToolCalls
	case "reasoning_content":
		return mReasoningContent
	case "thinking_blocks":
		return mThinkingBlocks
	case "refusal":
		return mRefusal
	}
	return -1
}

// toolCallField returns k's position in toolCallFields, -1 when it is none of them.
func toolCallField(k string) int {
	switch k {
	case "id":
		return tcID
	case "type":
		return tcType
	case "function":
		return tcFunction
	}
	return -1
}

// toolCallFuncField returns k's position in toolCallFuncFields, -1 when it is none of them.
func toolCallFuncField(k string) int {
	switch k {
	case "name":
		return fnName
	case "arguments":
		return fnArguments
	}
	return -1
}

// toolField returns k's position in toolFields, -1 when it is none of them.
func toolField(k string) int {
	switch k {
	case "type":
		return tlType
	case "function":
		return tlFunction
	}
	return -1
}

// toolFuncField returns k's position in toolFuncFields, -1 when it is none of them.
func toolFuncField(k string) int {
	switch k {
	case "name":
		return tfName
	case "description":
		return tfDescription
	case "parameters":
		return tfParameters
	case "strict":
		return tfStrict
	}
	return -1
}

// partField returns k's position in partFields, -1 when it is none of them.
func partField(k string) int {
	switch k {
	case "type":
		return ptType
	case "text":
		return ptText
	case "refusal":
		return ptRefusal
	case "image_url":
		return ptImageURL
	case "file":
		return ptFile
	case "input_audio":
		return ptInputAudio
	}
	return -1
}

// Codes of the ParamErrors for ambiguous member names.
const (
	CodeDuplicateKey = translate.CodeDuplicateKey
	CodeKeyCase      = translate.CodeKeyCase
)

// keySet holds the member names seen so far in one JSON object: the member-name rule is
// the one of translate/internal/members, shared with the Responses and Messages parsers.
type keySet = members.Set

// member checks the name of the object member the scanner is at (sc.Key()): it fails when
// the name was already seen in this object, or equals one of known only when case is
// ignored (members.Set.Member). base returns the object's param path, "" at the top level.
func (p *parser) member(seen *keySet, base func() string, known members.Names) bool {
	k := p.sc.Key()
	if _, code, field := seen.Member(k, known); code != "" {
		return p.keyError(base, k, code, field)
	}
	return true
}

// otherMember is member for a name the caller's field function (messageField, ...) found
// at position i of known and seen already holds, or for a name known does not hold (i is
// -1). The caller tests a known name's bit itself (members.Set.Known): a call, and this
// function's work, for every member is what the field functions save.
//
// A name at position i is known's name as written (the field functions match exactly),
// taken from known: a member read with jsonx.Scanner.MemberIs leaves no Key.
func (p *parser) otherMember(seen *keySet, i int, base func() string, known members.Names) bool {
	if i >= 0 {
		return p.keyError(base, known.Name(i), CodeDuplicateKey, "")
	}
	k := p.sc.Key()
	if code, field := seen.Other(k, known); code != "" {
		return p.keyError(base, k, code, field)
	}
	return true
}

// memberOf is member for an object read with fields: the known names are the wanted ones.
func (p *parser) memberOf(seen *keySet, base func() string, wants []want) bool {
	k := p.sc.Key()
	if !seen.Add(k) {
		return p.keyError(base, k, CodeDuplicateKey, "")
	}
	if members.PlainLower(k) {
		return true
	}
	for _, w := range wants {
		if strings.EqualFold(k, w.key) {
			return p.keyError(base, k, CodeKeyCase, w.key)
		}
	}
	return true
}

// keyError records the members.Error for k; base is called only now, so the param path
// is built only for a refused body.
func (p *parser) keyError(base func() string, k, code, field string) bool {
	p.err = members.Error(base(), k, code, field)
	return false
}

// noBase is the param path of the top-level object.
func noBase() string { return "" }
