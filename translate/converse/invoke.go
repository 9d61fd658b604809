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
	inner translate.StreamDecoder
	sc    jsonx.Scanner
	buf   []byte
}

// maxChunkBytes bounds one chunk's decoded bytes (the event-stream frame is bounded
// before it: upstream.MaxEventStreamFrame).
const maxChunkBytes = 1 << 20

func (d *invokeStream) Event(typ, data []byte, emit translate.Emit) error {
	if string(typ) != "chunk" {
		return malformed("an event of type "+clip(string(typ), 40)+" in an InvokeModelWithResponseStream answer", data)
	}
	d.sc.Reset(jsonx.View(data))
	var v [1]jsonx.Value
	if _, ok := d.sc.RootMembers([]string{"bytes"}, v[:]); !ok || v[0].Kind != jsonx.String {
		return malformed("a chunk without bytes", data)
	}
	n := base64.StdEncoding.DecodedLen(len(v[0].Str))
	if n > maxChunkBytes {
		return malformed("a chunk over 1 MiB", nil)
	}
	if cap(d.buf) < n {
		d.buf = make([]byte, n)
	}
	n, err := base64.StdEncoding.Decode(d.buf[:n], []byte(v[0].Str))
	if err != nil {
		return malformed("a chunk whose bytes are not base64", nil)
	}
	return d.inner.Event(nil, d.buf[:n], emit)
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
