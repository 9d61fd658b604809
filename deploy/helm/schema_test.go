package helm

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// schema is the subset of a CRD's OpenAPI v3 schema that testdata/servicemonitor.schema.yaml
// uses: types, properties (anything else is an unknown field), additionalProperties,
// items, required, pattern and enum.
type schema struct {
	Type                 string             `json:"type"`
	Properties           map[string]*schema `json:"properties"`
	AdditionalProperties *schema            `json:"additionalProperties"`
	Items                *schema            `json:"items"`
	Required             []string           `json:"required"`
	Pattern              string             `json:"pattern"`
	Enum                 []string           `json:"enum"`
}

func loadSchema(t *testing.T, path string) *schema {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var s schema
	if err := yaml.UnmarshalStrict(data, &s); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return &s
}

// validate checks v (decoded JSON) against s and returns every violation, each naming
// its path. An object field that s neither lists nor allows by additionalProperties is
// an unknown field. "metadata" holds no properties in a CRD's schema (the API server
// checks it as ObjectMeta): such an object accepts any fields here.
func (s *schema) validate(path string, v any) []string {
	var errs []string
	switch s.Type {
	case "object":
		obj, ok := v.(map[string]any)
		if !ok {
			return []string{fmt.Sprintf("%s: want an object, have %T", path, v)}
		}
		for _, r := range s.Required {
			if _, ok := obj[r]; !ok {
				errs = append(errs, fmt.Sprintf("%s.%s: required", path, r))
			}
		}
		if s.Properties == nil && s.AdditionalProperties == nil {
			return errs
		}
		for _, k := range keys(obj) {
			sub := s.Properties[k]
			if sub == nil {
				sub = s.AdditionalProperties
			}
			if sub == nil {
				errs = append(errs, fmt.Sprintf("%s.%s: unknown field", path, k))
				continue
			}
			errs = append(errs, sub.validate(path+"."+k, obj[k])...)
		}
	case "array":
		arr, ok := v.([]any)
		if !ok {
			return []string{fmt.Sprintf("%s: want an array, have %T", path, v)}
		}
		for i, item := range arr {
			errs = append(errs, s.Items.validate(fmt.Sprintf("%s[%d]", path, i), item)...)
		}
	case "string":
		str, ok := v.(string)
		if !ok {
			return []string{fmt.Sprintf("%s: want a string, have %T", path, v)}
		}
		if s.Pattern != "" && !regexp.MustCompile(s.Pattern).MatchString(str) {
			errs = append(errs, fmt.Sprintf("%s: %q does not match %s", path, str, s.Pattern))
		}
		if len(s.Enum) > 0 && !slices.Contains(s.Enum, str) {
			errs = append(errs, fmt.Sprintf("%s: %q is not one of %s", path, str, strings.Join(s.Enum, ", ")))
		}
	case "boolean":
		if _, ok := v.(bool); !ok {
			errs = append(errs, fmt.Sprintf("%s: want a boolean, have %T", path, v))
		}
	default:
		errs = append(errs, fmt.Sprintf("%s: the test's schema has type %q, which validate does not know", path, s.Type))
	}
	return errs
}

// TestSchemaValidate pins what validate rejects, so that a pass of the chart's
// ServiceMonitor means something.
func TestSchemaValidate(t *testing.T) {
	s := loadSchema(t, "testdata/servicemonitor.schema.yaml")
	tests := []struct {
		name string
		obj  string
		want string // "" for valid
	}{
		{"valid", `{spec: {selector: {matchLabels: {a: b}}, endpoints: [{port: http, interval: 30s}]}}`, ""},
		{"unknown field", `{spec: {selector: {}, endpoints: [{port: http, intervall: 30s}]}}`, "spec.endpoints[0].intervall: unknown field"},
		{"bad interval", `{spec: {selector: {}, endpoints: [{interval: 30 seconds}]}}`, "spec.endpoints[0].interval: \"30 seconds\" does not match"},
		{"missing selector", `{spec: {endpoints: []}}`, "spec.selector: required"},
		{"bad scheme", `{spec: {selector: {}, endpoints: [{scheme: ftp}]}}`, "is not one of http, https"},
		{"label value type", `{spec: {selector: {matchLabels: {a: 1}}, endpoints: []}}`, "spec.selector.matchLabels.a: want a string"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var v any
			if err := yaml.Unmarshal([]byte(tt.obj), &v); err != nil {
				t.Fatal(err)
			}
			errs := s.validate("", v)
			switch {
			case tt.want == "" && len(errs) > 0:
				t.Errorf("errors %v, want none", errs)
			case tt.want != "" && !slices.ContainsFunc(errs, func(e string) bool { return strings.Contains(e, tt.want) }):
				t.Errorf("errors %v, want one containing %q", errs, tt.want)
			}
		})
	}
}
