package archtest

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/agate-gateway/agate"

// root is the module's root, relative to this package's directory (where go test runs).
const root = "../.."

// graph maps a package (its path inside the module, "." for the root) to the module's
// packages it imports.
type graph map[string]map[string]bool

// TestImportGraph: the import graph ARCHITECTURE.md draws (its "imports" block: one line
// "pkg -> dep dep..." or more per package, paths inside the module) is the one the code
// has: every package of the module and its imports of other packages of the module,
// test files left out, as `go list ./...` reports them. A difference fails the test,
// listed arrow by arrow.
//
// While issue #46's branches are being merged the picture is the target graph and may be
// ahead of the code; AGATE_ARCH_PENDING=1 skips the test then. Nothing sets it.
func TestImportGraph(t *testing.T) {
	if os.Getenv("AGATE_ARCH_PENDING") != "" {
		t.Skip("AGATE_ARCH_PENDING is set: ARCHITECTURE.md's import graph is the target of a merge in progress")
	}
	doc, err := os.ReadFile(filepath.Join(root, "ARCHITECTURE.md"))
	if err != nil {
		t.Fatal(err)
	}
	drawn, err := parseDrawn(string(doc))
	if err != nil {
		t.Fatalf("ARCHITECTURE.md: %v", err)
	}
	actual := listImports(t)
	if diff := diffGraphs(drawn, actual); diff != "" {
		t.Errorf("ARCHITECTURE.md's import graph differs from the code's (- drawn only, + code only):\n%s", diff)
	}
}

// parseDrawn reads the block of the document fenced as ```imports.
func parseDrawn(doc string) (graph, error) {
	g := graph{}
	in, found := false, false
	sc := bufio.NewScanner(strings.NewReader(doc))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		switch {
		case !in && line == "```imports":
			in, found = true, true
		case in && line == "```":
			in = false
		case in && line != "":
			pkg, deps, ok := strings.Cut(line, "->")
			pkg = strings.TrimSpace(pkg)
			if !ok || pkg == "" {
				return nil, fmt.Errorf("line %d: %q is not \"pkg -> deps\"", n, line)
			}
			if g[pkg] == nil {
				g[pkg] = map[string]bool{}
			}
			for _, d := range strings.Fields(deps) {
				g[pkg][d] = true
			}
		}
	}
	if !found || in {
		return nil, fmt.Errorf("no closed ```imports block")
	}
	return g, nil
}

// listImports runs go list over the module.
func listImports(t *testing.T) graph {
	t.Helper()
	cmd := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Imports " "}}`, "./...")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			t.Fatalf("go list: %v\n%s", err, ee.Stderr)
		}
		t.Fatalf("go list: %v", err)
	}
	g := graph{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		pkg, ok := inModule(f[0])
		if !ok {
			continue
		}
		g[pkg] = map[string]bool{}
		for _, imp := range f[1:] {
			if dep, ok := inModule(imp); ok {
				g[pkg][dep] = true
			}
		}
	}
	return g
}

// inModule returns an import path's path inside the module.
func inModule(path string) (string, bool) {
	if path == module {
		return ".", true
	}
	rel, ok := strings.CutPrefix(path, module+"/")
	return rel, ok
}

// diffGraphs lists, package by package in order, the packages and arrows one graph has
// and the other lacks; "" when they are equal.
func diffGraphs(drawn, actual graph) string {
	var pkgs []string
	for p := range drawn {
		pkgs = append(pkgs, p)
	}
	for p := range actual {
		if drawn[p] == nil {
			pkgs = append(pkgs, p)
		}
	}
	slices.Sort(pkgs)
	var b strings.Builder
	for _, p := range pkgs {
		d, a := drawn[p], actual[p]
		switch {
		case a == nil:
			fmt.Fprintf(&b, "- %s (no such package)\n", p)
			continue
		case d == nil:
			fmt.Fprintf(&b, "+ %s -> %s (not drawn)\n", p, strings.Join(sorted(a), " "))
			continue
		}
		for _, dep := range sorted(d) {
			if !a[dep] {
				fmt.Fprintf(&b, "- %s -> %s\n", p, dep)
			}
		}
		for _, dep := range sorted(a) {
			if !d[dep] {
				fmt.Fprintf(&b, "+ %s -> %s\n", p, dep)
			}
		}
	}
	return b.String()
}

func sorted(set map[string]bool) []string {
	var s []string
	for k := range set {
		s = append(s, k)
	}
	slices.Sort(s)
	return s
}

// TestParseDrawn: the block's lines, a package on several lines, a package without
// imports, and blocks that cannot be read.
func TestParseDrawn(t *testing.T) {
	tests := []struct {
		name, doc string
		want      graph
		wantErr   bool
	}{
		{"lines", "text\n```imports\na -> b c\na -> d\nb ->\n\nc -> b\n```\nmore\n```\nx -> y\n```\n",
			graph{"a": {"b": true, "c": true, "d": true}, "b": {}, "c": {"b": true}}, false},
		{"no block", "```\na -> b\n```\n", nil, true},
		{"unclosed", "```imports\na -> b\n", nil, true},
		{"no arrow", "```imports\na b\n```\n", nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseDrawn(tt.doc)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err %v, want error %v", err, tt.wantErr)
			}
			if !tt.wantErr && diffGraphs(tt.want, got) != "" {
				t.Errorf("got %v, want %v:\n%s", got, tt.want, diffGraphs(tt.want, got))
			}
		})
	}
}

// TestDiffGraphs: each kind of difference is listed.
func TestDiffGraphs(t *testing.T) {
	drawn := graph{"a": {"b": true, "c": true}, "gone": {}}
	actual := graph{"a": {"b": true, "d": true}, "new": {"a": true}}
	want := "- a -> c\n+ a -> d\n- gone (no such package)\n+ new -> a (not drawn)\n"
	if got := diffGraphs(drawn, actual); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if got := diffGraphs(drawn, drawn); got != "" {
		t.Errorf("a graph differs from itself:\n%s", got)
	}
}
