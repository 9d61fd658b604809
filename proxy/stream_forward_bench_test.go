package proxy

import (
	"testing"

	"github.com/agate-gateway/agate/translate/responsesin"
)

// BenchmarkResponsesForwardEvent is a Responses passthrough's work on one upstream text
// delta (responsesForward.event with the continuation's follow on, as a stream that may
// be continued runs it): the bench mock's delta, in OpenAI's layout, forwarded to the
// client's buffer. The event's SSE framing and the client write are not in it.
func BenchmarkResponsesForwardEvent(b *testing.B) {
	for _, bc := range []struct{ name, data string }{
		{"flat", `{"type":"response.output_text.delta","sequence_number":5,"item_id":"msg_0360bd45725b0a010068f966a601b081958e95c4085b086532","output_index":0,"content_index":0,"delta":" bicycle","logprobs":[],"obfuscation":"2WtQmJ0dTisGL"}`},
		{"escaped", `{"type":"response.output_text.delta","sequence_number":5,"item_id":"msg_0360bd45725b0a010068f966a601b081958e95c4085b086532","output_index":0,"content_index":0,"delta":"\n\n","logprobs":[],"obfuscation":"2WtQmJ0dTisGL"}`},
	} {
		b.Run(bc.name, func(b *testing.B) {
			call := &modelCall{}
			fw := (*responsesForward)(&responsesRun{c: &requestRun{call: call}})
			fw.fw.Model = []byte(`"m"`)
			call.startResume(nil, false)
			call.resume.on = true
			call.resume.fwd = followed{sum: fnvOffset}
			fw.fw.Begin()
			fw.fol.begin(false)
			data := []byte(bc.data)
			var m meter
			dst := make([]byte, 0, 4096)
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				// Each event numbered after the last, as an upstream numbers them.
				fw.fw.Seq = responsesin.Sequencer{}
				out, how, err := fw.event(dst[:0], nil, data, &m)
				if err != nil || how&passWrite == 0 || len(out) == 0 {
					b.Fatalf("event: %v, %d, %q", err, how, out)
				}
			}
		})
	}
}
