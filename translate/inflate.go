package translate

import (
	"bytes"
	"compress/flate"
	"encoding/base64"
	"io"
	"strconv"
	"strings"
)

// DefaultMaxInflated is the Allowance of a request parsed without one: the default request
// body limit (server.max_body_bytes).
const DefaultMaxInflated = 20 << 20

// CodeStateTooLarge is the ParamError code of a request whose carried state (carry ids,
// sealed blocks) inflates beyond its Allowance.
const CodeStateTooLarge = "carried_state_too_large"

// Allowance is what one request may still inflate from the compressed state it carries:
// the state of its carry ids (CarryID) and of its sealed blocks (SealBlock). Every byte a
// client parser inflates for the request is counted as it is inflated (a limited reader
// over what is left, never a check after), whether the state is kept or dropped as not
// the gateway's; a request that would go beyond is refused (StateTooLarge). So a small
// request cannot make the gateway inflate, hold or send upstream more than the bound in
// all, however many compressible blobs it holds. An Allowance is one request's, not safe
// for concurrent use; the zero value allows nothing.
type Allowance struct{ left int }

// NewAllowance returns an Allowance of n bytes (n < 1: nothing).
func NewAllowance(n int) Allowance { return Allowance{left: max(n, 0)} }

// Left returns the bytes the request may still inflate.
func (a *Allowance) Left() int { return a.left }

// inflateWithin inflates raw, taking what it produces from a: state the gateway made is
// at most perState bytes. It returns the state; nil when raw is not a whole DEFLATE stream
// or inflates beyond perState (not the gateway's: dropped, its bytes charged all the same),
// and over when it inflates beyond what a has left.
func (a *Allowance) inflateWithin(raw []byte, perState int) (state []byte, over bool) {
	left := a.left
	limit := min(left, perState)
	out, n, err := inflateAtMost(raw, limit)
	a.left -= min(n, limit)
	switch {
	case n > limit && limit == left: // what was left ran out first
		return nil, true
	case n > limit, err != nil:
		return nil, false
	}
	return out, false
}

// inflateAtMost inflates raw through a reader limited to limit+1 bytes: n is what it read
// (limit+1 when raw inflates beyond limit, when out is nil).
func inflateAtMost(raw []byte, limit int) (out []byte, n int, err error) {
	r, _ := flateReaders.Get().(io.ReadCloser)
	if r == nil {
		r = flate.NewReader(bytes.NewReader(raw))
	} else if err := r.(flate.Resetter).Reset(bytes.NewReader(raw), nil); err != nil {
		return nil, 0, err
	}
	defer flateReaders.Put(r)
	var buf bytes.Buffer
	buf.Grow(min(3*len(raw), limit+1))
	m, err := buf.ReadFrom(io.LimitReader(r, int64(limit)+1))
	if err != nil || m > int64(limit) {
		return nil, int(m), err
	}
	return buf.Bytes(), int(m), nil
}

// OpenCarried opens the state the tool call id carries (CarryID) for the request, once:
// compressed state is inflated under a and kept in r.Carried, where SplitID finds it, so
// that encoders (on every retry, fallback and turn) write what was counted and never
// inflate it again. An id seen before is charged its state's size again, since each
// occurrence is written upstream. It reports false when the state inflates beyond what a
// has left: the caller refuses the request (StateTooLarge), naming the id's field. State
// that does not inflate (not the gateway's) is kept as none, as SplitID drops it. An id
// without CarrySep costs one byte search.
func (r *Request) OpenCarried(id string, a *Allowance) bool {
	if strings.IndexByte(id, CarrySep[0]) < 0 {
		return true
	}
	i, kind, enc := carried(id)
	if i < 0 || kind != 'z' {
		return true // raw state: no larger than the id
	}
	if st, seen := r.Carried[id]; seen {
		if len(st) > a.left {
			a.left = 0
			return false
		}
		a.left -= len(st)
		return true
	}
	raw, err := base64.RawURLEncoding.DecodeString(enc)
	if err != nil { // carried checked enc: not reached
		return true
	}
	st, over := a.inflateWithin(raw, maxInflated)
	if over {
		return false
	}
	if len(st) == 0 {
		st = nil
	}
	if r.Carried == nil {
		r.Carried = make(map[string][]byte)
	}
	r.Carried[id] = st
	return true
}

// SplitID is the package's SplitID for an id of this request: compressed state its
// client parser opened (OpenCarried) is taken from r.Carried, not inflated again. An id
// that is not there (one a turn of the tool loop added, made by the gateway from an
// upstream's answer) is split by SplitID.
func (r *Request) SplitID(s string) (id string, state []byte) {
	if r != nil && r.Carried != nil {
		if st, ok := r.Carried[s]; ok {
			return CarriedID(s), st
		}
	}
	return SplitID(s)
}

// StateTooLarge is the error for the field param, whose carried state (a carry id, an
// encrypted_content) would inflate beyond the request's Allowance of limit bytes.
func StateTooLarge(param string, limit int) *ParamError {
	return &ParamError{Param: param, Code: CodeStateTooLarge,
		Message: "the conversation state carried in this request's tool call ids and encrypted reasoning inflates to more than the gateway accepts for one request (" +
			strconv.Itoa(limit) + " bytes); this field goes beyond it: send fewer earlier turns"}
}
