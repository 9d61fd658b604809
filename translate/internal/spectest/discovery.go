package spectest

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Google publishes its REST APIs as discovery documents: schemas by id, each with a
// type (object, array, string, integer, number, boolean, any), an object's properties
// or additionalProperties (a map), an array's items, a string's enum and format, or a
// $ref to another schema. A body is read as proto3 JSON is: a field by its lowerCamelCase
// name or its original snake_case one, an int64 as a number or a string.

// discoverySchema is one schema (or property) of a discovery document.
type discoverySchema struct {
	Ref                  string                      `json:"$ref"`
	Type                 string                      `json:"type"`
	Format               string                      `json:"format"`
	Properties           map[string]*discoverySchema `json:"properties"`
	AdditionalProperties *discoverySchema            `json:"additionalProperties"`
	Items                *discoverySchema            `json:"items"`
	Enum                 []string                    `json:"enum"`
}

// discoveryDoc is a discovery document's schemas by id.
type discoveryDoc struct {
	schemas map[string]*discoverySchema
}

// VertexGenerateContentRequest checks a body against Vertex AI's
// GoogleCloudAiplatformV1GenerateContentRequest as the aiplatform v1 discovery document
// publishes it (testdata/specs/vertex): every member a body has is a field of its message
// (camelCase or snake_case), every value has the field's JSON type, and an enum's value
// is one of its names (in any case).
func VertexGenerateContentRequest(t testing.TB) func(body []byte) error {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(SpecsDir(), "vertex", "aiplatform-v1-generate-content.json"))
	if err != nil {
		t.Fatalf("reading spec: %v", err)
	}
	var doc struct {
		Schemas map[string]*discoverySchema `json:"schemas"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	d := &discoveryDoc{schemas: doc.Schemas}
	root := &discoverySchema{Ref: "GoogleCloudAiplatformV1GenerateContentRequest"}
	check := func(body []byte) error {
		v, err := decodeJSON(body)
		if err != nil {
			return err
		}
		return d.check(root, v, "")
	}
	for _, bad := range []string{
		`{"contents":[{"role":"user","parts":"nope"}]}`,
		`{"contents":[{"role":"user","parts":[{"txt":"a"}]}]}`,
		`{"contents":[],"generationConfig":{"maxOutputTokens":"many"}}`,
		`{"contents":[],"safetySettings":[{"category":"HARM_CATEGORY_NONSENSE","threshold":"BLOCK_NONE"}]}`,
	} {
		if check([]byte(bad)) == nil {
			t.Fatalf("the Vertex GenerateContentRequest check accepts an invalid body: %s", bad)
		}
	}
	return check
}

// check holds v, at path, to schema s.
func (d *discoveryDoc) check(s *discoverySchema, v any, path string) error {
	name := ""
	for s.Ref != "" {
		name = s.Ref
		next, ok := d.schemas[s.Ref]
		if !ok {
			return fmt.Errorf("%s: the document has no schema %s", orRoot(path), s.Ref)
		}
		s = next
	}
	switch s.Type {
	case "any", "":
		return nil
	case "object":
		if !isKind(v, "object") {
			return mismatch(path, "an object", name, v)
		}
		obj := v.(map[string]any)
		for _, k := range sortedKeys(obj) {
			var field *discoverySchema
			switch {
			case s.Properties != nil:
				field = s.Properties[k]
				if field == nil {
					field = s.Properties[lowerCamel(k)]
				}
				if field == nil {
					return fmt.Errorf("%s: %q is not a field of %s", orRoot(path), k, name)
				}
			case s.AdditionalProperties != nil:
				field = s.AdditionalProperties
			default:
				continue
			}
			if err := d.check(field, obj[k], path+"."+k); err != nil {
				return err
			}
		}
	case "array":
		if !isKind(v, "array") {
			return mismatch(path, "an array", name, v)
		}
		for i, el := range v.([]any) {
			if err := d.check(s.Items, el, fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
	case "string":
		if (s.Format == "int64" || s.Format == "uint64") && isKind(v, "integer") {
			return nil // proto3 JSON takes a 64-bit integer as a number too
		}
		if !isKind(v, "string") {
			return mismatch(path, "a string", name, v)
		}
		// An enum's name in any case: Google's JSON frontends take "low" for LOW (the
		// Gemini API documents thinkingLevel "low"; clients send it so).
		str := v.(string)
		if len(s.Enum) > 0 && !slices.ContainsFunc(s.Enum, func(e string) bool { return strings.EqualFold(e, str) }) {
			return notInEnum(path, str, s.Enum)
		}
	case "integer", "number", "boolean":
		if !isKind(v, s.Type) {
			return mismatch(path, "a JSON "+s.Type, name, v)
		}
	default:
		return fmt.Errorf("%s: %s has type %s, which this check does not know", orRoot(path), name, s.Type)
	}
	return nil
}

// lowerCamel turns a proto field name (snake_case) into its JSON name.
func lowerCamel(s string) string {
	var b strings.Builder
	up := false
	for _, r := range s {
		if r == '_' {
			up = true
			continue
		}
		if up && 'a' <= r && r <= 'z' {
			r -= 'a' - 'A'
		}
		up = false
		b.WriteRune(r)
	}
	return b.String()
}
