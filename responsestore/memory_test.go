package responsestore

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// TestMemory runs each case's operations in order against a fresh store and checks every
// result.
func TestMemory(t *testing.T) {
	type op struct {
		do      string // put, get, delete, advance
		key, id string
		size    int // put: the response's size in bytes; get: the size wanted, when not 0
		d       time.Duration
		wantErr error
	}
	tests := []struct {
		name string
		opts MemoryOptions
		ops  []op
	}{
		{
			name: "stored response is found by its key only",
			ops: []op{
				{do: "put", key: "alice", id: "resp_1", size: 10},
				{do: "get", key: "alice", id: "resp_1"},
				{do: "get", key: "bob", id: "resp_1", wantErr: ErrNotFound},
				{do: "get", key: "alice", id: "resp_2", wantErr: ErrNotFound},
			},
		},
		{
			name: "delete by another key fails, by the owner succeeds",
			ops: []op{
				{do: "put", key: "alice", id: "resp_1", size: 10},
				{do: "delete", key: "bob", id: "resp_1", wantErr: ErrNotFound},
				{do: "delete", key: "alice", id: "resp_1"},
				{do: "get", key: "alice", id: "resp_1", wantErr: ErrNotFound},
				{do: "delete", key: "alice", id: "resp_1", wantErr: ErrNotFound},
			},
		},
		{
			name: "ttl expires, and the owner is told so",
			opts: MemoryOptions{TTL: time.Hour},
			ops: []op{
				{do: "put", key: "alice", id: "resp_1", size: 10},
				{do: "advance", d: 59 * time.Minute},
				{do: "get", key: "alice", id: "resp_1"},
				{do: "advance", d: time.Minute},
				{do: "get", key: "alice", id: "resp_1", wantErr: ErrExpired},
				{do: "get", key: "bob", id: "resp_1", wantErr: ErrNotFound},
			},
		},
		{
			name: "max entries evicts the least recently used",
			opts: MemoryOptions{MaxEntries: 2},
			ops: []op{
				{do: "put", key: "a", id: "1", size: 1},
				{do: "put", key: "a", id: "2", size: 1},
				{do: "get", key: "a", id: "1"},
				{do: "put", key: "a", id: "3", size: 1},
				{do: "get", key: "a", id: "2", wantErr: ErrExpired},
				{do: "get", key: "a", id: "1"},
				{do: "get", key: "a", id: "3"},
			},
		},
		{
			name: "max bytes evicts, and a record over the bound is not kept",
			opts: MemoryOptions{MaxBytes: 300},
			ops: []op{
				{do: "put", key: "a", id: "1", size: 100},
				{do: "put", key: "a", id: "2", size: 100},
				{do: "get", key: "a", id: "1", wantErr: ErrExpired},
				{do: "get", key: "a", id: "2"},
				{do: "put", key: "a", id: "big", size: 1000},
				{do: "get", key: "a", id: "big", wantErr: ErrNotFound},
				{do: "get", key: "a", id: "2"},
			},
		},
		{
			name: "a key over its share loses its own records, never another key's",
			opts: MemoryOptions{MaxEntries: 4},
			ops: []op{
				{do: "put", key: "alice", id: "a1", size: 1},
				{do: "put", key: "alice", id: "a2", size: 1},
				{do: "put", key: "bob", id: "b1", size: 1},
				{do: "put", key: "bob", id: "b2", size: 1},
				// Bob now holds 3 of 4: his own least recently used goes.
				{do: "put", key: "bob", id: "b3", size: 1},
				{do: "get", key: "bob", id: "b1", wantErr: ErrExpired},
				{do: "put", key: "bob", id: "b4", size: 1},
				{do: "put", key: "bob", id: "b5", size: 1},
				{do: "get", key: "alice", id: "a1"},
				{do: "get", key: "alice", id: "a2"},
				{do: "get", key: "bob", id: "b5"},
				{do: "get", key: "bob", id: "b3", wantErr: ErrExpired},
			},
		},
		{
			name: "the key holding the most gives way to a newcomer",
			opts: MemoryOptions{MaxEntries: 4},
			ops: []op{
				{do: "put", key: "alice", id: "a1", size: 1},
				{do: "put", key: "alice", id: "a2", size: 1},
				{do: "put", key: "alice", id: "a3", size: 1},
				{do: "put", key: "alice", id: "a4", size: 1},
				{do: "get", key: "alice", id: "a1"}, // a2 is now alice's least recently used
				{do: "put", key: "bob", id: "b1", size: 1},
				{do: "get", key: "alice", id: "a2", wantErr: ErrExpired},
				{do: "put", key: "bob", id: "b2", size: 1},
				{do: "get", key: "alice", id: "a3", wantErr: ErrExpired},
				// Two each: bob's next record costs bob.
				{do: "put", key: "bob", id: "b3", size: 1},
				{do: "get", key: "bob", id: "b1", wantErr: ErrExpired},
				{do: "get", key: "alice", id: "a1"},
				{do: "get", key: "alice", id: "a4"},
			},
		},
		{
			name: "bytes are shared the same way",
			opts: MemoryOptions{MaxBytes: 1000},
			ops: []op{
				{do: "put", key: "alice", id: "a1", size: 200},
				{do: "put", key: "alice", id: "a2", size: 200},
				{do: "put", key: "bob", id: "b1", size: 300},
				{do: "put", key: "bob", id: "b2", size: 300},
				{do: "get", key: "bob", id: "b1", wantErr: ErrExpired},
				{do: "get", key: "alice", id: "a1"},
				{do: "get", key: "alice", id: "a2"},
				{do: "get", key: "bob", id: "b2"},
			},
		},
		{
			name: "an id is never taken from its owner, held, expired or deleted",
			opts: MemoryOptions{TTL: time.Hour},
			ops: []op{
				{do: "put", key: "alice", id: "1", size: 10},
				{do: "put", key: "bob", id: "1", size: 20, wantErr: ErrIDTaken},
				{do: "get", key: "alice", id: "1", size: 10},
				{do: "get", key: "bob", id: "1", wantErr: ErrNotFound},
				{do: "put", key: "alice", id: "1", size: 30}, // the owner replaces her own
				{do: "get", key: "alice", id: "1", size: 30},
				{do: "advance", d: time.Hour},
				{do: "get", key: "alice", id: "1", wantErr: ErrExpired},
				{do: "put", key: "bob", id: "1", size: 20, wantErr: ErrIDTaken},
				{do: "get", key: "alice", id: "1", wantErr: ErrExpired},
				{do: "put", key: "alice", id: "2", size: 10},
				{do: "delete", key: "alice", id: "2"},
				{do: "put", key: "bob", id: "2", size: 20, wantErr: ErrIDTaken},
				{do: "get", key: "alice", id: "2", wantErr: ErrNotFound},
				{do: "put", key: "alice", id: "2", size: 40},
				{do: "get", key: "alice", id: "2", size: 40},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			now := time.Unix(1_700_000_000, 0)
			opts := tt.opts
			opts.Now = func() time.Time { return now }
			m := NewMemory(opts)
			ctx := context.Background()
			for i, o := range tt.ops {
				var err error
				switch o.do {
				case "put":
					err = m.Put(ctx, o.id, &Record{Key: o.key, Response: []byte(strings.Repeat("x", o.size))})
				case "get":
					var rec *Record
					rec, err = m.Get(ctx, o.key, o.id)
					if err == nil && rec.Key != o.key {
						t.Fatalf("op %d: got the record of key %q", i, rec.Key)
					}
					if err == nil && o.size > 0 && len(rec.Response) != o.size {
						t.Fatalf("op %d: got a record of %d bytes, want the one of %d", i, len(rec.Response), o.size)
					}
				case "delete":
					err = m.Delete(ctx, o.key, o.id)
				case "advance":
					now = now.Add(o.d)
				}
				if !errors.Is(err, o.wantErr) || (err != nil) != (o.wantErr != nil) {
					t.Fatalf("op %d (%s %s): error %v, want %v", i, o.do, o.id, err, o.wantErr)
				}
			}
		})
	}
}
