package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestGeneratedUpToDate: every members_gen.go of the client dialects is what membergen
// writes from its members.table now (run go generate in the package after editing either).
func TestGeneratedUpToDate(t *testing.T) {
	tables, err := filepath.Glob("../../*/members.table")
	if err != nil || len(tables) == 0 {
		t.Fatalf("no members.table found: %v", err)
	}
	for _, table := range tables {
		dir := filepath.Dir(table)
		src, err := os.ReadFile(table)
		if err != nil {
			t.Fatal(err)
		}
		objs, err := parse(string(src))
		if err != nil {
			t.Fatalf("%s: %v", table, err)
		}
		want, err := generate(filepath.Base(dir), "members.table", objs)
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join(dir, "members_gen.go"))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s/members_gen.go is not what membergen writes from members.table: run go generate there", dir)
		}
	}
}

func TestParseRefuses(t *testing.T) {
	tests := []struct{ name, table, want string }{
		{"no members", "object a x *v:", "want"},
		{"object twice", "object a x *v: b\nobject a y *v: c", "new object"},
		{"try of an unknown object", "try a first: b", "declared object"},
		{"try of an unknown member", "object a x *v: b\ntry a first: c", "not a member"},
		{"a name too long to compare in two words", "object a x *v: reasoning_content\ntry a first: reasoning_content", "too long"},
		{"unknown line", "objects a x *v: b", "unknown line"},
		{"straight of an unknown object", "straight a: b", "declared object"},
		{"straight without an object", "straight: b", "declared object"},
		{"straight twice", "object a x *v: bb cc\nstraight a: bb\nstraight a: cc", "without a straight line"},
		{"a member twice in a straight line", "object a x *v: bb cc\nstraight a: bb cc|bb", "twice"},
		{"an unknown member in a straight line", "object a x *v: bb cc\nstraight a: bb dd", "not a member"},
		{"a straight member too long to compare", "object a x *v: reasoning_content\nstraight a: reasoning_content", "too long"},

		{"an empty read", "object a x *v: b=", "want a read"},
		{"a read without values", "object a x -: b=value", "want a read"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := parse(tt.table); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("parse = %v, want an error with %q", err, tt.want)
			}
		})
	}
}

func TestGenerateRefusesAnObjectOfOtherValues(t *testing.T) {
	objs, err := parse("object a x *v: b=c\nobject c y *w: d")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := generate("p", "t", objs); err == nil || !strings.Contains(err.Error(), "must read into *v") {
		t.Errorf("generate = %v, want an error naming the values", err)
	}
}
