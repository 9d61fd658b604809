package goldentest

import (
	"fmt"
	"testing"

	"github.com/agate-gateway/agate/translate"
	"github.com/google/go-cmp/cmp"
)

// CheckDecodeInto holds d's DecodeResponseInto to p's DecodeResponse on each body: the
// same events in the same order and the same error, whatever the Event handed in held
// before (it is filled with another answer's leftovers first). Then, for the body
// allocFree, it requires that DecodeResponseInto allocates nothing of its own: the Event
// it writes is the caller's, which is what the interface is for.
func CheckDecodeInto(t *testing.T, p translate.Provider, d translate.ResponseDecoderInto, bodies [][]byte, allocFree []byte) {
	t.Helper()
	for i, body := range bodies {
		var want, got []translate.Event
		werr := p.DecodeResponse(body, func(ev *translate.Event) error { want = append(want, *ev); return nil })
		ev := translate.Event{Kind: translate.EventToolCallStart, ID: "stale", Text: "stale", CallID: "stale", Index: 9,
			Usage: translate.Usage{PromptTokens: 9}, FinishReason: "stale"}
		gerr := d.DecodeResponseInto(body, &ev, func(ev *translate.Event) error { got = append(got, *ev); return nil })
		if fmt.Sprint(werr) != fmt.Sprint(gerr) {
			t.Errorf("body %d: DecodeResponseInto's error %v, DecodeResponse's %v", i, gerr, werr)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("body %d: DecodeResponseInto's events differ from DecodeResponse's (-want +got):\n%s", i, diff)
		}
	}
	var ev translate.Event
	n := 0
	emit := func(*translate.Event) error { n++; return nil }
	allocs := testing.AllocsPerRun(100, func() {
		if err := d.DecodeResponseInto(allocFree, &ev, emit); err != nil {
			t.Fatal(err)
		}
	})
	if n == 0 || allocs != 0 {
		t.Errorf("DecodeResponseInto emitted %d events with %.1f allocations a decode, want some events and 0 allocations", n, allocs)
	}
}
