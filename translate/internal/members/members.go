// Package members holds the gateway's one member-name rule for the JSON objects the client
// dialects interpret (the chat, Responses and Messages parsers): a name given twice, or a
// known field's name in another case, is refused, because such a body reads differently to
// different JSON decoders and may be forwarded upstream as it is. It works on the names an
// internal/jsonx Scanner reads and imports only the core translate package and jsonx.
package members

import (
	"math/bits"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/agate-gateway/agate/internal/jsonx"
	"github.com/agate-gateway/agate/translate"
)

// Set holds the member names seen so far in one JSON object. The zero value is empty; a
// Set is not safe for concurrent use.
type Set struct {
	// known has bit i set once the name at position i of the object's Names was seen
	// (Member); other names are in few, then many. A parser zeroes a Set for each object
	// it reads (each message, each tool call), so few holds only the handful of unknown
	// names an object has at most in practice.
	known uint64
	n     int
	few   [6]string
	many  map[string]struct{} // past len(few) names
}

// Add records k and reports whether it is new.
func (s *Set) Add(k string) bool {
	if s.many != nil {
		if _, dup := s.many[k]; dup {
			return false
		}
		s.many[k] = struct{}{}
		return true
	}
	for _, v := range s.few[:s.n] {
		if v == k {
			return false
		}
	}
	if s.n < len(s.few) {
		s.few[s.n] = k
		s.n++
		return true
	}
	s.many = make(map[string]struct{}, 4*len(s.few))
	for _, v := range s.few {
		s.many[v] = struct{}{}
	}
	s.many[k] = struct{}{}
	return true
}

// Names is the list of the member names an object's reader knows, all lower-case ASCII and
// at most 64 of them (a parser's constant list, made once with NewNames). Set.Member finds
// a name of it among the names of its length and records it in one bit: the names a body
// usually sends cost neither a string list nor a case check. The zero value has no names.
type Names struct {
	list []string
	// byLen has bit i of byLen[l] set when the name at position i is l bytes long; no
	// name is longer than maxNameLen.
	byLen *[maxNameLen + 1]uint64
}

// maxNameLen bounds the length of a name of Names.
const maxNameLen = 40

// maxNames is how many names a Names holds: one bit of Set.known each.
const maxNames = 64

// NewNames returns the Names of list, a space-separated list of lower-case ASCII names. It
// panics when list breaks that rule or has more than 64 names: the lists are the parsers'
// constants, and the panic is a test failure, not a request's.
func NewNames(list string) Names {
	n := Names{list: strings.Fields(list), byLen: new([maxNameLen + 1]uint64)}
	if len(n.list) > maxNames {
		panic("members: more than 64 names in " + strconv.Quote(list))
	}
	for i, f := range n.list {
		if !PlainLower(f) || len(f) > maxNameLen {
			panic("members: " + strconv.Quote(f) + " is not lower-case ASCII of at most 40 bytes")
		}
		n.byLen[len(f)] |= 1 << i
	}
	return n
}

// Index returns the position of k in n, or -1 when k is not one of its names. It
// compares k only with the names of its length, one or two in a parser's list.
func (n Names) Index(k string) int {
	if len(k) > maxNameLen || n.byLen == nil { // the zero Names has no names
		return -1
	}
	for m := n.byLen[len(k)]; m != 0; m &= m - 1 {
		if i := bits.TrailingZeros64(m); n.list[i] == k {
			return i
		}
	}
	return -1
}

// Name returns the name at position i of n.
func (n Names) Name(i int) string { return n.list[i] }

// Member applies the rule to k, the name of the next member of the object whose names so
// far s holds, and adds k to s. It returns k's position in names (-1 when k is none of
// them) and, when k breaks the rule, the code of its ParamError (see Error):
// translate.CodeDuplicateKey when k was seen before in the object, translate.CodeKeyCase
// with field, the name of names k equals only when case is ignored ("MODEL" for model);
// code is "" when k passes. An object's names must all go through Member with the same
// names, or all through Add.
func (s *Set) Member(k string, names Names) (i int, code, field string) {
	if i = names.Index(k); i >= 0 {
		if !s.Known(i) {
			return i, translate.CodeDuplicateKey, ""
		}
		return i, "", ""
	}
	code, field = s.Other(k, names)
	return -1, code, field
}

// Known is Member for the name at position i of the object's Names, found by the caller
// (a parser's switch over the names it reads, held to Names.Index by its tests): it
// records the name and reports whether it is new. It costs a bit test, where Member's
// search of the list costs a string compare a name.
func (s *Set) Known(i int) bool {
	// NewNames holds a Names to maxNames (64) names, so i < 64: the mask changes no
	// position and spares the shift the test for a count of 64 or more.
	bit := uint64(1) << (i & (maxNames - 1))
	if s.known&bit != 0 {
		return false
	}
	s.known |= bit
	return true
}

// Other is Member for a name k that is none of names: it adds k to s and returns the code
// and field Member returns for it.
func (s *Set) Other(k string, names Names) (code, field string) {
	if !s.Add(k) {
		return translate.CodeDuplicateKey, ""
	}
	if !PlainLower(k) { // a plain name equals a name of names ignoring case only if it equals it
		for _, f := range names.list {
			if strings.EqualFold(k, f) {
				return translate.CodeKeyCase, f
			}
		}
	}
	return "", ""
}

// Check applies the rule to the member name k of an object whose names so far are in seen,
// and adds k to seen: an object that names a member twice, or names one of known in
// another case, reads differently to different JSON decoders (gjson and the gateway take
// the first, most libraries the last, Go's encoding/json any case). base is the object's
// param path, "" at the top level. The error is a *translate.ParamError.
func Check(seen *Set, base, k string, known Names) error {
	if _, code, field := seen.Member(k, known); code != "" {
		return Error(base, k, code, field)
	}
	return nil
}

// Read walks the object obj once, applying Check to every member name, and stores the
// value of each name of known in vals at the name's position in known; vals must be that
// long. base returns the object's param path; it is
// called only for an error, so a path is built only for a refused body. A value that is
// not an object has no members and passes. obj must come from sc; Read moves its cursor.
func Read(sc *jsonx.Scanner, obj jsonx.Value, base func() string, known Names, vals []jsonx.Value) error {
	return ReadRaw(sc, obj, base, known, vals, 0)
}

// ReadRaw is Read, except that a string value of a name whose position in known has its
// bit set in raw (bit i for position i) is left as written (jsonx.Scanner.ValueRaw): its
// Str is the literal's contents, escapes and all. A lazy parser reads the text it passes
// on that way, and decodes nothing it does not compare.
func ReadRaw(sc *jsonx.Scanner, obj jsonx.Value, base func() string, known Names, vals []jsonx.Value, raw uint64) error {
	if obj.Kind != jsonx.Object {
		return nil
	}
	var seen Set
	sc.Seek(obj.At)
	for n := 0; sc.NextField(&n); {
		k := sc.Key()
		j, code, field := seen.Member(k, known)
		if code != "" {
			return Error(base(), k, code, field)
		}
		if j >= 0 {
			if raw&(1<<j) != 0 {
				sc.ValueRaw(&vals[j])
			} else {
				sc.Value(&vals[j])
			}
		} else {
			sc.Skip()
		}
	}
	return nil
}

// Member is one member of an object: its name and its value.
type Member struct {
	Name string
	V    jsonx.Value
}

// Collect walks the object obj once, applying Check to every member name (base is the
// object's param path, "" at the top level), and returns its members appended to dst, in
// order: a parser that reads the members in another order, or more than once, checks
// every name before it reads any value. obj must be an object from sc; Collect moves its
// cursor.
func Collect(sc *jsonx.Scanner, obj jsonx.Value, base string, known Names, dst []Member) ([]Member, error) {
	var seen Set
	sc.Seek(obj.At)
	for n := 0; sc.NextField(&n); {
		k := sc.Key()
		if err := Check(&seen, base, k, known); err != nil {
			return nil, err
		}
		dst = append(dst, Member{Name: k})
		sc.Value(&dst[len(dst)-1].V)
	}
	return dst, nil
}

// Error returns the ParamError for the member name k that Check refused with code
// (translate.CodeDuplicateKey, or translate.CodeKeyCase with the field it folds to).
func Error(base, k, code, field string) *translate.ParamError {
	k = Clip(k)
	param := k
	if base != "" {
		param = base + "." + k
	}
	if code == translate.CodeDuplicateKey {
		return &translate.ParamError{Param: param, Code: code,
			Message: "the key " + strconv.Quote(k) + " appears more than once in the same object: send each field once"}
	}
	return &translate.ParamError{Param: param, Code: code,
		Message: "the key " + strconv.Quote(k) + " differs from the field " + strconv.Quote(field) + " only in case: field names are case-sensitive"}
}

// PlainLower reports whether s is ASCII without upper-case letters: such a name equals a
// lower-case ASCII field name ignoring case only if it equals it exactly (Unicode folds no
// other ASCII rune onto one, only U+017F and U+212A from outside ASCII).
func PlainLower(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= utf8.RuneSelf || c >= 'A' && c <= 'Z' {
			return false
		}
	}
	return true
}

// Clip cuts a client-supplied name to 64 bytes (at a rune start) for error messages.
func Clip(s string) string {
	const max = 64
	if len(s) <= max {
		return s
	}
	n := max
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "..."
}
