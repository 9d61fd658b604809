package tools

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
)

// appendCanonicalJSON appends the canonical form of the JSON document src to dst and returns
// the extended buffer: the document decoded by encoding/json (numbers kept as written with
// UseNumber, so 1 and 1.0 stay distinct; for duplicate keys the last member wins; invalid
// UTF-8 and lone surrogates become U+FFFD) and encoded again, which sorts object members
// by key and drops insignificant whitespace. Two documents have the same canonical form if
// and only if encoding/json decodes them to equal values. An invalid document is an error
// and dst is returned unchanged.
func appendCanonicalJSON(dst, src []byte) ([]byte, error) {
	d := json.NewDecoder(bytes.NewReader(src))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return dst, err
	}
	if _, err := d.Token(); err != io.EOF {
		return dst, errors.New("invalid JSON: data after the top-level value")
	}
	out, err := json.Marshal(v)
	if err != nil {
		return dst, err
	}
	return append(dst, out...), nil
}
