package main

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestTrimSpec(t *testing.T) {
	const doc = `{"openapi":"3.1.0","info":{"title":"t","license":{"name":"MIT"}},"paths":{"/x":{}},
	"components":{"schemas":{
		"Root":{"properties":{"a":{"$ref":"#/components/schemas/A"},"n":{"maximum":9223372036854775807}}},
		"A":{"oneOf":[{"$ref":"#/components/schemas/B/properties/x"}],"discriminator":{"mapping":{"c":"#/components/schemas/C"}}},
		"B":{"properties":{"x":{"type":"string"}}},
		"C":{"$recursiveAnchor":true,"items":{"$recursiveRef":"#"}},
		"a/b":{"$ref":"#/components/schemas/Root"},
		"Unused":{"$ref":"#/components/schemas/Root"}},
	"responses":{"R":{"$ref":"#/components/schemas/a~1b"}}}}`
	tests := []struct {
		name    string
		roots   []string
		want    map[string][]string // section -> kept names
		wantErr string
	}{
		{name: "transitive refs, sub-pointers and discriminator mappings", roots: []string{"#/components/schemas/Root"},
			want: map[string][]string{"schemas": {"A", "B", "C", "Root"}}},
		{name: "escaped names and other sections", roots: []string{"#/components/responses/R"},
			want: map[string][]string{"responses": {"R"}, "schemas": {"A", "B", "C", "Root", "a/b"}}},
		{name: "root that does not resolve", roots: []string{"#/components/schemas/Nope"}, wantErr: "does not resolve"},
		{name: "root outside components", roots: []string{"#/paths/~1x"}, wantErr: "not inside"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, n, err := trimSpec([]byte(doc), tt.roots)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got struct {
				OpenAPI    string                                `json:"openapi"`
				Info       map[string]any                        `json:"info"`
				Paths      any                                   `json:"paths"`
				Components map[string]map[string]json.RawMessage `json:"components"`
			}
			if err := json.Unmarshal(b, &got); err != nil {
				t.Fatal(err)
			}
			kept := map[string][]string{}
			total := 0
			for section, defs := range got.Components {
				for name := range defs {
					kept[section] = append(kept[section], name)
					total++
				}
				slices.Sort(kept[section])
			}
			if diff := cmp.Diff(tt.want, kept); diff != "" {
				t.Errorf("kept definitions (-want +got):\n%s", diff)
			}
			if n != total {
				t.Errorf("reported %d definitions, wrote %d", n, total)
			}
			if got.OpenAPI != "3.1.0" || got.Info["title"] != "t" || got.Paths != nil {
				t.Errorf("document members: openapi %q, info %v, paths %v; want openapi and info kept, paths dropped", got.OpenAPI, got.Info, got.Paths)
			}
			if !strings.Contains(string(b), "9223372036854775807") {
				t.Error("a large integer was not kept as written")
			}
		})
	}
}
