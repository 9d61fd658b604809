package responsestore

import (
	"container/list"
	"context"
	"sync"
	"time"
)

// MemoryOptions bound a Memory store.
type MemoryOptions struct {
	// TTL is how long a record lives after it was stored; zero means forever.
	TTL time.Duration
	// MaxEntries bounds the number of records; zero means no bound.
	MaxEntries int
	// MaxBytes bounds the records' total size (their byte slices plus a small overhead
	// each); zero means no bound. A record larger than MaxBytes is not stored.
	MaxBytes int64
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Memory is an in-process Store bounded by entries and bytes, whose records expire TTL
// after they were stored. Each key has its own least-recently-used list, and the bounds
// are shared fairly: when a Put takes the store over a bound, the record that goes is the
// least recently used of the key holding the most (entries for MaxEntries, bytes for
// MaxBytes; the key that put, on a tie). So one key's records push out another key's only
// while that key holds more than the first; a key holding no more than its even share
// (the bound divided by the keys holding records) is never evicted by another's. Ids that
// left it (evicted, expired or deleted) are remembered with their owner, bounded likewise,
// so that a lookup can say the response expired rather than that it never existed, and
// another key cannot take the id over. Safe for concurrent use.
type Memory struct {
	opts MemoryOptions
	mu   sync.Mutex
	byID map[string]*list.Element
	keys map[string]*keyShare
	n    int
	used int64
	// gone remembers ids that expired, were evicted or deleted, oldest first, bounded;
	// goneList holds them in the order they went, with the seq of their entry in gone
	// (an id stored again and gone again is listed twice, its first listing stale).
	gone     map[string]goneID
	goneList []goneRef
	goneSeq  uint64
}

// goneRef is one listing of goneList.
type goneRef struct {
	id  string
	seq uint64
}

// keyShare is what one key holds.
type keyShare struct {
	ll    *list.List // front: the key's most recently used *entry
	bytes int64
}

// goneID is the trace of an id no longer held.
type goneID struct {
	key     string
	deleted bool // by its owner: not found, rather than expired
	seq     uint64
}

type entry struct {
	id      string
	rec     *Record
	expires time.Time
	size    int64
}

var _ Store = (*Memory)(nil)

// NewMemory returns an empty Memory store.
func NewMemory(opts MemoryOptions) *Memory {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Memory{opts: opts, byID: map[string]*list.Element{}, keys: map[string]*keyShare{}, gone: map[string]goneID{}}
}

// Put stores rec under id (see Store). A record larger than MaxBytes is dropped silently.
func (m *Memory) Put(_ context.Context, id string, rec *Record) error {
	size := int64(rec.size() + len(id))
	if m.opts.MaxBytes > 0 && size > m.opts.MaxBytes {
		return nil
	}
	e := &entry{id: id, rec: rec, size: size}
	if m.opts.TTL > 0 {
		e.expires = m.opts.Now().Add(m.opts.TTL)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if el, ok := m.byID[id]; ok {
		if el.Value.(*entry).rec.Key != rec.Key {
			return ErrIDTaken
		}
		m.remove(el, false)
	} else if g, ok := m.gone[id]; ok && g.key != rec.Key {
		return ErrIDTaken
	}
	delete(m.gone, id)
	k := m.keys[rec.Key]
	if k == nil {
		k = &keyShare{ll: list.New()}
		m.keys[rec.Key] = k
	}
	m.byID[id] = k.ll.PushFront(e)
	k.bytes += size
	m.n++
	m.used += size
	for m.opts.MaxEntries > 0 && m.n > m.opts.MaxEntries {
		m.remove(m.largest(rec.Key, func(s *keyShare) int64 { return int64(s.ll.Len()) }).ll.Back(), true)
	}
	for m.opts.MaxBytes > 0 && m.used > m.opts.MaxBytes {
		m.remove(m.largest(rec.Key, func(s *keyShare) int64 { return s.bytes }).ll.Back(), true)
	}
	return nil
}

// largest returns the share of the key holding the most by measure, that of key on a tie
// (key holds records: it has just put one).
func (m *Memory) largest(key string, measure func(*keyShare) int64) *keyShare {
	best := m.keys[key]
	most := measure(best)
	for _, s := range m.keys {
		if v := measure(s); v > most {
			best, most = s, v
		}
	}
	return best
}

// Get returns the record of id if key owns it.
func (m *Memory) Get(_ context.Context, key, id string) (*Record, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	el, ok := m.byID[id]
	if !ok {
		if g, ok := m.gone[id]; ok && g.key == key && !g.deleted {
			return nil, ErrExpired
		}
		return nil, ErrNotFound
	}
	e := el.Value.(*entry)
	if e.rec.Key != key {
		return nil, ErrNotFound
	}
	if !e.expires.IsZero() && !m.opts.Now().Before(e.expires) {
		m.remove(el, true)
		return nil, ErrExpired
	}
	m.keys[key].ll.MoveToFront(el)
	return e.rec, nil
}

// Delete removes the record of id if key owns it. The id stays the key's.
func (m *Memory) Delete(_ context.Context, key, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	el, ok := m.byID[id]
	if !ok || el.Value.(*entry).rec.Key != key {
		return ErrNotFound
	}
	m.remove(el, false)
	m.forget(id, goneID{key: key, deleted: true})
	return nil
}

// Len returns the number of records held, expired ones not yet dropped included.
func (m *Memory) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.n
}

// remove drops el; lost records the id as expired.
func (m *Memory) remove(el *list.Element, lost bool) {
	e := el.Value.(*entry)
	k := m.keys[e.rec.Key]
	k.ll.Remove(el)
	k.bytes -= e.size
	if k.ll.Len() == 0 {
		delete(m.keys, e.rec.Key)
	}
	delete(m.byID, e.id)
	m.n--
	m.used -= e.size
	if lost {
		m.forget(e.id, goneID{key: e.rec.Key})
	}
}

// forget remembers the owner of an id no longer held, the oldest such ids forgotten past
// the bound (MaxEntries, at most 100000).
func (m *Memory) forget(id string, g goneID) {
	m.goneSeq++
	g.seq = m.goneSeq
	m.gone[id] = g
	m.goneList = append(m.goneList, goneRef{id, g.seq})
	limit := m.opts.MaxEntries
	if limit <= 0 || limit > 100_000 {
		limit = 100_000
	}
	for len(m.goneList) > limit {
		if r := m.goneList[0]; m.gone[r.id].seq == r.seq {
			delete(m.gone, r.id)
		}
		m.goneList = m.goneList[1:]
	}
}
