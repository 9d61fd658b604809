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
	"sync"
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

// Compiler returns a function that compiles the schema at a pointer of specFile, as
// Schema does. Each spec is read, parsed and given a jsonschema compiler once per test
// binary, and each schema compiled once (specs, below): schemas of one spec share their
// subschemas, and a test asking for a schema another test compiled gets that one.
// Compiling was most of the translate packages' schema checks under -race (#54); a
// compiled Schema is only read by Validate, so tests may share it, in parallel too. Safe
// for concurrent use.
func Compiler(t testing.TB, specFile string) func(pointer string) *jsonschema.Schema {
	t.Helper()
	specs.Lock()
	defer specs.Unlock()
	sp := specs.m[specFile]
	if sp == nil {
		var err error
		if sp, err = loadSpec(specFile); err != nil {
			t.Fatal(err)
		}
		if specs.m == nil {
			specs.m = map[string]*spec{}
		}
		specs.m[specFile] = sp
	}
	return func(pointer string) *jsonschema.Schema {
		t.Helper()
		specs.Lock()
		defer specs.Unlock()
		s := sp.schemas[pointer]
		if s == nil {
			var err error
			if s, err = sp.c.Compile(sp.url + pointer); err != nil {
				t.Fatalf("compiling %s%s: %v", specFile, pointer, err)
			}
			sp.schemas[pointer] = s
		}
		return s
	}
}

// specs is this test binary's specs read so far, by file, and the schemas compiled from
// each: a memo of what the files give (a spec that fails to load is not kept), guarded
// by its mutex since jsonschema's compiler is not safe for concurrent use.
var specs struct {
	sync.Mutex
	m map[string]*spec
}

// spec is one parsed spec's compiler and the schemas compiled from it, by pointer.
type spec struct {
	c       *jsonschema.Compiler
	url     string
	schemas map[string]*jsonschema.Schema
}

// loadSpec reads and parses specFile (relative to SpecsDir) and adds it to a new compiler.
func loadSpec(specFile string) (*spec, error) {
	b, err := os.ReadFile(filepath.Join(SpecsDir(), specFile))
	if err != nil {
		return nil, fmt.Errorf("reading spec: %w", err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("parsing spec %s: %w", specFile, err)
	}
	rewriteRecursive(doc, "#", "")
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	url := "file:///specs/" + filepath.ToSlash(specFile)
	if err := c.AddResource(url, doc); err != nil {
		return nil, fmt.Errorf("adding spec: %w", err)
	}
	return &spec{c: c, url: url, schemas: map[string]*jsonschema.Schema{}}, nil
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
