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
// carried to the next user, never giving a buffer of up to MaxSpareBody back to the pool;
// a larger one goes back to the pool (up to MaxPooledBody) instead of being carried, and
// one dropped (DropAnswer) or still held is not carried.
func TestBuffer_Keep(t *testing.T) {
	tests := []struct {
		name      string
		grow      int
		drop      bool // DropAnswer instead of Release
		noRelease bool // carried while held
		wantSpare bool
		wantPool  bool // Release gave it to the pool
	}{
		{name: "small", grow: 100, wantSpare: true},
		{name: "at the spare's bound", grow: MaxSpareBody, wantSpare: true},
		{name: "over the spare's bound", grow: MaxSpareBody + 1, wantPool: true},
		{name: "at the pool's bound", grow: MaxPooledBody, wantPool: true},
		{name: "over the pool's bound", grow: MaxPooledBody + 1},
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
			if carried := next.spare != nil && cap(*next.spare) == tt.grow; carried != tt.wantSpare {
				t.Fatalf("carried a spare of cap %d: %v, want %v", tt.grow, carried, tt.wantSpare)
			}
			if !raceEnabled {
				p, ok := pool.Get().(*[]byte)
				switch {
				case tt.wantPool && (!ok || cap(*p) != tt.grow):
					t.Fatalf("Release of a buffer of cap %d: the pool has none of it", tt.grow)
				case !tt.wantPool && ok:
					t.Fatalf("a keeping Buffer gave a buffer (cap %d) back to the pool", cap(*p))
				}
			}
			again := next.Take()
			if tt.wantSpare && cap(again) != tt.grow {
				t.Fatalf("the next user's Take: cap %d, want the spare's %d", cap(again), tt.grow)
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

// TestBuffer_TakeFor: TakeFor lends what Take would when it holds n bytes, else a new
// buffer of capacity n, leaving the smaller one out of the pool (given back, every such
// call would take it and give it back again, and the pool would grow with each).
func TestBuffer_TakeFor(t *testing.T) {
	tests := []struct {
		name    string
		pooled  int // cap of the pool's buffer; 0: the pool is empty
		n       int
		wantCap int
	}{
		{name: "pooled fits", pooled: 4096, n: 1000, wantCap: 4096},
		{name: "pooled exactly", pooled: 4096, n: 4096, wantCap: 4096},
		{name: "pooled too small", pooled: 4096, n: 4097, wantCap: 4097},
		{name: "empty pool", n: 100, wantCap: 100},
		{name: "no size", pooled: 64, n: 0, wantCap: 64},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pool := &sync.Pool{}
			b := Buffer{Pool: pool}
			if tt.pooled > 0 { // as the spare, which Take lends first: sync.Pool drops some under -race
				p := make([]byte, 0, tt.pooled)
				b.spare = &p
			}
			dst := b.TakeFor(tt.n)
			if cap(dst) != tt.wantCap || len(dst) != 0 {
				t.Fatalf("TakeFor(%d): len %d cap %d, want 0 and %d", tt.n, len(dst), cap(dst), tt.wantCap)
			}
			if !raceEnabled {
				if p, ok := pool.Get().(*[]byte); ok {
					t.Fatalf("the pool holds a buffer of cap %d after TakeFor", cap(*p))
				}
			}
			b.Hold(append(dst, "body"...))
			b.Release()
			if !raceEnabled {
				if p, ok := pool.Get().(*[]byte); !ok || cap(*p) != tt.wantCap {
					t.Fatalf("Release gave the pool %v, want the lent buffer (cap %d)", ok, tt.wantCap)
				}
			}
		})
	}
}
