package converse

import (
	"encoding/base64"

	"github.com/agate-gateway/agate/internal/jsonx"
	"github.com/agate-gateway/agate/translate"
)

// InvokeStream returns the decoder of an InvokeModelWithResponseStream answer whose
// model's own stream events inner decodes: each "chunk" event's payload,
// {"bytes":"<base64 of the model's event JSON>"}, is decoded and fed to inner as an
// event without a type (Anthropic's decoder reads the type from the JSON). Close is
// inner's. Events of any other type are an upstream error.
func InvokeStream(inner translate.StreamDecoder) translate.StreamDecoder {
	return &invokeStream{inner: inner}
}

// invokeStream unwraps the chunk events of an InvokeModelWithResponseStream answer.
type invokeStream struct {
	inner  translate.StreamDecoder
	chunks ChunkReader
}

// maxChunkBytes bounds one chunk's decoded bytes (the event-stream frame is bounded
// before it: upstream.MaxEventStreamFrame).
const maxChunkBytes = 1 << 20

func (d *invokeStream) Event(typ, data []byte, emit translate.Emit) error {
	ev, err := d.chunks.unwrap(typ, data) // the model's decoder reads the type itself
	if err != nil {
		return err
	}
	return d.inner.Event(nil, ev, emit)
}

// ChunkReader reads the events of an InvokeModelWithResponseStream answer: each "chunk"
// event's payload is {"bytes":"<base64 of the model's own event JSON>"}. It reuses one
// buffer for the decoded bytes and is not safe for concurrent use; its zero value is
// ready.
type ChunkReader struct {
	sc  jsonx.Scanner
	buf []byte
}

// Read returns the model's event in the payload data of an event of type typ, and that
// event's own type (its "type" member, as the Messages API's stream names its events;
// nil when it has none). ev and evType are views of the reader's buffer, valid until the
// next Read; evType is read only. An event of another type than chunk is an upstream
// error; a chunk without bytes, or bytes that are not base64 or over 1 MiB decoded, is
// one unreadable event (translate.ErrMalformedEvent), which a caller may skip.
func (r *ChunkReader) Read(typ, data []byte) (ev, evType []byte, err error) {
	if ev, err = r.unwrap(typ, data); err != nil {
		return nil, nil, err
	}
	r.sc.Reset(jsonx.View(ev))
	var v [1]jsonx.Value
	if _, ok := r.sc.RootMembers([]string{"type"}, v[:]); ok && v[0].Kind == jsonx.String {
		evType = jsonx.Bytes(v[0].Str) // a view of ev, or of the unescaped name: read only
	}
	return ev, evType, nil
}

// unwrap is Read without the event's type.
func (r *ChunkReader) unwrap(typ, data []byte) ([]byte, error) {
	if string(typ) != "chunk" {
		return nil, malformed("an event of type "+clip(string(typ), 40)+" in an InvokeModelWithResponseStream answer", data)
	}
	r.sc.Reset(jsonx.View(data))
	var v [1]jsonx.Value
	if _, ok := r.sc.RootMembers([]string{"bytes"}, v[:]); !ok || v[0].Kind != jsonx.String {
		return nil, translate.MalformedEvent(malformed("a chunk without bytes", data))
	}
	n := base64.StdEncoding.DecodedLen(len(v[0].Str))
	if n > maxChunkBytes {
		return nil, translate.MalformedEvent(malformed("a chunk over 1 MiB", nil))
	}
	if cap(r.buf) < n {
		r.buf = make([]byte, n)
	}
	n, err := base64.StdEncoding.Decode(r.buf[:n], jsonx.Bytes(v[0].Str)) // a view: no copy
	if err != nil {
		return nil, translate.MalformedEvent(malformed("a chunk whose bytes are not base64", nil))
	}
	return r.buf[:n], nil
}

func (d *invokeStream) Close(emit translate.Emit) error { return d.inner.Close(emit) }

// UsageSoFar reports the inner decoder's usage so far, when it keeps one
// (translate.UsageReporter).
func (d *invokeStream) UsageSoFar() (translate.Usage, bool) {
	if u, ok := d.inner.(translate.UsageReporter); ok {
		return u.UsageSoFar()
	}
	return translate.Usage{}, false
}
