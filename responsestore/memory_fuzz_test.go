package responsestore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// FuzzMemory runs a sequence of operations (3 bytes each: operation, key, id; a put's size
// from the next) against a Memory store with the bounds of the first two bytes, and checks
// after each: the bounds hold; a record is only ever its first owner's (while the store
// still remembers the id); and a key loses records to another key's Put only while it
// held more than its even share of a bound (the bound over the keys holding records).
func FuzzMemory(f *testing.F) {
	f.Add([]byte{4, 0, 0, 0, 0, 10, 0, 0, 1, 10, 0, 1, 0, 10, 0, 1, 1, 10, 0, 1, 2, 10, 1, 0, 0})
	f.Add([]byte{0, 2, 0, 0, 0, 200, 0, 0, 1, 200, 0, 1, 2, 255, 0, 1, 3, 255, 2, 0, 1, 0, 1, 1, 0})
	f.Add([]byte{3, 3, 0, 0, 0, 1, 2, 0, 0, 0, 1, 0, 5, 0, 0, 0, 1, 3, 0, 5, 0, 2, 0, 0, 1})
	f.Fuzz(runFuzzMemory)
}

// runFuzzMemory is FuzzMemory's body.
func runFuzzMemory(t *testing.T, data []byte) {
	{
		if len(data) < 2 {
			return
		}
		opts := MemoryOptions{MaxEntries: int(data[0] % 8), MaxBytes: int64(data[1]%4) * 400, TTL: time.Hour}
		now := time.Unix(1_700_000_000, 0)
		opts.Now = func() time.Time { return now }
		m := NewMemory(opts)
		ctx := context.Background()
		owner := map[string]string{} // id -> the key that stored it
		limit := opts.MaxEntries
		if limit <= 0 {
			limit = 100_000
		}
		data = data[2:]
		for len(data) >= 3 {
			op, key, id := data[0]%4, fmt.Sprint("k", data[1]%3), fmt.Sprint("r", data[2]%6)
			hours := time.Duration(data[1] % 2)
			data = data[3:]
			switch op {
			case 0: // put
				size := 0
				if len(data) > 0 {
					size, data = int(data[0]), data[1:]
				}
				before := m.shares()
				holders := len(before)
				if _, ok := before[key]; !ok {
					holders++
				}
				err := m.Put(ctx, id, &Record{Key: key, Response: []byte(strings.Repeat("x", size))})
				first, seen := owner[id]
				remembered := m.goneSeq <= uint64(limit) // no trace forgotten yet
				switch {
				case err == nil && seen && first != key && remembered:
					t.Fatalf("%s took %s's id %s", key, first, id)
				case errors.Is(err, ErrIDTaken) && (!seen || first == key):
					t.Fatalf("%s's put of %s refused: %v", key, id, err)
				case err != nil && !errors.Is(err, ErrIDTaken):
					t.Fatal(err)
				}
				if err == nil {
					owner[id] = key // the first owner, or the id was forgotten
				}
				after := m.shares()
				for k, b := range before {
					a := after[k]
					if k == key || (a.n >= b.n && a.bytes >= b.bytes) {
						continue
					}
					overEntries := opts.MaxEntries > 0 && b.n*holders > opts.MaxEntries
					overBytes := opts.MaxBytes > 0 && b.bytes*int64(holders) > opts.MaxBytes
					if !overEntries && !overBytes {
						t.Fatalf("%s's put evicted %s, which held %+v, within its share of %d keys (bounds %d, %d)", key, k, b, holders, opts.MaxEntries, opts.MaxBytes)
					}
				}
			case 1: // get
				rec, err := m.Get(ctx, key, id)
				if err == nil && rec.Key != key {
					t.Fatalf("%s got %s's record", key, rec.Key)
				}
			case 2:
				_ = m.Delete(ctx, key, id)
			case 3:
				now = now.Add(hours * time.Hour)
			}
			if opts.MaxEntries > 0 && m.Len() > opts.MaxEntries {
				t.Fatalf("%d entries, bound %d", m.Len(), opts.MaxEntries)
			}
			if opts.MaxBytes > 0 && m.used > opts.MaxBytes {
				t.Fatalf("%d bytes, bound %d", m.used, opts.MaxBytes)
			}
		}
	}
}

// share is what one key holds, for the tests.
type share struct {
	n     int
	bytes int64
}

// shares returns what each key holds.
func (m *Memory) shares() map[string]share {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[string]share{}
	var n int
	var used int64
	for k, s := range m.keys {
		out[k] = share{s.ll.Len(), s.bytes}
		n += s.ll.Len()
		used += s.bytes
	}
	if n != m.n || used != m.used {
		panic(fmt.Sprintf("the keys hold %d records, %d bytes; the store counts %d, %d", n, used, m.n, m.used))
	}
	return out
}
