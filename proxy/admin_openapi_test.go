package proxy

import (
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.yaml.in/yaml/v3"
)

// TestAdminAPI_OpenAPIMatchesRoutes: docs/admin-openapi.yaml describes exactly the
// routes the admin API serves (adminRoutes), method by method.
func TestAdminAPI_OpenAPIMatchesRoutes(t *testing.T) {
	t.Parallel() // nothing shared, no clock or environment of the process (#54)
	data, err := os.ReadFile("../docs/admin-openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Paths map[string]map[string]any `yaml:"paths"`
	}
	if err := yaml.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	var spec []string
	for path, ops := range doc.Paths {
		for op := range ops {
			if op == "parameters" {
				continue
			}
			spec = append(spec, strings.ToUpper(op)+" "+path)
		}
	}
	var served []string
	for _, r := range adminRoutes {
		served = append(served, r.method+" "+r.pattern)
	}
	sort.Strings(spec)
	sort.Strings(served)
	if diff := cmp.Diff(served, spec); diff != "" {
		t.Errorf("docs/admin-openapi.yaml vs adminRoutes (-served +described):\n%s", diff)
	}
}
