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
