package spectest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// The spec checks that are not JSON Schema (botocore's service models, Google's discovery
// documents) walk a body decoded by decodeJSON and share these helpers.

// decodeJSON decodes a body, keeping its numbers as json.Number.
func decodeJSON(body []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var v any
	err := dec.Decode(&v)
	return v, err
}

// isKind reports whether v, as decodeJSON leaves it, is a JSON value of kind: object,
// array, string, integer, number or boolean.
func isKind(v any, kind string) bool {
	switch kind {
	case "object":
		_, ok := v.(map[string]any)
		return ok
	case "array":
		_, ok := v.([]any)
		return ok
	case "string":
		_, ok := v.(string)
		return ok
	case "integer":
		n, ok := v.(json.Number)
		_, err := n.Int64()
		return ok && err == nil
	case "number":
		_, ok := v.(json.Number)
		return ok
	case "boolean":
		_, ok := v.(bool)
		return ok
	}
	return false
}

// mismatch is the error of v, at path, which is not the kind its schema wants.
func mismatch(path, kind, schema string, v any) error {
	return fmt.Errorf("%s: want %s (%s), have %.60v", orRoot(path), kind, schema, v)
}

// notInEnum is the error of a string, at path, that is none of enum.
func notInEnum(path, str string, enum []string) error {
	return fmt.Errorf("%s: %q is not one of %s", orRoot(path), str, strings.Join(enum, ", "))
}

func sortedKeys(obj map[string]any) []string {
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// orRoot names path for an error message.
func orRoot(path string) string {
	if path == "" {
		return "the body"
	}
	return strings.TrimPrefix(path, ".")
}
