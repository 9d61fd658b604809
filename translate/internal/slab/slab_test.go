package slab

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestSlab_RunsStayPut checks that a returned run keeps its values while later runs grow
// the buffer, and that appending to a run copies it.
func TestSlab_RunsStayPut(t *testing.T) {
	var s Slab[int]
	var runs [][]int
	var want [][]int
	for n := 0; n < 40; n++ {
		var w []int
		for k := 0; k < n%7; k++ {
			s.Push(100*n + k)
			w = append(w, 100*n+k)
		}
		if got := s.Len(); got != len(w) {
			t.Fatalf("run %d: Len = %d, want %d", n, got, len(w))
		}
		runs, want = append(runs, s.Run()), append(want, w)
	}
	for i := range runs {
		if len(runs[i]) > 0 {
			_ = append(runs[i], -1) // must not write into the next run
		}
	}
	if diff := cmp.Diff(want, runs); diff != "" {
		t.Errorf("runs (-want +got):\n%s", diff)
	}
}

// TestSlab_Reuse: a slab given the memory an earlier one filled (Mem) fills it from its
// start, runs included, and allocates only past its capacity.
func TestSlab_Reuse(t *testing.T) {
	var first Slab[int]
	for k := range 20 {
		first.Push(k)
	}
	first.Run()
	mem := first.Mem()
	if len(mem) != 20 {
		t.Fatalf("Mem has %d values, want the 20 pushed", len(mem))
	}
	var s Slab[int]
	s.Reuse(mem)
	if s.Len() != 0 {
		t.Fatalf("a reused slab starts with %d values, want none", s.Len())
	}
	s.Push(7)
	s.Push(8)
	if r := s.Run(); &r[0] != &mem[:1][0] || r[0] != 7 || r[1] != 8 {
		t.Errorf("run %v is not at the start of the reused memory", r)
	}
	if allocs := testing.AllocsPerRun(10, func() {
		s.Reuse(mem)
		for k := range cap(mem) {
			s.Push(k)
		}
	}); allocs != 0 {
		t.Errorf("filling the reused memory to its capacity allocated %v times, want 0", allocs)
	}
}
