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
// The objects read by member position (the request, its messages, content parts, tool
// calls, tools and their functions, tool_choice and response_format) are listed in
// members.table, from which go generate writes members_gen.go (translate/internal/membergen):
// their lists, members.Names, position constants, field functions and read functions that
// walk an object's members, trying the orders clients write them in first, apply the member
// rule and hand each member to the object's member method (toolMember, ...). The other
// objects are read with fields (a list of wanted names) or member.
//
//go:generate go run ../internal/membergen -in members.table -out members_gen.go

// noNames is the list of an object whose member names the parser does not interpret
// (metadata, a thinking block), for member.
var noNames members.Names

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
