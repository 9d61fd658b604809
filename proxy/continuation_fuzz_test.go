package proxy

import (
	"bytes"
	"encoding/json"
	"os"
	"testing"

	"github.com/agate-gateway/agate/internal/jsonx"
	"github.com/agate-gateway/agate/translate/anthropic"
	"github.com/agate-gateway/agate/translate/responsesin"
)

// The fuzz targets of the passthrough continuations: a recorded stream (testdata/fixtures,
// SOURCES.md) cut after some events, then a continuation's stream (seeded with the same
// recording, mutated by the fuzzer), through the relay's follow as the forwarder's event
// drives it. Whatever the second stream holds, nothing panics and what the client gets
// stays one stream: every event's data JSON, and (Messages) the content blocks that carry
// an index numbered from 0 one after another, each delta and stop for the open block, one
// message_start and at most one message_delta; (Responses) one response.created. (An
// upstream event the decoder lets through without an index is forwarded as it came, as
// the passthrough always has.)

// sseEvents splits an SSE body into its events' types and data (one data line each, as
// the recordings have them).
func sseEvents(b []byte) (typs, datas [][]byte) {
	for _, ev := range bytes.Split(b, []byte("\n\n")) {
		var typ, data []byte
		for _, line := range bytes.Split(ev, []byte("\n")) {
			if v, ok := bytes.CutPrefix(line, []byte("event: ")); ok {
				typ = v
			}
			if v, ok := bytes.CutPrefix(line, []byte("data: ")); ok {
				data = v
			}
		}
		if data != nil {
			typs, datas = append(typs, typ), append(datas, data)
		}
	}
	return typs, datas
}

func readFixture(f *testing.F, name string) []byte {
	b, err := os.ReadFile("../testdata/fixtures/" + name)
	if err != nil {
		f.Fatal(err)
	}
	return b
}

func FuzzMessagesFollow(f *testing.F) {
	recordings := [][]byte{
		readFixture(f, "anthropic/stream/thinking-exact-bytes.llm-anthropic.sse"),
		readFixture(f, "anthropic/stream/parallel-tool-use.mirascope.sse"),
		readFixture(f, "anthropic/stream/text-basic.mirascope.sse"),
	}
	for i, r := range recordings {
		for _, cut := range []uint8{1, 3, 5, 12} {
			f.Add(uint8(i), cut, false, r)
			f.Add(uint8(i), cut, true, r)
		}
	}
	f.Fuzz(func(t *testing.T, pick, cut uint8, prefill bool, second []byte) {
		call := &modelCall{}
		m := &messagesRun{c: &requestRun{call: call}}
		fw := (*messagesForward)(m)
		var out []byte
		run := func(body []byte, n int) {
			fw.dec = anthropic.New().NewStreamDecoder(nil)
			fw.fol.begin(call.resume.active)
			fw.meter, fw.keep = &meter{}, fw.keepUsage
			typs, datas := sseEvents(body)
			for i := range typs {
				if i == n {
					return
				}
				if err := fw.dec.Event(typs[i], datas[i], fw.keep); err != nil {
					return
				}
				var data []byte
				var skip bool
				var err error
				if out, data, skip, err = fw.follow(out, typs[i], datas[i]); err != nil {
					return
				}
				if !skip {
					out = appendSSE(out, typs[i], data)
				}
			}
		}
		call.startResume(nil, false) // fresh
		call.resume.on = true
		run(recordings[int(pick)%len(recordings)], int(cut))
		if !call.resume.continuable() {
			return
		}
		call.resume.active = true
		mode := contRestart
		if prefill {
			mode = contPrefill
		}
		fw.resumeMode(mode)
		run(second, -1)
		checkMessagesStream(t, out)
	})
}

// checkMessagesStream checks the client's Messages stream out (see the file's comment).
func checkMessagesStream(t *testing.T, out []byte) {
	typs, datas := sseEvents(out)
	next, open, starts, deltas := 0, -1, 0, 0
	for i := range typs {
		if !json.Valid(datas[i]) {
			t.Fatalf("event %d is not JSON: %s", i, datas[i])
		}
		var ev struct {
			Type  string // what a client reads, as the gateway's decoder reads it
			Index *int
		}
		sc := jsonx.NewScanner(string(datas[i]))
		var m [2]jsonx.Value
		sc.RootMembers([]string{"type", "index"}, m[:])
		ev.Type = m[0].Str
		if m[1].Kind == jsonx.Number {
			n := int(m[1].Int())
			ev.Index = &n
		}
		if ev.Index == nil && ev.Type != "message_start" && ev.Type != "message_delta" {
			continue // an upstream's event without an index: forwarded as it came, as ever
		}
		switch ev.Type {
		case "message_start":
			starts++
		case "message_delta":
			deltas++
		case "content_block_start":
			if ev.Index == nil || *ev.Index != next || open >= 0 {
				t.Fatalf("event %d: a block started at %v; want %d, with none open (%d):\n%s", i, ev.Index, next, open, out)
			}
			open, next = next, next+1
		case "content_block_delta", "content_block_stop":
			if ev.Index == nil || *ev.Index != open {
				t.Fatalf("event %d: %s of block %v; the open one is %d:\n%s", i, ev.Type, ev.Index, open, out)
			}
			if ev.Type == "content_block_stop" {
				open = -1
			}
		}
	}
	if starts > 1 || deltas > 1 {
		t.Fatalf("%d message_start and %d message_delta; want one at most:\n%s", starts, deltas, out)
	}
}

func FuzzResponsesFollow(f *testing.F) {
	recordings := [][]byte{
		readFixture(f, "responses/stream/reasoning-summary.mirascope.sse"),
		readFixture(f, "responses/stream/text-basic.mirascope.sse"),
		readFixture(f, "responses/stream/parallel-function-calls.mirascope.sse"),
	}
	for i, r := range recordings {
		for _, cut := range []uint8{2, 5, 9, 40} {
			f.Add(uint8(i), cut, r)
		}
	}
	f.Fuzz(func(t *testing.T, pick, cut uint8, second []byte) {
		// follow, as responsesForward.event calls it: with the flat read of each event when
		// flat (responsesin.ReadFlatEvent takes it), else with the scanner's; both must give
		// the client the same stream.
		stream := func(flat bool) []byte {
			call := &modelCall{}
			x := &responsesRun{c: &requestRun{call: call}}
			fw := (*responsesForward)(x)
			fw.fw.Model = []byte(`"m"`) // the client-facing model, a JSON string (modelOf)
			var out []byte
			run := func(body []byte, n int) {
				fw.fw.Begin()
				fw.fol.begin(call.resume.active)
				_, datas := sseEvents(body)
				for i, data := range datas {
					if i == n {
						return
					}
					var fe responsesin.FlatEvent
					taken := false
					if flat {
						fe, taken = responsesin.ReadFlatEvent(data)
					}
					d, skip, err := fw.follow(data, &fe, taken)
					if err != nil {
						return
					}
					if !skip {
						out, _, _ = fw.fw.Event(out, d)
					}
				}
			}
			call.startResume(nil, false)
			call.resume.on = true
			call.resume.fwd = followed{sum: fnvOffset}
			run(recordings[int(pick)%len(recordings)], int(cut))
			if !call.resume.continuable() {
				return nil
			}
			call.resume.active = true
			call.resume.fwd.seen, call.resume.fwd.seenSum = 0, fnvOffset
			run(second, -1)
			return out
		}
		out := stream(false)
		if flat := stream(true); !bytes.Equal(flat, out) {
			t.Fatalf("with the flat read:\n%s\nwith the scanner's:\n%s", flat, out)
		}
		_, datas := sseEvents(out)
		created := 0
		for i, data := range datas {
			if !json.Valid(data) {
				t.Fatalf("event %d is not JSON: %s", i, data)
			}
			if ev, _ := responsesin.ReadStreamEvent(data); ev.Type == "response.created" {
				created++
			}
		}
		if created > 1 {
			t.Fatalf("%d response.created; want one at most", created)
		}
	})
}
