// Package sse splits a text/event-stream into events, as the WHATWG HTML specification
// defines the format: lines end in LF, CRLF or CR; "data" lines of one event are joined
// with LF; a blank line dispatches the event; comments and unknown fields are ignored.
package sse

// Parser is an incremental event-stream parser. Feed it bytes as they arrive, split
// anywhere. It is not safe for concurrent use; the zero value is ready.
type Parser struct {
	buf        []byte // unconsumed bytes (an incomplete line)
	typ        []byte
	data       []byte
	hasData    bool
	skipLF     bool // the last byte seen was CR, so a leading LF ends nothing
	bomChecked bool
}

// Handler receives one event: its type (empty when no event field was given) and its
// data. Both slices are valid only during the call.
type Handler func(typ, data []byte) error

// Feed parses p, calling fn for each complete event. An error from fn stops parsing and
// is returned; the parser must not be used after that.
func (ps *Parser) Feed(p []byte, fn Handler) error {
	if len(ps.buf) == 0 && ps.bomChecked {
		rest, err := ps.lines(p, fn)
		ps.buf = append(ps.buf[:0], rest...)
		return err
	}
	ps.buf = append(ps.buf, p...)
	if !ps.bomChecked {
		if len(ps.buf) < len(bom) && string(ps.buf) == bom[:len(ps.buf)] {
			return nil // maybe a BOM still arriving
		}
		ps.bomChecked = true
		if len(ps.buf) >= len(bom) && string(ps.buf[:len(bom)]) == bom {
			ps.buf = ps.buf[len(bom):]
		}
	}
	rest, err := ps.lines(ps.buf, fn)
	n := copy(ps.buf, rest) // rest is a suffix of buf: copy moves it to the front
	ps.buf = ps.buf[:n]
	return err
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
	for i := start; i < len(p); i++ {
		c := p[i]
		if c != '\n' && c != '\r' {
			continue
		}
		if err := ps.line(p[start:i], fn); err != nil {
			return nil, err
		}
		if c == '\r' {
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

func (ps *Parser) line(l []byte, fn Handler) error {
	if len(l) == 0 {
		return ps.dispatch(fn)
	}
	if l[0] == ':' {
		return nil
	}
	name, value := l, l[len(l):]
	for i, c := range l {
		if c == ':' {
			name, value = l[:i], l[i+1:]
			if len(value) > 0 && value[0] == ' ' {
				value = value[1:]
			}
			break
		}
	}
	switch string(name) {
	case "data":
		if ps.hasData {
			ps.data = append(ps.data, '\n')
		}
		ps.data = append(ps.data, value...)
		ps.hasData = true
	case "event":
		ps.typ = append(ps.typ[:0], value...)
	}
	return nil
}

func (ps *Parser) dispatch(fn Handler) error {
	if !ps.hasData {
		ps.typ = ps.typ[:0]
		return nil
	}
	err := fn(ps.typ, ps.data)
	ps.typ, ps.data, ps.hasData = ps.typ[:0], ps.data[:0], false
	return err
}

// Pending reports whether bytes of an unfinished event are buffered. At the end of a
// stream that means the upstream stopped mid-event.
func (ps *Parser) Pending() bool {
	return ps.hasData || len(ps.buf) > 0
}
