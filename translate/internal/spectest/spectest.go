// Package spectest validates JSON bodies against the providers' published OpenAPI specs,
// kept (trimmed to the schemas the tests use) in the repository's testdata/specs, for tests
// of the request translators. testdata/specs/SOURCES.md names their origin.
package spectest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// SpecsDir returns the path of the repository's testdata/specs directory; its sibling
// testdata/fixtures holds the recorded provider traffic.
func SpecsDir() string {
	_, file, _, _ := runtime.Caller(0)
	// translate/internal/spectest -> repository root -> testdata/specs
	return filepath.Join(filepath.Dir(file), "..", "..", "..", "testdata", "specs")
}

// Schema compiles the schema at pointer (for example
// "#/components/schemas/CreateMessageParams") of the OpenAPI document specFile (relative to
// SpecsDir, e.g. "anthropic/messages.json"). It fails the test if the spec is missing.
func Schema(t testing.TB, specFile, pointer string) *jsonschema.Schema {
	t.Helper()
	return Compiler(t, specFile)(pointer)
}

// Compiler reads and parses specFile once and returns a function that compiles the schema
// at a pointer in it, as Schema does; schemas compiled by one Compiler share their
// subschemas, so compiling many of one spec costs about one. It is not safe for
// concurrent use.
func Compiler(t testing.TB, specFile string) func(pointer string) *jsonschema.Schema {
	t.Helper()
	path := filepath.Join(SpecsDir(), specFile)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading spec: %v", err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("parsing spec %s: %v", specFile, err)
	}
	rewriteRecursive(doc, "#", "")
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	url := "file:///specs/" + filepath.ToSlash(specFile)
	if err := c.AddResource(url, doc); err != nil {
		t.Fatalf("adding spec: %v", err)
	}
	return func(pointer string) *jsonschema.Schema {
		t.Helper()
		s, err := c.Compile(url + pointer)
		if err != nil {
			t.Fatalf("compiling %s%s: %v", specFile, pointer, err)
		}
		return s
	}
}

// Validate reports whether body satisfies s.
func Validate(s *jsonschema.Schema, body []byte) error {
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("body is not JSON: %w", err)
	}
	return s.Validate(v)
}

// MustRejectInvalid fails the test unless s rejects invalid: the self-check that the
// validator is not one that accepts everything.
func MustRejectInvalid(t testing.TB, s *jsonschema.Schema, invalid string) {
	t.Helper()
	if !json.Valid([]byte(invalid)) {
		t.Fatalf("self-check body is not JSON: %s", invalid)
	}
	if err := Validate(s, []byte(invalid)); err == nil {
		t.Fatalf("validator accepted a known-invalid body: %s", invalid)
	}
}

// rewriteRecursive replaces the draft 2019-09 $recursiveAnchor/$recursiveRef pair, which
// the OpenAI spec uses inside a 2020-12 document, with a plain $ref to the anchored schema.
func rewriteRecursive(v any, ptr, anchor string) {
	switch x := v.(type) {
	case map[string]any:
		if b, ok := x["$recursiveAnchor"].(bool); ok {
			delete(x, "$recursiveAnchor")
			if b {
				anchor = ptr
			}
		}
		if r, ok := x["$recursiveRef"].(string); ok && r == "#" && anchor != "" {
			delete(x, "$recursiveRef")
			x["$ref"] = anchor
		}
		for k, e := range x {
			rewriteRecursive(e, ptr+"/"+k, anchor)
		}
	case []any:
		for i, e := range x {
			rewriteRecursive(e, fmt.Sprintf("%s/%d", ptr, i), anchor)
		}
	}
}
