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
		size    int // put: the response's size in bytes
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
