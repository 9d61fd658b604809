package otlp

import (
	"math"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/protobuf/encoding/protowire"
)

// Field numbers of the OTLP trace protos (opentelemetry-proto v1: collector/trace/v1,
// trace/v1, common/v1, resource/v1), as go.opentelemetry.io/proto/otlp generates them.
const (
	requestResourceSpans = 1 // ExportTraceServiceRequest.resource_spans

	resourceSpansResource   = 1
	resourceSpansScopeSpans = 2
	resourceSpansSchemaURL  = 3

	resourceAttributes = 1 // Resource.attributes

	scopeSpansScope     = 1
	scopeSpansSpans     = 2
	scopeSpansSchemaURL = 3

	scopeName       = 1 // InstrumentationScope
	scopeVersion    = 2
	scopeAttributes = 3

	spanTraceID       = 1
	spanSpanID        = 2
	spanTraceState    = 3
	spanParentSpanID  = 4
	spanName          = 5
	spanKind          = 6
	spanStart         = 7 // fixed64
	spanEnd           = 8 // fixed64
	spanAttributes    = 9
	spanDroppedAttrs  = 10
	spanEvents        = 11
	spanDroppedEvents = 12
	spanLinks         = 13
	spanDroppedLinks  = 14
	spanStatus        = 15
	spanFlags         = 16 // fixed32

	eventTime         = 1 // fixed64
	eventName         = 2
	eventAttributes   = 3
	eventDroppedAttrs = 4

	linkTraceID      = 1
	linkSpanID       = 2
	linkTraceState   = 3
	linkAttributes   = 4
	linkDroppedAttrs = 5
	linkFlags        = 6 // fixed32

	statusMessage = 2
	statusCode    = 3

	keyValueKey   = 1
	keyValueValue = 2

	anyString = 1 // AnyValue's oneof
	anyBool   = 2
	anyInt    = 3
	anyDouble = 4 // fixed64
	anyArray  = 5
	anyKVList = 6
	anyBytes  = 7

	listValues = 1 // ArrayValue.values and KeyValueList.values
)

// Span flags (trace/v1 SpanFlags): the low byte is the W3C trace flags; the two bits say
// that whether the parent is remote is known, and that it is.
const (
	flagHasIsRemote = 0x100
	flagIsRemote    = 0x200
)

// AppendRequest appends spans as one OTLP ExportTraceServiceRequest in protobuf: spans
// grouped by resource, then by instrumentation scope, in the order each group first
// appears. A nil span is skipped.
func AppendRequest(dst []byte, spans []sdktrace.ReadOnlySpan) []byte {
	e := encoder{b: dst}
	type scopeKey struct {
		resource attribute.Distinct
		scope    instrumentation.Scope
	}
	var resources []attribute.Distinct
	groups := map[attribute.Distinct][]scopeKey{}
	members := map[scopeKey][]sdktrace.ReadOnlySpan{}
	for _, s := range spans {
		if s == nil {
			continue
		}
		k := scopeKey{s.Resource().Equivalent(), s.InstrumentationScope()}
		if _, seen := groups[k.resource]; !seen {
			resources = append(resources, k.resource)
		}
		if _, seen := members[k]; !seen {
			groups[k.resource] = append(groups[k.resource], k)
		}
		members[k] = append(members[k], s)
	}
	for _, r := range resources {
		rs := e.open(requestResourceSpans)
		first := members[groups[r][0]][0]
		if res := first.Resource(); res != nil {
			m := e.open(resourceSpansResource)
			for it := res.Iter(); it.Next(); {
				e.keyValue(resourceAttributes, it.Attribute())
			}
			e.close(m)
		}
		for _, k := range groups[r] {
			e.scopeSpans(k.scope, members[k])
		}
		if res := first.Resource(); res != nil {
			e.string(resourceSpansSchemaURL, res.SchemaURL())
		}
		e.close(rs)
	}
	return e.b
}

// encoder appends protobuf fields to b. Proto3 scalars at their zero value are left out,
// as proto.Marshal leaves them out; message fields and oneof members are always written.
type encoder struct{ b []byte }

// open starts a length-delimited field and returns the mark close needs.
func (e *encoder) open(n protowire.Number) int {
	e.b = protowire.AppendTag(e.b, n, protowire.BytesType)
	e.b = append(e.b, 0) // the length, one byte until close knows better
	return len(e.b)
}

// close ends the field open started, writing its length.
func (e *encoder) close(mark int) {
	n := len(e.b) - mark
	size := protowire.SizeVarint(uint64(n))
	if size > 1 {
		e.b = append(e.b, make([]byte, size-1)...)
		copy(e.b[mark+size-1:], e.b[mark:mark+n])
	}
	protowire.AppendVarint(e.b[:mark-1], uint64(n))
}

func (e *encoder) string(n protowire.Number, s string) {
	if s != "" {
		e.b = protowire.AppendTag(e.b, n, protowire.BytesType)
		e.b = protowire.AppendString(e.b, s)
	}
}

func (e *encoder) bytes(n protowire.Number, b []byte) {
	e.b = protowire.AppendTag(e.b, n, protowire.BytesType)
	e.b = protowire.AppendBytes(e.b, b)
}

func (e *encoder) varint(n protowire.Number, v uint64) {
	if v != 0 {
		e.b = protowire.AppendTag(e.b, n, protowire.VarintType)
		e.b = protowire.AppendVarint(e.b, v)
	}
}

func (e *encoder) fixed64(n protowire.Number, v uint64) {
	if v != 0 {
		e.b = protowire.AppendTag(e.b, n, protowire.Fixed64Type)
		e.b = protowire.AppendFixed64(e.b, v)
	}
}

func (e *encoder) fixed32(n protowire.Number, v uint32) {
	if v != 0 {
		e.b = protowire.AppendTag(e.b, n, protowire.Fixed32Type)
		e.b = protowire.AppendFixed32(e.b, v)
	}
}

// count writes a dropped-items count, clamped to the uint32 the protos hold.
func (e *encoder) count(n protowire.Number, v int) {
	e.varint(n, uint64(min(max(v, 0), math.MaxUint32)))
}

// unixNano writes a timestamp; times before 1970 are written as 0.
func (e *encoder) unixNano(n protowire.Number, t int64) { e.fixed64(n, uint64(max(t, 0))) }

func (e *encoder) scopeSpans(scope instrumentation.Scope, spans []sdktrace.ReadOnlySpan) {
	ss := e.open(resourceSpansScopeSpans)
	if scope != (instrumentation.Scope{}) {
		m := e.open(scopeSpansScope)
		e.string(scopeName, scope.Name)
		e.string(scopeVersion, scope.Version)
		for it := scope.Attributes.Iter(); it.Next(); {
			e.keyValue(scopeAttributes, it.Attribute())
		}
		e.close(m)
	}
	for _, s := range spans {
		e.span(s)
	}
	e.string(scopeSpansSchemaURL, scope.SchemaURL)
	e.close(ss)
}

func (e *encoder) span(s sdktrace.ReadOnlySpan) {
	m := e.open(scopeSpansSpans)
	sc := s.SpanContext()
	tid, sid := sc.TraceID(), sc.SpanID()
	e.bytes(spanTraceID, tid[:])
	e.bytes(spanSpanID, sid[:])
	e.string(spanTraceState, sc.TraceState().String())
	parent := s.Parent()
	if psid := parent.SpanID(); psid.IsValid() {
		e.bytes(spanParentSpanID, psid[:])
	}
	e.string(spanName, s.Name())
	e.varint(spanKind, uint64(kind(s.SpanKind())))
	e.unixNano(spanStart, s.StartTime().UnixNano())
	e.unixNano(spanEnd, s.EndTime().UnixNano())
	for _, kv := range s.Attributes() {
		e.keyValue(spanAttributes, kv)
	}
	e.count(spanDroppedAttrs, s.DroppedAttributes())
	for _, ev := range s.Events() {
		em := e.open(spanEvents)
		e.unixNano(eventTime, ev.Time.UnixNano())
		e.string(eventName, ev.Name)
		for _, kv := range ev.Attributes {
			e.keyValue(eventAttributes, kv)
		}
		e.count(eventDroppedAttrs, ev.DroppedAttributeCount)
		e.close(em)
	}
	e.count(spanDroppedEvents, s.DroppedEvents())
	for _, l := range s.Links() {
		lm := e.open(spanLinks)
		ltid, lsid := l.SpanContext.TraceID(), l.SpanContext.SpanID()
		e.bytes(linkTraceID, ltid[:])
		e.bytes(linkSpanID, lsid[:])
		e.string(linkTraceState, l.SpanContext.TraceState().String())
		for _, kv := range l.Attributes {
			e.keyValue(linkAttributes, kv)
		}
		e.count(linkDroppedAttrs, l.DroppedAttributeCount)
		e.fixed32(linkFlags, flags(l.SpanContext.TraceFlags(), l.SpanContext.IsRemote()))
		e.close(lm)
	}
	e.count(spanDroppedLinks, s.DroppedLinks())
	st := e.open(spanStatus)
	status := s.Status()
	e.string(statusMessage, status.Description)
	e.varint(statusCode, uint64(statusCodeOf(status.Code)))
	e.close(st)
	e.fixed32(spanFlags, flags(sc.TraceFlags(), parent.IsRemote()))
	e.close(m)
}

// flags is a span's or link's flags field: the W3C trace flags, and whether the parent
// (for a link, the linked span) is remote.
func flags(tf trace.TraceFlags, remote bool) uint32 {
	f := uint32(tf) | flagHasIsRemote
	if remote {
		f |= flagIsRemote
	}
	return f
}

// kind is the trace/v1 Span.SpanKind of k.
func kind(k trace.SpanKind) int {
	switch k {
	case trace.SpanKindInternal:
		return 1
	case trace.SpanKindServer:
		return 2
	case trace.SpanKindClient:
		return 3
	case trace.SpanKindProducer:
		return 4
	case trace.SpanKindConsumer:
		return 5
	}
	return 0 // SPAN_KIND_UNSPECIFIED
}

// statusCodeOf is the trace/v1 Status.StatusCode of c.
func statusCodeOf(c codes.Code) int {
	switch c {
	case codes.Ok:
		return 1
	case codes.Error:
		return 2
	}
	return 0 // STATUS_CODE_UNSET
}

func (e *encoder) keyValue(n protowire.Number, kv attribute.KeyValue) {
	m := e.open(n)
	e.string(keyValueKey, string(kv.Key))
	e.value(keyValueValue, kv.Value)
	e.close(m)
}

// value writes v as an AnyValue message in field n. An EMPTY value is an AnyValue with
// no member set.
func (e *encoder) value(n protowire.Number, v attribute.Value) {
	m := e.open(n)
	switch v.Type() {
	case attribute.BOOL:
		e.anyBool(v.AsBool())
	case attribute.INT64:
		e.anyInt(v.AsInt64())
	case attribute.FLOAT64:
		e.anyDouble(v.AsFloat64())
	case attribute.STRING:
		e.anyString(v.AsString())
	case attribute.BYTESLICE:
		e.bytes(anyBytes, v.AsByteSlice())
	case attribute.BOOLSLICE:
		array(e, v.AsBoolSlice(), e.anyBool)
	case attribute.INT64SLICE:
		array(e, v.AsInt64Slice(), e.anyInt)
	case attribute.FLOAT64SLICE:
		array(e, v.AsFloat64Slice(), e.anyDouble)
	case attribute.STRINGSLICE:
		array(e, v.AsStringSlice(), e.anyString)
	case attribute.SLICE:
		a := e.open(anyArray)
		for _, x := range v.AsSlice() {
			e.value(listValues, x)
		}
		e.close(a)
	case attribute.MAP:
		l := e.open(anyKVList)
		for _, kv := range v.AsMap() {
			e.keyValue(listValues, kv)
		}
		e.close(l)
	case attribute.EMPTY:
	default:
		e.anyString("INVALID") // a type this encoder does not know, as the SDK's exporters write it
	}
	e.close(m)
}

// array writes xs as an ArrayValue in AnyValue's array member, each element an AnyValue
// whose member write writes.
func array[T any](e *encoder, xs []T, write func(T)) {
	a := e.open(anyArray)
	for _, x := range xs {
		m := e.open(listValues)
		write(x)
		e.close(m)
	}
	e.close(a)
}

func (e *encoder) anyBool(x bool) {
	e.b = protowire.AppendTag(e.b, anyBool, protowire.VarintType)
	e.b = protowire.AppendVarint(e.b, protowire.EncodeBool(x))
}

func (e *encoder) anyInt(x int64) {
	e.b = protowire.AppendTag(e.b, anyInt, protowire.VarintType)
	e.b = protowire.AppendVarint(e.b, uint64(x))
}

func (e *encoder) anyDouble(x float64) {
	e.b = protowire.AppendTag(e.b, anyDouble, protowire.Fixed64Type)
	e.b = protowire.AppendFixed64(e.b, math.Float64bits(x))
}

func (e *encoder) anyString(x string) {
	e.b = protowire.AppendTag(e.b, anyString, protowire.BytesType)
	e.b = protowire.AppendString(e.b, x)
}
