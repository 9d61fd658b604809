// Package slab hands the client parsers the short slices a request holds many of (a
// message's content parts, its tool calls) from a few shared allocations instead of one
// per message. It imports nothing.
package slab

// Slab collects values one run at a time in a shared buffer: Push appends to the current
// run and Run ends it, returning it with its capacity capped, so appending to a returned
// run copies it rather than overwriting the next. The zero value is empty; a Slab is not
// safe for concurrent use.
type Slab[T any] struct {
	buf   []T
	start int // where the current run begins in buf
}

// Reuse empties s and makes it fill buf's memory (from its start, up to its capacity)
// before it allocates: for a caller that keeps the memory of an earlier request whose
// runs are no longer used.
func (s *Slab[T]) Reuse(buf []T) {
	s.buf, s.start = buf[:0], 0
}

// Mem returns the buffer s fills now, up to its last value: the memory to give Reuse
// later (earlier buffers, filled before s moved to a larger one, are left to the GC).
func (s *Slab[T]) Mem() []T { return s.buf }

// Push appends v to the current run. When the buffer is full the current run moves to a
// new, larger one; the runs already returned stay where they are.
func (s *Slab[T]) Push(v T) {
	if len(s.buf) == cap(s.buf) {
		run := s.buf[s.start:]
		b := make([]T, len(run), max(2*cap(s.buf), 8, 2*len(run)))
		copy(b, run)
		s.buf, s.start = b, 0
	}
	s.buf = append(s.buf, v)
}

// Run ends the current run and returns it, nil if it is empty.
func (s *Slab[T]) Run() []T {
	if s.start == len(s.buf) {
		return nil
	}
	r := s.buf[s.start:len(s.buf):len(s.buf)]
	s.start = len(s.buf)
	return r
}

// Len returns the length of the current run.
func (s *Slab[T]) Len() int { return len(s.buf) - s.start }

// Last returns the last value of the current run, nil if the run is empty.
func (s *Slab[T]) Last() *T {
	if s.Len() == 0 {
		return nil
	}
	return &s.buf[len(s.buf)-1]
}
