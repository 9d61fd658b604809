package archtest

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// goProgram is a fenced Go block of the documentation that is a whole program.
var goProgram = regexp.MustCompile("(?s)```go\n(package main\n.*?)```")

// TestDocs_GoProgramsCompile: every fenced Go block of README.md and docs/*.md that is a
// whole program (it starts with "package main") compiles against the module's
// dependencies, as a reader who copies it into main.go would build it. Fragments are
// left alone.
func TestDocs_GoProgramsCompile(t *testing.T) {
	pages, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	pages = append(pages, filepath.Join(root, "README.md"))
	n := 0
	for _, page := range pages {
		doc, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		for i, m := range goProgram.FindAllStringSubmatch(string(doc), -1) {
			n++
			name := filepath.Base(page) + "#" + string(rune('0'+i))
			t.Run(name, func(t *testing.T) {
				// Inside the module, so that its go.mod resolves the program's imports.
				dir, err := os.MkdirTemp(root, ".snippet-")
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { os.RemoveAll(dir) })
				if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(m[1]), 0o600); err != nil {
					t.Fatal(err)
				}
				// Vetted with the test run's own instrumentation, so that go vet reads the
				// packages that run already compiled: under go test -race ./..., a plain
				// go vet compiled the standard library and the program's dependencies once
				// more, without -race, on a cold build cache (#54).
				args := []string{"vet"}
				if raceBuild {
					args = append(args, "-race")
				}
				cmd := exec.Command("go", append(args, "./"+filepath.Base(dir))...)
				cmd.Dir = root
				if out, err := cmd.CombinedOutput(); err != nil {
					t.Errorf("the Go program of %s does not build:\n%s\n%s", page, strings.TrimSpace(string(out)), m[1])
				}
			})
		}
	}
	if n == 0 {
		t.Fatal("no Go program in the documentation: the README's promise of one is broken")
	}
}
