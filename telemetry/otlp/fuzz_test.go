package otlp

import (
	"encoding/binary"
	"testing"

	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"
)

// FuzzParseResponse: any body is read without a panic, and whatever the official protos
// decode as an ExportTraceServiceResponse reads the same here.
func FuzzParseResponse(f *testing.F) {
	for _, r := range []*collectortrace.ExportTraceServiceResponse{
		{},
		{PartialSuccess: &collectortrace.ExportTracePartialSuccess{RejectedSpans: 3, ErrorMessage: "spans too old"}},
		{PartialSuccess: &collectortrace.ExportTracePartialSuccess{ErrorMessage: "a warning"}},
	} {
		b, _ := proto.Marshal(r)
		f.Add(b)
	}
	f.Add([]byte{0x0a, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		rejected, message, err := ParseResponse(b)
		var want collectortrace.ExportTraceServiceResponse
		if proto.Unmarshal(b, &want) != nil {
			return // not protobuf to the official decoder; ours may or may not say so
		}
		if err != nil {
			t.Fatalf("ParseResponse(%x): %v; the official decoder reads %v", b, err, &want)
		}
		if rejected != want.GetPartialSuccess().GetRejectedSpans() || message != want.GetPartialSuccess().GetErrorMessage() {
			t.Fatalf("ParseResponse(%x) = %d, %q; want %v", b, rejected, message, &want)
		}
	})
}

// FuzzParseHeaders: any headers variable is read without a panic, and every header it
// accepts is one net/http can send as it is (a token name, no control character).
func FuzzParseHeaders(f *testing.F) {
	for _, s := range []string{"api-key=secret", "a=1, b = x%20y ,", "k=%0d%0aX: 1", "novalue", "=v", "k=%zz", "k=v=w"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		hs, err := parseHeaders(s)
		if err != nil {
			return
		}
		for _, h := range hs {
			if !validHeaderName(h.Name) || !validHeaderValue(h.Value) {
				t.Fatalf("parseHeaders(%q) accepted %q: %q", s, h.Name, h.Value)
			}
		}
	})
}

// FuzzGRPCMessage: any gRPC answer body is read without a panic, and a message it
// returns fits in the frame it came from (or, compressed, in the read bound).
func FuzzGRPCMessage(f *testing.F) {
	frame := func(flag byte, msg []byte) []byte {
		b := make([]byte, 5, 5+len(msg))
		b[0] = flag
		binary.BigEndian.PutUint32(b[1:], uint32(len(msg)))
		return append(b, msg...)
	}
	ok, _ := proto.Marshal(&collectortrace.ExportTraceServiceResponse{
		PartialSuccess: &collectortrace.ExportTracePartialSuccess{RejectedSpans: 1}})
	f.Add(frame(0, ok), "")
	f.Add(frame(1, gzipped(ok)), "gzip")
	f.Add(frame(1, ok), "gzip")
	f.Add([]byte{0, 0, 0, 0, 9}, "")
	f.Fuzz(func(t *testing.T, body []byte, encoding string) {
		msg, err := grpcMessage(body, encoding)
		if err != nil {
			return
		}
		if len(msg) > max(len(body), maxResponse) {
			t.Fatalf("a %d-byte message from a %d-byte body", len(msg), len(body))
		}
	})
}
