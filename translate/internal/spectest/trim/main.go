// Command trim copies an OpenAPI document keeping only the component definitions that the
// given roots reach, so that the specs in testdata/specs hold what the tests validate
// against and nothing else. It was run once per spec; testdata/specs/SOURCES.md records the
// exact commands. Run it again, adding the new root, when a test needs another schema.
//
// Usage, from the repository root:
//
//	go run ./translate/internal/spectest/trim -in <published spec>.json -out testdata/specs/<file>.json \
//		'#/components/schemas/CreateResponse' '#/components/schemas/EasyInputMessage'
//
// A definition is a component, #/components/<section>/<name>. The output keeps the
// document's openapi and info members and every definition reachable from a root through
// "$ref" (and OpenAPI discriminator mappings), transitively; paths and everything else are
// dropped. The kept definitions are copied unchanged. Every reference must point inside
// the document and resolve; anything else is an error, so a trimmed spec never dangles.
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
)

func main() {
	in := flag.String("in", "", "the published OpenAPI document (JSON)")
	out := flag.String("out", "", "where to write the trimmed document")
	flag.Usage = func() {
		fmt.Fprintln(flag.CommandLine.Output(), "usage: trim -in spec.json -out trimmed.json '#/components/schemas/Root'...")
		flag.PrintDefaults()
	}
	flag.Parse()
	if *in == "" || *out == "" || flag.NArg() == 0 {
		flag.Usage()
		os.Exit(2)
	}
	if err := run(*in, *out, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "trim:", err)
		os.Exit(1)
	}
}

func run(in, out string, roots []string) error {
	src, err := os.ReadFile(in)
	if err != nil {
		return err
	}
	b, kept, err := trimSpec(src, roots)
	if err != nil {
		return fmt.Errorf("trimming %s: %w", in, err)
	}
	if err := os.WriteFile(out, b, 0o644); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "trim: %s: kept %d definitions\n", out, kept)
	return nil
}

// trimSpec returns the trimmed document as indented JSON and the number of definitions it
// keeps.
func trimSpec(src []byte, roots []string) ([]byte, int, error) {
	dec := json.NewDecoder(bytes.NewReader(src))
	dec.UseNumber() // keep numbers as written
	var doc map[string]any
	if err := dec.Decode(&doc); err != nil {
		return nil, 0, fmt.Errorf("parsing: %w", err)
	}
	kept := map[definition]any{}
	var queue []definition
	add := func(ref string) error {
		d, err := definitionOf(ref)
		if err != nil {
			return err
		}
		if _, err := resolve(doc, ref); err != nil {
			return err
		}
		if _, ok := kept[d]; !ok {
			node, _ := resolve(doc, d.pointer())
			kept[d] = node
			queue = append(queue, d)
		}
		return nil
	}
	for _, r := range roots {
		if err := add(r); err != nil {
			return nil, 0, fmt.Errorf("root %s: %w", r, err)
		}
	}
	for len(queue) > 0 {
		d := queue[0]
		queue = queue[1:]
		for _, ref := range references(kept[d]) {
			if err := add(ref); err != nil {
				return nil, 0, fmt.Errorf("in %s: %w", d.pointer(), err)
			}
		}
	}

	components := map[string]any{}
	for d, node := range kept {
		section, _ := components[d.section].(map[string]any)
		if section == nil {
			section = map[string]any{}
			components[d.section] = section
		}
		section[d.name] = node
	}
	trimmed := map[string]any{"components": components}
	for _, k := range []string{"openapi", "info", "jsonSchemaDialect"} {
		if v, ok := doc[k]; ok {
			trimmed[k] = v
		}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", " ")
	if err := enc.Encode(trimmed); err != nil {
		return nil, 0, err
	}
	return buf.Bytes(), len(kept), nil
}

// definition names one component, #/components/<section>/<name>.
type definition struct{ section, name string }

func (d definition) pointer() string {
	return "#/components/" + escape(d.section) + "/" + escape(d.name)
}

// definitionOf returns the component a local reference points into.
func definitionOf(ref string) (definition, error) {
	tokens, err := tokensOf(ref)
	if err != nil {
		return definition{}, err
	}
	if len(tokens) < 3 || tokens[0] != "components" {
		return definition{}, fmt.Errorf("reference %q is not inside #/components/<section>/<name>", ref)
	}
	return definition{tokens[1], tokens[2]}, nil
}

// tokensOf splits a local JSON pointer reference ("#/a/b~1c") into unescaped tokens.
func tokensOf(ref string) ([]string, error) {
	p, ok := strings.CutPrefix(ref, "#/")
	if !ok {
		return nil, fmt.Errorf("reference %q is not local to the document", ref)
	}
	if strings.Contains(p, "%") {
		return nil, fmt.Errorf("reference %q is percent-encoded, which trim does not handle", ref)
	}
	tokens := strings.Split(p, "/")
	for i, t := range tokens {
		tokens[i] = strings.ReplaceAll(strings.ReplaceAll(t, "~1", "/"), "~0", "~")
	}
	return tokens, nil
}

func escape(token string) string {
	return strings.ReplaceAll(strings.ReplaceAll(token, "~", "~0"), "/", "~1")
}

// resolve returns the node ref points at in doc.
func resolve(doc any, ref string) (any, error) {
	tokens, err := tokensOf(ref)
	if err != nil {
		return nil, err
	}
	node := doc
	for _, t := range tokens {
		switch n := node.(type) {
		case map[string]any:
			v, ok := n[t]
			if !ok {
				return nil, fmt.Errorf("reference %q does not resolve: no member %q", ref, t)
			}
			node = v
		case []any:
			i, err := strconv.Atoi(t)
			if err != nil || i < 0 || i >= len(n) {
				return nil, fmt.Errorf("reference %q does not resolve: no element %q", ref, t)
			}
			node = n[i]
		default:
			return nil, errors.New("reference " + ref + " does not resolve: descends into a scalar")
		}
	}
	return node, nil
}

// references returns every "$ref" string and discriminator mapping target under node.
// ("$recursiveRef": "#" points at an enclosing schema, so it needs nothing kept.)
func references(node any) []string {
	var refs []string
	var walk func(v any)
	walk = func(v any) {
		switch n := v.(type) {
		case map[string]any:
			if r, ok := n["$ref"].(string); ok {
				refs = append(refs, r)
			}
			if d, ok := n["discriminator"].(map[string]any); ok {
				if m, ok := d["mapping"].(map[string]any); ok {
					for _, target := range m {
						if r, ok := target.(string); ok {
							refs = append(refs, r)
						}
					}
				}
			}
			for _, e := range n {
				walk(e)
			}
		case []any:
			for _, e := range n {
				walk(e)
			}
		}
	}
	walk(node)
	return refs
}
