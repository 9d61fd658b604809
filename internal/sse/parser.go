// Package sse splits a text/event-stream into events, as the WHATWG HTML specification
// defines the format: lines end in LF, CRLF or CR; "data" lines of one event are joined
// with LF; a blank line dispatches the event; comments and unknown fields are ignored.
// The proxy reads upstream streams with it (and the tests read the gateway's own); it is
// transport framing, not translation, and imports nothing of the module.
package sse

import (
	"bytes"
	"errors"
)

// DefaultMaxEventBytes is the event size bound of a Parser whose MaxEventBytes is zero.
const DefaultMaxEventBytes = 8 << 20

// ErrEventTooLarge is returned by Feed when an event grows past the parser's bound.
var ErrEventTooLarge = errors.New("sse: event exceeds the size bound")

// Parser is an incremental event-stream parser. Feed it bytes as they arrive, split
// anywhere; each byte is searched at most twice (for LF, then for CR before it), however a
// line is split. It is not safe for concurrent use; the zero value is ready.
type Parser struct {
	// MaxEventBytes bounds one event as received, in bytes: the lines up to the blank
	// line that ends it (comments and field names included, line ends not). Zero means
	// DefaultMaxEventBytes. Set it before the first Feed.
	MaxEventBytes int

	buf []byte // unconsumed bytes: an incomplete line, holding no line end
	// typ and data are the current event's type and data. Each is either a view of the
	// bytes being fed (lent: the first data line, the event line, of an event whose lines
	// came in one Feed) or the parser's own copy in typBuf or dataBuf; Feed copies a
	// view before it returns.
	typ, data       []byte
	typBuf, dataBuf []byte
	typLent         bool
	dataLent        bool
	hasData         bool
	size            int  // bytes of the complete lines of the current event
	skipLF          bool // the last byte seen was CR, so a leading LF ends nothing
	bomChecked      bool
}

// Handler receives one event: its type (empty when no event field was given) and its
// data. Both slices are valid only during the call.
type Handler func(typ, data []byte) error

// Feed parses p, calling fn for each complete event. An error from fn stops parsing and
// is returned, as is ErrEventTooLarge when an event grows past MaxEventBytes;
// the parser must not be used after an error.
func (ps *Parser) Feed(p []byte, fn Handler) error {
	if !ps.bomChecked {
		ps.buf = append(ps.buf, p...)
		if len(ps.buf) < len(bom) && string(ps.buf) == bom[:len(ps.buf)] {
			return nil // maybe a BOM still arriving
		}
		ps.bomChecked = true
		p = ps.buf
		if len(p) >= len(bom) && string(p[:len(bom)]) == bom {
			p = p[len(bom):]
		}
		ps.buf = nil // p keeps the bytes; the remainder is copied to a new buffer below
	} else if len(ps.buf) > 0 {
		// The buffered bytes hold no line end: only p needs scanning for one.
		i := lineEnd(p)
		if i < 0 {
			ps.buf = append(ps.buf, p...)
			return ps.checkLine()
		}
		ps.buf = append(ps.buf, p[:i]...)
		if err := ps.checkLine(); err != nil {
			return err
		}
		err := ps.line(ps.buf, fn, false)
		ps.buf = ps.buf[:0]
		if err != nil {
			return err
		}
		if p[i] == '\r' {
			if i+1 == len(p) {
				ps.skipLF = true
			} else if p[i+1] == '\n' {
				i++
			}
		}
		p = p[i+1:]
	}
	rest, err := ps.lines(p, fn)
	if err != nil {
		return err
	}
	ps.keep()
	ps.buf = append(ps.buf[:0], rest...)
	return ps.checkLine()
}

// keep copies the current event's type and data into the parser's own memory if they
// are views of the bytes being fed, which the caller may reuse once Feed returns.
func (ps *Parser) keep() {
	if ps.typLent {
		ps.typBuf = append(ps.typBuf[:0], ps.typ...)
		ps.typ, ps.typLent = ps.typBuf, false
	}
	if ps.dataLent {
		ps.dataBuf = append(ps.dataBuf[:0], ps.data...)
		ps.data, ps.dataLent = ps.dataBuf, false
	}
}

// lineEnd returns the index of the first CR or LF in p, or -1. Streams end their lines
// in LF, so it finds the first LF and then looks for a CR only before it (two vectorized
// searches instead of a test per byte).
func lineEnd(p []byte) int {
	n := bytes.IndexByte(p, '\n')
	if n < 0 {
		n = len(p)
	}
	if r := bytes.IndexByte(p[:n], '\r'); r >= 0 {
		return r
	}
	if n == len(p) {
		return -1
	}
	return n
}

func (ps *Parser) max() int {
	if ps.MaxEventBytes > 0 {
		return ps.MaxEventBytes
	}
	return DefaultMaxEventBytes
}

// checkLine bounds the event with its buffered incomplete line.
func (ps *Parser) checkLine() error {
	if ps.size+len(ps.buf) > ps.max() {
		return ErrEventTooLarge
	}
	return nil
}

const bom = "\xEF\xBB\xBF"

// lines consumes the complete lines of p and returns the incomplete remainder.
func (ps *Parser) lines(p []byte, fn Handler) ([]byte, error) {
	start := 0
	if ps.skipLF && len(p) > 0 {
		ps.skipLF = false
		if p[0] == '\n' {
			start = 1
		}
	}
	if bytes.IndexByte(p[start:], '\r') < 0 {
		// Every line ends in LF (how providers write their streams): one search a line.
		for {
			nl := bytes.IndexByte(p[start:], '\n')
			if nl < 0 {
				return p[start:], nil
			}
			if err := ps.line(p[start:start+nl], fn, true); err != nil {
				return nil, err
			}
			start += nl + 1
		}
	}
	// nl is the next LF at or after start once searched for (len(p) when there is none),
	// kept across lines that end in CR, so that each byte is searched a bounded number
	// of times whatever the line ends.
	nl := -1
	for start < len(p) {
		if nl < start {
			if nl = bytes.IndexByte(p[start:], '\n'); nl < 0 {
				nl = len(p)
			} else {
				nl += start
			}
		}
		i := nl
		if r := bytes.IndexByte(p[start:nl], '\r'); r >= 0 {
			i = start + r
		}
		if i == len(p) {
			break
		}
		if err := ps.line(p[start:i], fn, true); err != nil {
			return nil, err
		}
		if p[i] == '\r' {
			if i+1 == len(p) {
				ps.skipLF = true
			} else if p[i+1] == '\n' {
				i++
			}
		}
		start = i + 1
	}
	return p[start:], nil
}

// line takes one complete line, without its end. lent means l is a view of the bytes
// being fed (which stay put until Feed returns), not of the parser's own buffer: the
// first data line and the event line are then kept as views, not copied.
func (ps *Parser) line(l []byte, fn Handler, lent bool) error {
	if len(l) == 0 {
		ps.size = 0
		return ps.dispatch(fn)
	}
	if ps.size += len(l); ps.size > ps.max() {
		return ErrEventTooLarge
	}
	switch { // the two fields read, straight to their handling: no search for the colon
	case len(l) >= 5 && string(l[:5]) == "data:":
		ps.dataLine(afterColon(l[5:]), lent)
		return nil
	case len(l) >= 6 && string(l[:6]) == "event:":
		ps.eventLine(afterColon(l[6:]), lent)
		return nil
	case l[0] == ':':
		return nil // a comment
	}
	name, value := l, l[len(l):]
	if colon := bytes.IndexByte(l, ':'); colon >= 0 {
		name, value = l[:colon], afterColon(l[colon+1:])
	}
	switch string(name) { // a field without a colon: "data" and "event" with no value
	case "data":
		ps.dataLine(value, lent)
	case "event":
		ps.eventLine(value, lent)
	}
	return nil
}

// afterColon is a field's value: what follows its colon, less one leading space.
func afterColon(v []byte) []byte {
	if len(v) > 0 && v[0] == ' ' {
		return v[1:]
	}
	return v
}

// dataLine takes a data field's value; lent as for line.
func (ps *Parser) dataLine(value []byte, lent bool) {
	switch {
	case !ps.hasData && lent:
		ps.data, ps.dataLent = value, true
	case !ps.hasData:
		ps.dataBuf = append(ps.dataBuf[:0], value...)
		ps.data = ps.dataBuf
	default: // a further line: joined in the parser's own memory
		if ps.dataLent {
			ps.dataBuf = append(ps.dataBuf[:0], ps.data...)
			ps.dataLent = false
		} else {
			ps.dataBuf = ps.data
		}
		ps.dataBuf = append(append(ps.dataBuf, '\n'), value...)
		ps.data = ps.dataBuf
	}
	ps.hasData = true
}

// eventLine takes an event field's value; lent as for line.
func (ps *Parser) eventLine(value []byte, lent bool) {
	if lent {
		ps.typ, ps.typLent = value, true
	} else {
		ps.typBuf = append(ps.typBuf[:0], value...)
		ps.typ, ps.typLent = ps.typBuf, false
	}
}

func (ps *Parser) dispatch(fn Handler) error {
	var err error
	if ps.hasData {
		err = fn(ps.typ, ps.data)
	}
	ps.typ, ps.data, ps.hasData = ps.typBuf[:0], ps.dataBuf[:0], false
	ps.typLent, ps.dataLent = false, false
	return err
}

// Pending reports whether bytes of an unfinished event are buffered. At the end of a
// stream that means the upstream stopped mid-event.
func (ps *Parser) Pending() bool {
	return ps.hasData || len(ps.buf) > 0
}
