package spectest

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
)

// AWS publishes its APIs as Smithy models, which botocore ships converted to its own JSON
// (service-2.json): a map of shapes, each a structure (its members, which are required,
// whether it is a union of them, whether it is a free-form document), a list, a map, or
// a scalar (string with an optional enum, integer, long, float, double, boolean, blob,
// timestamp). A member bound to the URI, a header or the query string is not in the body.

// botocoreShape is one shape of a botocore service model.
type botocoreShape struct {
	Type     string                    `json:"type"`
	Members  map[string]botocoreMember `json:"members"`
	Required []string                  `json:"required"`
	Union    bool                      `json:"union"`
	Document bool                      `json:"document"`
	Member   *botocoreMember           `json:"member"`
	Key      *botocoreMember           `json:"key"`
	Value    *botocoreMember           `json:"value"`
	Enum     []string                  `json:"enum"`
}

// botocoreMember names a member's shape and, when it is not in the body, where it goes.
type botocoreMember struct {
	Shape    string `json:"shape"`
	Location string `json:"location"`
}

// BedrockConverseRequest checks a body against Bedrock's ConverseRequest as AWS's
// bedrock-runtime model publishes it (testdata/specs/bedrock): every member a body has is
// one the shape names, every required one is there, a union has exactly one member set,
// every value has its shape's JSON type, and an enum's value is one of its values.
// ConverseStreamRequest must have the same body members, so that one check serves both.
func BedrockConverseRequest(t testing.TB) func(body []byte) error {
	t.Helper()
	m := loadBotocore(t, "bedrock/bedrock-runtime-converse.json")
	if a, b := bodyMembers(m.shapes["ConverseRequest"]), bodyMembers(m.shapes["ConverseStreamRequest"]); !slices.Equal(a, b) {
		t.Fatalf("ConverseRequest's body members %v differ from ConverseStreamRequest's %v", a, b)
	}
	check := func(body []byte) error { return m.validate("ConverseRequest", body) }
	for _, bad := range []string{
		`{"messages":"nope"}`,
		`{"messages":[{"role":"user","content":[{"text":"a","image":{"format":"png","source":{"bytes":"AA=="}}}]}]}`,
		`{"messages":[{"role":"robot","content":[{"text":"a"}]}]}`,
		`{"messages":[{"role":"user","content":[{"text":"a"}]}],"inferenceConfig":{"max_tokens":1}}`,
		`{"messages":[{"role":"user","content":[{"toolUse":{"name":"f","input":{}}}]}]}`,
	} {
		if check([]byte(bad)) == nil {
			t.Fatalf("the ConverseRequest check accepts an invalid body: %s", bad)
		}
	}
	return check
}

// botocoreModel is a service model's shapes by name.
type botocoreModel struct {
	shapes map[string]*botocoreShape
}

func loadBotocore(t testing.TB, specFile string) *botocoreModel {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(SpecsDir(), specFile))
	if err != nil {
		t.Fatalf("reading spec: %v", err)
	}
	var doc struct {
		Shapes map[string]*botocoreShape `json:"shapes"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatalf("%s: %v", specFile, err)
	}
	return &botocoreModel{shapes: doc.Shapes}
}

// bodyMembers returns the sorted names of a structure's members that are in the body.
func bodyMembers(s *botocoreShape) []string {
	var out []string
	for name, m := range s.Members {
		if m.Location == "" {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

func (m *botocoreModel) validate(shape string, body []byte) error {
	v, err := decodeJSON(body)
	if err != nil {
		return err
	}
	return m.check(shape, v, "")
}

// check holds v, at path, to the named shape.
func (m *botocoreModel) check(name string, v any, path string) error {
	s, ok := m.shapes[name]
	if !ok {
		return fmt.Errorf("%s: the model has no shape %s", path, name)
	}
	switch s.Type {
	case "structure":
		if !isKind(v, "object") {
			return mismatch(path, "an object", name, v)
		}
		obj := v.(map[string]any)
		if s.Document {
			return nil
		}
		set := 0
		for _, k := range sortedKeys(obj) {
			mem, ok := s.Members[k]
			if !ok || mem.Location != "" {
				return fmt.Errorf("%s: %q is not a member of %s (members: %s)", orRoot(path), k, name, strings.Join(bodyMembers(s), ", "))
			}
			if obj[k] != nil {
				set++
			}
			if err := m.check(mem.Shape, obj[k], path+"."+k); err != nil {
				return err
			}
		}
		for _, r := range s.Required {
			if _, ok := obj[r]; !ok && s.Members[r].Location == "" {
				return fmt.Errorf("%s: %s requires %q", orRoot(path), name, r)
			}
		}
		if s.Union && set != 1 {
			return fmt.Errorf("%s: %s is a union: exactly one member, not %d", orRoot(path), name, set)
		}
	case "list":
		if !isKind(v, "array") {
			return mismatch(path, "an array", name, v)
		}
		for i, el := range v.([]any) {
			if err := m.check(s.Member.Shape, el, fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
	case "map":
		if !isKind(v, "object") {
			return mismatch(path, "an object", name, v)
		}
		obj := v.(map[string]any)
		for _, k := range sortedKeys(obj) {
			if err := m.check(s.Value.Shape, obj[k], path+"."+k); err != nil {
				return err
			}
		}
	case "string", "blob": // a blob is its base64
		if !isKind(v, "string") {
			return mismatch(path, "a string", name, v)
		}
		if str := v.(string); len(s.Enum) > 0 && !slices.Contains(s.Enum, str) {
			return notInEnum(path, str, s.Enum)
		}
	case "integer", "long":
		if !isKind(v, "integer") {
			return mismatch(path, "an integer", name, v)
		}
	case "float", "double":
		if !isKind(v, "number") {
			return mismatch(path, "a number", name, v)
		}
	case "boolean":
		if !isKind(v, "boolean") {
			return mismatch(path, "a boolean", name, v)
		}
	case "timestamp":
		if !isKind(v, "number") && !isKind(v, "string") {
			return mismatch(path, "a timestamp", name, v)
		}
	default:
		return fmt.Errorf("%s: shape %s has type %s, which this check does not know", orRoot(path), name, s.Type)
	}
	return nil
}
