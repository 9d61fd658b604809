package responsesin

import (
	"crypto/sha256"
	"encoding/hex"

	"github.com/agate-gateway/agate/internal/jsonx"
	"github.com/agate-gateway/agate/translate"
	"github.com/agate-gateway/agate/translate/internal/members"
)

// A namespace tool ({"type":"namespace","name":"crm","description":...,"tools":[function
// tools]}, OpenAI's NamespaceToolParam) groups function tools; the model's call of one is
// a function_call item whose name is the function's and whose namespace is the group's.
// No translating upstream has namespaces, so its functions go upstream as plain tools
// under a flat name (FlatName), and calls of a flat name come back to the client with the
// function's name and namespace (see Encoder). The flat names satisfy every translating
// upstream's rule for function names: Anthropic's ^[a-zA-Z0-9_-]{1,128}$, OpenAI chat's
// a-z, A-Z, 0-9, _ and - up to 64, Gemini's same set starting with a letter or an
// underscore, up to 64.

// maxFlatName is the longest flat name: the shortest limit among the upstreams.
const maxFlatName = 64

// flatHashLen is the number of hex digits of the hash a fallback flat name ends with.
const flatHashLen = 8

// toolRef is a function of a namespace tool, as the client names it.
type toolRef struct{ namespace, name string }

// flatTools maps the functions of a request's namespace tools to their flat names and
// back. The zero value has none.
type flatTools struct {
	byFlat map[string]toolRef
	byRef  map[toolRef]string
}

// FlatName is the flat name of the function name in namespace ns when no other tool of
// the request already has it: "<ns>__<name>" when that is a valid upstream function name
// (at most 64 bytes of a-z, A-Z, 0-9, _ and -, starting with a letter or _), else the
// fallback: those bytes with every other byte replaced by _ (and a leading _ when the
// first is not a letter or _), cut to 55 bytes, then _ and the first 8 hex digits of the
// SHA-256 of ns, a zero byte and name. The fallback also serves a "<ns>__<name>" that
// another tool's name already is. It is a pure function: the same pair has the same
// name on every request.
func FlatName(ns, name string) string {
	if s := ns + "__" + name; validFlatName(s) {
		return s
	}
	return fallbackFlatName(ns, name)
}

func fallbackFlatName(ns, name string) string {
	src := ns + "__" + name
	b := make([]byte, 0, maxFlatName)
	if c := src[0]; !(c == '_' || c|0x20 >= 'a' && c|0x20 <= 'z') {
		b = append(b, '_')
	}
	for i := 0; i < len(src) && len(b) < maxFlatName-1-flatHashLen; i++ {
		c := src[i]
		if !flatNameByte(c) {
			c = '_'
		}
		b = append(b, c)
	}
	sum := sha256.Sum256([]byte(ns + "\x00" + name))
	b = append(b, '_')
	return string(hex.AppendEncode(b, sum[:flatHashLen/2]))
}

func flatNameByte(c byte) bool {
	return c == '_' || c == '-' || c >= '0' && c <= '9' || c|0x20 >= 'a' && c|0x20 <= 'z'
}

func validFlatName(s string) bool {
	if s == "" || len(s) > maxFlatName {
		return false
	}
	if c := s[0]; !(c == '_' || c|0x20 >= 'a' && c|0x20 <= 'z') {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !flatNameByte(s[i]) {
			return false
		}
	}
	return true
}

// flatName is the name the function name of namespace ns goes upstream as: the one the
// request's tools gave it, or FlatName for a pair no tool of this request offers (a call
// from an earlier turn).
func (t *flatTools) flatName(ns, name string) string {
	if f, ok := t.byRef[toolRef{ns, name}]; ok {
		return f
	}
	return FlatName(ns, name)
}

// clientName returns the namespace and name the client knows the upstream's function
// name by: ("", name) for a name that is not a flat name of this request.
func (t *flatTools) clientName(name string) (ns, fn string) {
	if r, ok := t.byFlat[name]; ok {
		return r.namespace, r.name
	}
	return "", name
}

// namespaceFields are the members of a namespace tool Parse reads.
const namespaceFields = "type name description tools"

var namespaceNames = members.NewNames(namespaceFields)

const (
	nsName  = 1
	nsTools = 3
	nsN     = 4
)

// pendingTool is a function of a namespace tool whose flat name is given once every
// plain tool's name is known.
type pendingTool struct {
	ref   toolRef
	tool  translate.Tool
	param string // its tools[i].tools[j] path
}

// namespace reads the namespace tool t (at param) into p.pending.
func (p *parser) namespace(t jsonx.Value, param func() string) error {
	var f [nsN]jsonx.Value
	if err := members.Read(&p.sc, t, param, namespaceNames, f[:]); err != nil {
		return err
	}
	ns := f[nsName]
	if ns.Kind != jsonx.String || ns.Str == "" {
		return translate.Errorf(param()+".name", "is required")
	}
	fns := f[nsTools]
	if fns.Kind != jsonx.Array {
		return translate.Errorf(param()+".tools", "must be an array of function tools")
	}
	var err error
	j := 0
	p.sc.Each(fns, func(_ string, fn jsonx.Value) bool {
		at := j
		fparam := func() string { return index(param()+".tools", at) }
		j++
		var tool translate.Tool
		var ok bool
		if tool, ok, err = p.functionTool(fn, fparam); err != nil {
			return false
		}
		if !ok { // a built-in tool has no name to flatten: only a responses backend serves it
			p.untranslatableErr(fparam()+".type", "the built-in tool %q is served only by a responses backend; this model's backend runs function tools only",
				clip(tool.Builtin.Type))
			return true
		}
		p.pending = append(p.pending, pendingTool{ref: toolRef{ns.Str, tool.Name}, tool: tool, param: fparam()})
		return true
	})
	return err
}

// flatten gives the functions of the namespace tools their flat names, collision-free
// against the plain tools' names and each other, and appends them to Core.Tools.
func (p *parser) flatten() error {
	if len(p.pending) == 0 {
		return nil
	}
	c := p.r.Core
	taken := make(map[string]bool, len(c.Tools)+len(p.pending))
	for i := range c.Tools {
		taken[c.Tools[i].Name] = true
	}
	ft := &p.r.flat
	ft.byFlat = make(map[string]toolRef, len(p.pending))
	ft.byRef = make(map[toolRef]string, len(p.pending))
	for _, pt := range p.pending {
		if _, dup := ft.byRef[pt.ref]; dup {
			return translate.Errorf(pt.param+".name", "the function %q is in namespace %q twice", clip(pt.ref.name), clip(pt.ref.namespace))
		}
		flat := FlatName(pt.ref.namespace, pt.ref.name)
		if taken[flat] {
			flat = fallbackFlatName(pt.ref.namespace, pt.ref.name)
		}
		if taken[flat] {
			return translate.Errorf(pt.param+".name", "the function %q of namespace %q has no upstream name free of the other tools' (%q is taken)",
				clip(pt.ref.name), clip(pt.ref.namespace), flat)
		}
		taken[flat] = true
		ft.byFlat[flat], ft.byRef[pt.ref] = pt.ref, flat
		pt.tool.Name = flat
		c.Tools = append(c.Tools, pt.tool)
	}
	p.pending = nil
	return nil
}
