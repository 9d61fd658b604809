// Package responsestore keeps the responses of POST /v1/responses that asked to be stored
// (store: true), for previous_response_id continuation and GET/DELETE /v1/responses/{id}.
// Every record belongs to the key that created it: a lookup under another key finds
// nothing, and a Put never replaces another key's record. The Store interface is what the
// proxy needs; Memory is the in-process implementation, and a shared one (Redis, for
// several gateway replicas) implements the same three methods.
package responsestore

import (
	"context"
	"errors"
)

// Record is one stored response. Its byte slices are owned by the store once Put: callers
// must not modify them afterwards, and must not modify what Get returns.
type Record struct {
	// Key is the name of the client key that created the response.
	Key string
	// Response is the Response object as the client received it (JSON).
	Response []byte
	// Input is the JSON array of the input items the response was generated from, the
	// items of earlier responses of the chain included (instructions are not).
	Input []byte
	// Output is the JSON array of the response's output items.
	Output []byte
	// Upstream, when not empty, names the responses backend that generated and stored the
	// response itself: a continuation must go to the same backend, which holds the chain.
	Upstream string
	// Overlong marks the record of a response whose conversation was over the gateway's
	// bound on a stored record: only Key and Upstream are kept, so that its id stays
	// its owner's and a continuation can be refused with the reason (or, Upstream set,
	// still be forwarded to the backend that holds the chain).
	Overlong bool
}

func (r *Record) size() int {
	return len(r.Key) + len(r.Response) + len(r.Input) + len(r.Output) + len(r.Upstream) + 64
}

// ErrNotFound is returned for an id that was never stored, was deleted, or belongs to
// another key.
var ErrNotFound = errors.New("response not found")

// ErrExpired is returned for an id that was stored but has expired or was evicted.
var ErrExpired = errors.New("response expired")

// ErrIDTaken is returned by Put for an id that belongs to another key: its record, or the
// trace the store keeps of it after it expired. Nothing is stored.
var ErrIDTaken = errors.New("response id belongs to another key")

// Store keeps responses. Implementations are safe for concurrent use.
type Store interface {
	// Put stores rec under id, replacing an earlier record of that id only when it
	// belongs to the same key (rec.Key); an id that is, or was, another key's is
	// ErrIDTaken and nothing changes. A record the store cannot hold (larger than its
	// bound) is dropped without an error: the response was served, it is only not kept.
	Put(ctx context.Context, id string, rec *Record) error
	// Get returns the record of id if it belongs to key; ErrNotFound or ErrExpired
	// otherwise.
	Get(ctx context.Context, key, id string) (*Record, error)
	// Delete removes the record of id if it belongs to key; ErrNotFound otherwise.
	Delete(ctx context.Context, key, id string) error
}
