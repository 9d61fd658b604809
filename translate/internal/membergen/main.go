// Command membergen writes a client parser's object readers from a table: for each object
// the parser reads by member position, the constants of its members' positions, the list
// of their names (<name>Fields) as members.Names (<name>Names), a field function that
// returns a name's position (a switch the compiler turns into a few length and word
// compares) and a read function that walks the object's members: it tries the compact
// forms of the members clients usually write next (jsonx.Scanner.MemberIs, compared as
// constant words) before it asks NextField, applies the member rule (members.Set: a bit a
// known name, the list for the others) and hands each member to a method the parser writes
// by hand.
//
// Usage, from a package's go:generate line:
//
//	go run ../internal/membergen -in members.table -out members_gen.go
//
// The table is line-based; # starts a comment. An object is declared by
//
//	object <name> <prefix> <values>: <member> <member> ...
//
// The members' positions, and so their bits in members.Set, are the order of the line:
// append a new member at the end (at most 64). The constants are <prefix><Member> (the
// member in CamelCase, with ID, JSON and URL in capitals). The read function is
//
//	func (p *parser) read<Name>(o <values>, base func() string) bool
//
// which calls p.<name>Member(f, o) with each member's position f (-1 for a name the list
// does not hold, which sc.Key() then holds) and the cursor at its value, and returns false
// on a syntax error, a refused name (p.keyError with base, called only then) or a member
// method's false; <values> "-" drops o (p.<name>Member(f)). The parser type must have a
// jsonx.Scanner field sc and a keyError(base func() string, k, code, field string) bool
// method. A member written <member>=<read> in the object line is read by the read function
// itself into o's field named after it (lower camelCase, typ for type), with no call to
// the member method: <read> is value (jsonx.Scanner.Value), first (First: the first of
// duplicates wins), payload or firstPayload (the parser's methods of those names). The
// orders clients write the object's members in are lines of
//
//	try <name> <after>...: <member> <member> ...
//
// where <after> is "first" (the object's first member, whose brace form `{"role":` is
// tried) or the members after which the listed members' comma forms (`,"content":`) are
// tried, in the order listed. A member's name read by a compact form is not in sc.Key().
// An object's straight line, at most one,
//
//	straight <name>: <member> <member>|<member> ...
//
// is read before those tries, each step once, without the ladder's tests: the read
// function tries each step's members (alternatives split by |) by their compact forms
// (the first step's brace forms), reads the one it finds as the ladder reads it, and
// tries the object's end after each step; at the first step none of whose members is at
// the cursor, the ladder goes on from there (its member count, last member and seen
// names as it would have left them). A member is in a straight line once.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"go/format"
	"log"
	"os"
	"slices"
	"strings"
)

type object struct {
	name, prefix string
	// values is the type of the read function's o, passed to the member method; "-" for none.
	values string
	// reads maps a member to how the read function reads it itself (reader), without
	// the member method.
	reads   map[string]string
	members []string
	first   []string
	// after maps a member to the members tried after it, in order; order lists the
	// members with a try line, in the table's order.
	after map[string][]string
	order []string
	// straight is the object's straight line: each step the members one of which the
	// read function reads there, tried in order, before its member ladder.
	straight [][]string
}

func main() {
	in := flag.String("in", "members.table", "the table")
	out := flag.String("out", "members_gen.go", "the Go file written")
	pkg := flag.String("package", os.Getenv("GOPACKAGE"), "the package of the file written")
	flag.Parse()
	src, err := os.ReadFile(*in)
	if err != nil {
		log.Fatal(err)
	}
	objs, err := parse(string(src))
	if err != nil {
		log.Fatalf("%s: %v", *in, err)
	}
	code, err := generate(*pkg, *in, objs)
	if err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile(*out, code, 0o644); err != nil {
		log.Fatal(err)
	}
}

// parse reads the table.
func parse(src string) ([]*object, error) {
	var objs []*object
	byName := map[string]*object{}
	for n, line := range strings.Split(src, "\n") {
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		head, list, ok := strings.Cut(line, ":")
		words := strings.Fields(head)
		if len(words) == 0 {
			continue
		}
		fail := func(format string, args ...any) error {
			return fmt.Errorf("line %d: %s", n+1, fmt.Sprintf(format, args...))
		}
		names := strings.Fields(list)
		if !ok || len(names) == 0 {
			return nil, fail("want %q", "<head>: <member> ...")
		}
		switch words[0] {
		case "object":
			if len(words) != 4 || byName[words[1]] != nil {
				return nil, fail("want a new object's name, its constants' prefix and its values' type")
			}
			o := &object{name: words[1], prefix: words[2], values: words[3], after: map[string][]string{}, reads: map[string]string{}}
			for _, m := range names {
				m, read, ok := strings.Cut(m, "=")
				if ok && (read == "" || o.values == "-") {
					return nil, fail("%q: want a read (value, first, payload, firstPayload, an object or a method) and an object with values", m)
				}
				if ok {
					o.reads[m] = read
				}
				o.members = append(o.members, m)
			}
			objs = append(objs, o)
			byName[o.name] = o
		case "try":
			if len(words) < 3 || byName[words[1]] == nil {
				return nil, fail("want a declared object and what the members are tried after")
			}
			o := byName[words[1]]
			for _, m := range append(names, words[2:]...) {
				if m != "first" && o.pos(m) < 0 {
					return nil, fail("%q is not a member of %s", m, o.name)
				}
				if len(m) > 12 || len(m) < 2 {
					// MemberIs compares 8 to 16 bytes, MemberIsShort 4 to 7: `,"` m `":`.
					return nil, fail("%q is too long or too short to compare in two words", m)
				}
			}
			for _, a := range words[2:] {
				if a == "first" {
					o.first = append(o.first, names...)
					continue
				}
				if o.after[a] == nil {
					o.order = append(o.order, a)
				}
				o.after[a] = append(o.after[a], names...)
			}
		case "straight":
			var o *object
			if len(words) == 2 {
				o = byName[words[1]]
			}
			if o == nil || o.straight != nil {
				return nil, fail("want a declared object without a straight line")
			}
			var seen []string
			for _, step := range names {
				alts := strings.Split(step, "|")
				for _, m := range alts {
					if o.pos(m) < 0 || slices.Contains(seen, m) {
						return nil, fail("%q is not a member of %s, or is in its straight line twice", m, o.name)
					}
					if len(m) > 12 || len(m) < 2 {
						return nil, fail("%q is too long or too short to compare in two words", m)
					}
					seen = append(seen, m)
				}
				o.straight = append(o.straight, alts)
			}
		default:
			return nil, fail("unknown line %q", words[0])
		}
	}
	return objs, nil
}

func (o *object) pos(m string) int {
	for i, k := range o.members {
		if k == m {
			return i
		}
	}
	return -1
}

// constName is the constant of member m: prefix and m in CamelCase.
func (o *object) constName(m string) string {
	var b strings.Builder
	b.WriteString(o.prefix)
	for _, w := range strings.Split(m, "_") {
		switch w {
		case "id", "json", "url":
			b.WriteString(strings.ToUpper(w))
		default:
			b.WriteString(strings.ToUpper(w[:1]) + w[1:])
		}
	}
	return b.String()
}

func generate(pkg, table string, objs []*object) ([]byte, error) {
	byName := map[string]*object{}
	for _, o := range objs {
		byName[o.name] = o
	}
	for _, o := range objs {
		for m, r := range o.reads {
			if sub := byName[r]; sub != nil && sub.values != o.values {
				return nil, fmt.Errorf("%s.%s: the object %s must read into %s", o.name, m, r, o.values)
			}
		}
	}
	var b bytes.Buffer
	p := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	p("// Code generated by membergen from %s; DO NOT EDIT.", table)
	p("")
	p("package %s", pkg)
	p("")
	p("import (")
	p("\t\"github.com/agate-gateway/agate/translate\"")
	p("\t\"github.com/agate-gateway/agate/translate/internal/members\"")
	p(")")
	p("")
	for _, o := range objs {
		p("")
		p("// The members of a %s object, at their positions.", o.name)
		p("const (")
		for i, m := range o.members {
			if i == 0 {
				p("\t%s = iota", o.constName(m))
			} else {
				p("\t%s", o.constName(m))
			}
		}
		p(")")
		p("")
		p("const %sFields = %q", o.name, strings.Join(o.members, " "))
		p("")
		p("var %sNames = members.NewNames(%sFields)", o.name, o.name)
		p("")
		p("// %sField returns k's position in %sFields, -1 when it is none of them.", o.name, o.name)
		p("func %sField(k string) int {", o.name)
		p("\tswitch k {")
		for _, m := range o.members {
			p("\tcase %q:", m)
			p("\t\treturn %s", o.constName(m))
		}
		p("\t}")
		p("\treturn -1")
		p("}")
		o.read(p, byName)
	}
	return format.Source(b.Bytes())
}

// read writes the object's read function.
func (o *object) read(p func(string, ...any), byName map[string]*object) {
	name := title(o.name)
	arg, param := "", ""
	if o.values != "-" {
		arg, param = ", o", "o "+o.values+", "
	}
	p("")
	p("// read%s reads the members of the %s object at the cursor, each with", name, o.name)
	p("// p.%sMember, and applies the member rule to their names; base returns the object's", o.name)
	p("// param path, for an error. It returns false on a syntax error, a refused name (p.err,")
	p("// p.keyError) or what %sMember returns.", o.name)
	p("func (p *parser) read%s(%sbase func() string) bool {", name, param)
	p("\tsc := &p.sc")
	p("\tvar seen members.Set")
	if o.straight != nil {
		o.readStraight(p, byName)
		p("ladder:")
		p("\tfor {")
	} else {
		p("\tfor n, f := 0, -1; ; {")
	}
	p("\t\tswitch {")
	p("\t\tcase n > 0 && sc.EndIs('}'):")
	p("\t\t\treturn !sc.Failed()")
	for _, m := range o.first {
		p("\t\tcase n == 0 && %s:", memberIs(`{"`+m+`":`))
		p("\t\t\tn, f = 1, %s", o.constName(m))
	}
	// The comma forms, a case a member, in the order the try lines first name them.
	var tried []string
	for _, a := range o.order {
		for _, m := range o.after[a] {
			if !slices.Contains(tried, m) {
				tried = append(tried, m)
			}
		}
	}
	for _, m := range tried {
		var after []string
		for _, a := range o.order {
			if slices.Contains(o.after[a], m) {
				after = append(after, "f == "+o.constName(a))
			}
		}
		cond := strings.Join(after, " || ")
		if len(after) > 1 {
			cond = "(" + cond + ")"
		}
		p("\t\tcase %s && %s:", cond, memberIs(`,"`+m+`":`))
		p("\t\t\tf = %s", o.constName(m))
	}
	p("\t\tcase sc.NextField(&n):")
	p("\t\t\tif f = %sField(sc.Key()); f < 0 {", o.name)
	p("\t\t\t\tif code, field := seen.Other(sc.Key(), %sNames); code != \"\" {", o.name)
	p("\t\t\t\t\treturn p.keyError(base, sc.Key(), code, field)")
	p("\t\t\t\t}")
	p("\t\t\t}")
	p("\t\tdefault:")
	p("\t\t\treturn !sc.Failed()")
	p("\t\t}")
	p("\t\tif f >= 0 && !seen.Known(f) {")
	p("\t\t\treturn p.keyError(base, %sNames.Name(f), translate.CodeDuplicateKey, \"\")", o.name)
	p("\t\t}")
	if len(o.reads) == 0 {
		p("\t\tif !p.%sMember(f%s) {", o.name, arg)
		p("\t\t\treturn false")
		p("\t\t}")
	} else {
		if o.straight == nil {
			p("\t\tvar ok bool")
		}
		p("\t\tswitch f {")
		for _, m := range o.members {
			if o.reads[m] == "" {
				continue
			}
			p("\t\tcase %s:", o.constName(m))
			o.readMember(p, "\t\t\t", m, byName)
		}
		p("\t\tdefault:")
		p("\t\t\tok = p.%sMember(f%s)", o.name, arg)
		p("\t\t}")
		p("\t\tif !ok {")
		p("\t\t\treturn false")
		p("\t\t}")
	}
	p("\t}")
	p("}")
}

// readStraight writes the read function's straight line, before its ladder (at the label
// ladder): each step's members tried in order by their compact forms (the first step's
// brace forms), the member read there as the ladder reads it, and the object's end
// tried after each; the first step none of whose members is at the cursor goes to the
// ladder, with n, f and seen as the ladder would have left them.
func (o *object) readStraight(p func(string, ...any), byName map[string]*object) {
	arg := ""
	if o.values != "-" {
		arg = ", o"
	}
	p("\tn, f := 0, -1")
	p("\tvar ok bool")
	p("\t// The straight line (members.table): %s.", strings.Join(func() []string {
		var s []string
		for _, step := range o.straight {
			s = append(s, strings.Join(step, " or "))
		}
		return s
	}(), ", then "))
	for i, step := range o.straight {
		p("\tswitch {")
		for _, m := range step {
			if i == 0 {
				p("\tcase %s:", memberIs(`{"`+m+`":`))
				p("\t\tn, f = 1, %s", o.constName(m))
			} else {
				p("\tcase %s:", memberIs(`,"`+m+`":`))
				p("\t\tf = %s", o.constName(m))
			}
			p("\t\tseen.Known(f) // the straight line names each member once")
			if o.reads[m] != "" {
				o.readMember(p, "\t\t", m, byName)
			} else {
				p("\t\tok = p.%sMember(f%s)", o.name, arg)
			}
		}
		p("\tdefault:")
		p("\t\tgoto ladder")
		p("\t}")
		p("\tif !ok {")
		p("\t\treturn false")
		p("\t}")
		p("\tif sc.EndIs('}') {")
		p("\t\treturn !sc.Failed()")
		p("\t}")
	}
}

// readMember writes how the read function reads member m itself (o.reads), into ok.
func (o *object) readMember(p func(string, ...any), in, m string, byName map[string]*object) {
	r := o.reads[m]
	switch sub := byName[r]; {
	case reader(r) != "":
		p(in+"ok = "+reader(r), fieldName(m))
	case sub != nil:
		p(in + "if sc.Peek() == '{' {")
		p(in+"\tok = p.read%s(o, func() string { return base() + %q })", title(sub.name), "."+m)
		p(in + "} else {")
		p(in + "\tok = sc.Skip()")
		p(in + "}")
	default:
		p(in+"ok = p.%s(o)", r)
	}
}

// title is name with its first letter in upper case.
func title(name string) string { return strings.ToUpper(name[:1]) + name[1:] }

// reader returns how a read function reads a member itself, into the field of its
// values named after the member (fieldName): the scanner's Value or First (a value read
// before is kept), or the parser's payload or firstPayload (a string a lazy parse leaves
// escaped).
func reader(read string) string {
	switch read {
	case "value":
		return "sc.Value(&o.%s)"
	case "first":
		return "sc.First(&o.%s)"
	case "payload":
		return "p.payload(&o.%s)"
	case "firstPayload":
		return "p.firstPayload(&o.%s)"
	}
	return ""
}

// fieldName is the field of an object's values that holds member m: m in lower
// camelCase, "typ" for type.
func fieldName(m string) string {
	if m == "type" {
		return "typ"
	}
	var b strings.Builder
	for i, w := range strings.Split(m, "_") {
		switch {
		case i == 0:
			b.WriteString(w)
		case w == "id" || w == "json" || w == "url":
			b.WriteString(strings.ToUpper(w))
		default:
			b.WriteString(strings.ToUpper(w[:1]) + w[1:])
		}
	}
	return b.String()
}

// memberIs is the scanner call that compares the compact form want.
func memberIs(want string) string {
	if len(want) < 8 {
		return fmt.Sprintf("sc.MemberIsShort(`%s`)", want)
	}
	return fmt.Sprintf("sc.MemberIs(`%s`)", want)
}
