package upstream

import (
	"sync"
	"testing"
)

// TestBuffer_Release: a buffer goes back to the pool once released, unless it grew over
// MaxPooledBody; a Buffer without a pool lends nothing and keeps nothing.
func TestBuffer_Release(t *testing.T) {
	tests := []struct {
		name     string
		pooled   bool // the Buffer has a pool
		grow     int  // bytes appended to what Take returned
		wantBack bool // the pool holds a buffer after Release
	}{
		{name: "small", pooled: true, grow: 100, wantBack: true},
		{name: "at the bound", pooled: true, grow: MaxPooledBody, wantBack: true},
		{name: "over the bound", pooled: true, grow: MaxPooledBody + 1, wantBack: false},
		{name: "no pool", pooled: false, grow: 100, wantBack: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b Buffer
			if tt.pooled {
				b.Pool = &sync.Pool{}
			}
			dst := b.Take()
			if len(dst) != 0 {
				t.Fatalf("Take returned %d bytes, want none", len(dst))
			}
			p := make([]byte, tt.grow)
			b.Hold(append(dst, p...)[:tt.grow:tt.grow])
			if len(b.Bytes()) != tt.grow {
				t.Fatalf("Bytes holds %d bytes, want %d", len(b.Bytes()), tt.grow)
			}
			b.Release()
			if b.Bytes() != nil {
				t.Error("Release left the buffer held")
			}
			if !tt.pooled {
				return
			}
			got, back := b.Pool.Get().(*[]byte)
			if raceEnabled && !back && tt.wantBack {
				t.Skip("the race detector's sync.Pool dropped the buffer")
			}
			if back != tt.wantBack {
				t.Fatalf("buffer back in the pool: %v, want %v", back, tt.wantBack)
			}
			if back && (len(*got) != 0 || cap(*got) != tt.grow) {
				t.Errorf("pooled buffer len %d cap %d, want 0 and %d", len(*got), cap(*got), tt.grow)
			}
			if back && !raceEnabled {
				b.Pool.Put(got)
				if again := b.Take(); cap(again) != tt.grow {
					t.Errorf("Take after Release: cap %d, want the pooled %d", cap(again), tt.grow)
				}
			}
		})
	}
}

// TestBuffer_Keep: a Buffer that keeps takes from its pool once and then its own spare,
// carried to the next user, never giving a buffer back to the pool; a buffer over
// MaxPooledBody, one dropped (DropAnswer) or one still held is not carried.
func TestBuffer_Keep(t *testing.T) {
	tests := []struct {
		name      string
		grow      int
		drop      bool // DropAnswer instead of Release
		noRelease bool // carried while held
		wantSpare bool
	}{
		{name: "small", grow: 100, wantSpare: true},
		{name: "at the bound", grow: MaxPooledBody, wantSpare: true},
		{name: "over the bound", grow: MaxPooledBody + 1},
		{name: "dropped", grow: 100, drop: true},
		{name: "held", grow: 100, noRelease: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pool := &sync.Pool{}
			first := make([]byte, 0, 64)
			pool.Put(&first)
			b := Buffer{Pool: pool, Keep: true}
			dst := b.Take()
			b.Hold(append(dst, make([]byte, tt.grow)...)[:tt.grow:tt.grow])
			switch {
			case tt.drop:
				b.DropAnswer(&Exchange{})
			case !tt.noRelease:
				b.Release()
			}
			next := b.Carry()
			next.Pool, next.Keep = pool, true
			if !raceEnabled {
				if p, ok := pool.Get().(*[]byte); ok {
					t.Fatalf("a keeping Buffer gave a buffer (cap %d) back to the pool", cap(*p))
				}
			}
			again := next.Take()
			if got := cap(again) == tt.grow && tt.grow > 0; got != tt.wantSpare {
				t.Fatalf("the next user's Take: cap %d (the spare %v), want the spare %v", cap(again), got, tt.wantSpare)
			}
			if len(again) != 0 {
				t.Fatalf("the next user's Take returned %d bytes", len(again))
			}
			if tt.noRelease && cap(again) == tt.grow {
				t.Fatal("a held buffer was carried")
			}
		})
	}
}
