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

// Memory is an in-process Store: a least-recently-used cache bounded by entries and bytes,
// whose records expire TTL after they were stored. Ids that left it (evicted or expired)
// are remembered, bounded likewise, so that a lookup can say the response expired rather
// than that it never existed. Safe for concurrent use.
type Memory struct {
	opts MemoryOptions
	mu   sync.Mutex
	ll   *list.List // front: most recently used *entry
	byID map[string]*list.Element
	used int64
	// gone remembers ids that expired or were evicted, oldest first, bounded.
	gone     map[string]string // id -> key
	goneList []string
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
	return &Memory{opts: opts, ll: list.New(), byID: map[string]*list.Element{}, gone: map[string]string{}}
}

// Put stores rec under id. A record larger than MaxBytes is dropped silently: the response
// was served, it is only not kept.
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
		m.remove(el, false)
	}
	delete(m.gone, id)
	m.byID[id] = m.ll.PushFront(e)
	m.used += size
	for (m.opts.MaxEntries > 0 && m.ll.Len() > m.opts.MaxEntries) || (m.opts.MaxBytes > 0 && m.used > m.opts.MaxBytes) {
		m.remove(m.ll.Back(), true)
	}
	return nil
}

// Get returns the record of id if key owns it.
func (m *Memory) Get(_ context.Context, key, id string) (*Record, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	el, ok := m.byID[id]
	if !ok {
		if k, ok := m.gone[id]; ok && k == key {
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
	m.ll.MoveToFront(el)
	return e.rec, nil
}

// Delete removes the record of id if key owns it.
func (m *Memory) Delete(_ context.Context, key, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	el, ok := m.byID[id]
	if !ok || el.Value.(*entry).rec.Key != key {
		return ErrNotFound
	}
	m.remove(el, false)
	return nil
}

// Len returns the number of records held, expired ones not yet dropped included.
func (m *Memory) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.ll.Len()
}

// remove drops el; lost records the id as expired.
func (m *Memory) remove(el *list.Element, lost bool) {
	e := el.Value.(*entry)
	m.ll.Remove(el)
	delete(m.byID, e.id)
	m.used -= e.size
	if !lost {
		return
	}
	m.gone[e.id] = e.rec.Key
	m.goneList = append(m.goneList, e.id)
	limit := m.opts.MaxEntries
	if limit <= 0 || limit > 100_000 {
		limit = 100_000
	}
	for len(m.goneList) > limit {
		delete(m.gone, m.goneList[0])
		m.goneList = m.goneList[1:]
	}
}
