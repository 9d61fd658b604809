package ledger

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

// roundTrip pushes recs through a queue and decodes them back as the writer does, the
// decoder's batch arrays reset every batch records.
func roundTrip(recs []Record, batch int) []Record {
	var q queue
	for i := range recs {
		q.push(&recs[i])
	}
	var d decoder
	out := make([]Record, 0, len(recs))
	got := make([]Record, 0, batch)
	for _, b := range q.take() {
		d.startBlock()
		for i := range b.n {
			got = got[:len(got)+1]
			d.record(b, i, &got[len(got)-1])
			if len(got) == batch {
				out = append(out, deepCopy(got)...)
				clear(got)
				got = got[:0]
				d.reset()
			}
		}
	}
	return append(out, deepCopy(got)...)
}

// deepCopy copies recs' attempts and tools out of the decoder's arrays, which the next
// batch overwrites.
func deepCopy(recs []Record) []Record {
	out := make([]Record, len(recs))
	for i, r := range recs {
		if r.Attempts != nil {
			r.Attempts = append([]Attempt(nil), r.Attempts...)
		}
		if r.Tools != nil {
			r.Tools = append([]ToolUse(nil), r.Tools...)
		}
		out[i] = r
	}
	return out
}

// sameRecord reports whether a and b are equal, their times as instants in the same
// location's name (a queued time keeps its instant and whether it was UTC).
func sameRecord(a, b Record) bool {
	if !a.Time.Equal(b.Time) || (a.Time.Location() == time.UTC) != (b.Time.Location() == time.UTC) {
		return false
	}
	a.Time, b.Time = time.Time{}, time.Time{}
	return reflect.DeepEqual(a, b)
}

func TestQueue_RoundTrip(t *testing.T) {
	at := time.Date(2026, 12, 7, 8, 30, 1, 123456789, time.UTC)
	full := Record{ID: 7, Time: at.Local(), RequestID: "req-1", Key: "k", Team: "t", API: "chat", Model: "m",
		Served: "m2", Backend: "b", Stream: true, Status: 502, ErrorType: "upstream_error",
		PromptTokens: 1, CachedReadTokens: 2, CacheWriteTokens: 3, CompletionTokens: 4, ReasoningTokens: 5,
		CostUSD: 0.125, Estimated: true, Total: time.Second, FirstToken: time.Millisecond, Upstream: time.Microsecond,
		ToolCalls: 6, Fallbacks: 7, CacheHit: true, Prompt: "héllo", Completion: "wörld", Deployment: "b/m",
		TraceID: "0123456789abcdef0123456789abcdef", ContinuedFrom: "m0",
		Attempts: []Attempt{{Backend: "b", Deployment: "b/m", Model: "m", Status: 502, ErrorType: "upstream_error",
			Duration: time.Second, Continued: true, PromptTokens: 9, CompletionTokens: 10},
			{Backend: "b2", Deployment: "b2/m", Model: "m", Status: 200}},
		AttemptsOmitted: 3, AttemptsJSON: `[{"x":1}]`,
		Tools:        []ToolUse{{Name: "search", Source: "mcp", Calls: 2, Errors: 1, Duration: time.Second}, {Name: "calc"}},
		ToolsOmitted: 4, ToolsJSON: `[{"y":2}]`}
	many := func(n int, f func(i int) Record) []Record {
		out := make([]Record, n)
		for i := range out {
			out[i] = f(i)
		}
		return out
	}
	for _, tc := range []struct {
		name string
		recs []Record
	}{
		{"every field", []Record{full}},
		{"zero record", []Record{{}}},
		{"zero time, local time, UTC", []Record{{Time: time.Time{}}, {Time: at.Local()}, {Time: at}, {Time: time.Unix(-1, 5)}}},
		{"negative and large numbers", []Record{{ID: -1, Status: -3, ToolCalls: 1 << 40, PromptTokens: -5,
			Total: -time.Second, CostUSD: -1.5, AttemptsOmitted: -2, ToolsOmitted: 1 << 50}}},
		// The same text in other slots and records, runs of one key and their breaks, across
		// blocks (600 records: three blocks) and batches of 100.
		{"texts shared and not", many(600, func(i int) Record {
			r := full
			r.RequestID = strings.Repeat("r", i%7) + string(rune('a'+i%26))
			r.Key = []string{"k", "k", "other", "k"}[i%4]
			r.Team = r.Key
			r.Served = ""
			if i%3 == 0 {
				r.Attempts, r.Tools = nil, nil
			}
			if i%5 == 0 {
				r.Attempts = []Attempt{{Model: r.RequestID, Backend: r.Key}}
			}
			return r
		})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := roundTrip(tc.recs, 100)
			if len(got) != len(tc.recs) {
				t.Fatalf("%d records back, want %d", len(got), len(tc.recs))
			}
			for i := range got {
				if !sameRecord(got[i], tc.recs[i]) {
					t.Fatalf("record %d:\n got %+v\nwant %+v", i, got[i], tc.recs[i])
				}
			}
		})
	}
}

// TestQueue_NoPointersToScan holds the queue to its point: the queued records, attempts
// and tools hold no pointers (their arrays are allocations the collector does not scan).
func TestQueue_NoPointersToScan(t *testing.T) {
	for _, v := range []any{qrec{}, qattempt{}, qtool{}, span{}} {
		if typ := reflect.TypeOf(v); hasPointers(typ) {
			t.Errorf("%v holds pointers", typ)
		}
	}
}

func hasPointers(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Pointer, reflect.String, reflect.Slice, reflect.Map, reflect.Chan, reflect.Func, reflect.Interface, reflect.UnsafePointer:
		return true
	case reflect.Array:
		return t.Len() > 0 && hasPointers(t.Elem())
	case reflect.Struct:
		for i := range t.NumField() {
			if hasPointers(t.Field(i).Type) {
				return true
			}
		}
	}
	return false
}

// TestQueue_DecoderInternsNames: a batch of records of a few names allocates none of
// them again (the names are interned), and a block's other texts share one string.
func TestQueue_DecoderInternsNames(t *testing.T) {
	recs := make([]Record, blockLen)
	for i := range recs {
		recs[i] = Record{RequestID: "req-" + string(rune('a'+i%26)), Key: "key", Model: "model", Backend: "backend",
			Attempts: []Attempt{{Backend: "backend", Model: "model"}}}
	}
	var q queue
	for i := range recs {
		q.push(&recs[i])
	}
	blocks := q.take()
	var d decoder
	out := make([]Record, blockLen)
	decode := func() {
		d.startBlock()
		for i := range out {
			d.record(blocks[0], i, &out[i])
		}
		d.reset()
	}
	decode() // interns the names
	if allocs := testing.AllocsPerRun(10, decode); allocs != 1 {
		t.Errorf("decoding a block allocates %v times, want 1 (its arena's string)", allocs)
	}
}

// FuzzQueue_RoundTrip: records of any texts and numbers come back from the queue as
// they went in.
func FuzzQueue_RoundTrip(f *testing.F) {
	f.Add("req-1", "key", "team", "model", "backend/model", "upstream_error", "tool", int64(200), int64(1700000000123456789), uint8(3))
	f.Add("", "", "", "", "", "", "", int64(0), int64(0), uint8(0))
	f.Add("x", "x", "x", "x", "x", "x", "x", int64(-1), int64(-1), uint8(255))
	f.Fuzz(func(t *testing.T, rid, key, team, model, dep, errType, tool string, n, ns int64, shape uint8) {
		recs := make([]Record, 1+int(shape)%300)
		for i := range recs {
			r := Record{Time: time.Unix(0, ns+int64(i)), RequestID: rid[:len(rid)*i%(len(rid)+1)], Key: key, Team: team,
				Model: model, Served: model, Backend: dep, Deployment: dep, ErrorType: errType, Status: int(n),
				PromptTokens: n * int64(i), CostUSD: float64(n) / 3, Stream: shape&1 != 0, CacheHit: i%2 == 0}
			if shape&2 != 0 && i%3 != 1 {
				r.Attempts = []Attempt{{Backend: dep, Deployment: key, Model: model, ErrorType: rid, Status: int(n)}}
			}
			if shape&4 != 0 && i%2 == 0 {
				r.Tools = []ToolUse{{Name: tool, Source: team, Calls: int(n)}, {Name: key}}
			}
			if shape&8 != 0 && i%4 == 0 {
				r.Key, r.Prompt, r.Completion = rid, tool, errType
			}
			recs[i] = r
		}
		got := roundTrip(recs, 1+int(shape)%97)
		if len(got) != len(recs) {
			t.Fatalf("%d records back, want %d", len(got), len(recs))
		}
		for i := range got {
			if !sameRecord(got[i], recs[i]) {
				t.Fatalf("record %d:\n got %+v\nwant %+v", i, got[i], recs[i])
			}
		}
	})
}
