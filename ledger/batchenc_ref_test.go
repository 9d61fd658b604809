package ledger

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"
)

// v8Encoder is the batch encoder of form 8 (schema version 8's rows, batches.go) as it
// was before the tenth session's segments, every field of every record encoded: the
// tests write the rows a version 8 database holds with it, which the readers and the
// view still read. Its dictionary and attempts are form 9's (the same in both forms).
type v8Encoder struct {
	enc  batchEncoder
	recs []byte
}

// appendDict appends s, a text of a dictionary field (batchEncoder.appendDict).
func (e *v8Encoder) appendDict(b []byte, _ int, s string) []byte { return e.enc.appendDict(b, 0, s) }

// refAppendBatch appends recs (at most maxBatchRecords, some of them places pruned) as
// a form 8 batch's data, times stored from base (Unix microseconds, at most their
// earliest).
func (e *v8Encoder) refAppendBatch(b []byte, recs []Record, pruned func(i int) bool, base int64) []byte {
	if e.enc.texts == nil {
		e.enc.texts = map[string]int{}
	}
	defer e.enc.reset()
	e.enc.dict, e.recs = append(e.enc.dict[:0], '['), e.recs[:0]
	for i := range recs {
		e.recs = append(e.recs, ',')
		if pruned != nil && pruned(i) {
			e.recs = append(e.recs, "null"...)
			continue
		}
		e.recs = e.refAppendRecord(e.recs, &recs[i], base)
	}
	b = strconv.AppendInt(append(b, '['), base, 10)
	b = append(append(append(b, ','), e.enc.dict...), ']')
	b = append(b, e.recs...)
	return append(b, ']')
}

// appendRecord appends r's array (batchFields' order), the fields at the end that hold
// their defaults left out.
func (e *v8Encoder) refAppendRecord(b []byte, r *Record, base int64) []byte {
	b = appendInt64(append(b, '['), r.Time.UnixMicro()-base)
	end := len(b)
	num := func(b []byte, n int64) []byte {
		b = appendInt64(append(b, ','), n)
		if n != 0 {
			end = len(b)
		}
		return b
	}
	text := func(b []byte, s string) []byte {
		b = appendJSONText(append(b, ','), s)
		if s != "" {
			end = len(b)
		}
		return b
	}
	dict := func(b []byte, f int, s string) []byte {
		b = e.appendDict(append(b, ','), f, s)
		if s != "" {
			end = len(b)
		}
		return b
	}
	flag := func(b []byte, v bool) []byte {
		if v {
			b = append(b, ',', '1')
			end = len(b)
			return b
		}
		return append(b, ',', '0')
	}
	array := func(b []byte, raw string, n int, app func([]byte) []byte) []byte {
		b = append(b, ',')
		switch {
		case n > 0:
			b = app(b)
		case raw != "": // a record read back (the pruner's rewrite)
			b = append(b, raw...)
		default:
			return append(b, "null"...)
		}
		end = len(b)
		return b
	}
	opt := func(b []byte, s string) []byte {
		if s == "" {
			return append(b, ",null"...)
		}
		b = appendJSONText(append(b, ','), s)
		end = len(b)
		return b
	}
	b = text(b, r.RequestID)
	b = dict(b, 2, r.Key)
	b = dict(b, 3, r.Team)
	b = dict(b, 4, r.API)
	b = dict(b, 5, r.Model)
	b = dict(b, 6, r.Served)
	b = dict(b, 7, r.Backend)
	b = dict(b, 8, r.Deployment)
	b = flag(b, r.Stream)
	b = num(b, int64(r.Status))
	b = num(b, r.PromptTokens)
	b = num(b, r.CompletionTokens)
	b = appendReal(append(b, ','), r.CostUSD)
	if r.CostUSD != 0 {
		end = len(b)
	}
	b = num(b, r.Total.Milliseconds())
	b = num(b, r.FirstToken.Milliseconds())
	b = num(b, r.Upstream.Milliseconds())
	b = text(b, r.TraceID)
	b = num(b, r.CachedReadTokens)
	b = dict(b, 19, r.ErrorType)
	b = num(b, r.CacheWriteTokens)
	b = num(b, r.ReasoningTokens)
	b = flag(b, r.Estimated)
	b = num(b, int64(r.ToolCalls))
	b = num(b, int64(r.Fallbacks))
	b = flag(b, r.CacheHit)
	b = array(b, r.AttemptsJSON, len(r.Attempts), func(b []byte) []byte { return e.refAppendAttempts(b, r.Attempts) })
	b = num(b, int64(r.AttemptsOmitted))
	b = array(b, r.ToolsJSON, len(r.Tools), func(b []byte) []byte { return appendTools(b, r.Tools) })
	b = num(b, int64(r.ToolsOmitted))
	b = dict(b, 30, r.ContinuedFrom)
	b = opt(b, r.Prompt)
	b = opt(b, r.Completion)
	return append(b[:end], ']')
}

// refAppendAttempts appends as in their stored form in a batch (form 9's appendAttempts): an array of arrays
// [backend, deployment, model, status, error_type, duration_ms, continued (0 or 1),
// prompt_tokens, completion_tokens], the texts through the batch's dictionary. A reader
// turns them back into appendAttempts' JSON objects (decodeAttempts), the form the
// version 7 column held; the rows the migration made keep that form as it was.
func (e *v8Encoder) refAppendAttempts(b []byte, as []Attempt) []byte {
	return e.enc.appendAttempts(b, as)
}

// gatewayRun is n records as a gateway writes them at a steady load: one key, route and
// outcome, the times, request ids and durations differing, one attempt each.
func gatewayRun(n int, at time.Time) []Record {
	recs := make([]Record, n)
	for i := range recs {
		ms := time.Duration(i*37%240) * time.Millisecond
		recs[i] = Record{Time: at.Add(time.Duration(i) * 731 * time.Microsecond), RequestID: fmt.Sprintf("%024x", i*7919),
			Key: "bench", API: "chat", Model: "claude-bench", Served: "claude-bench", Backend: "anth",
			Deployment: "anth/claude-bench", Status: 200, PromptTokens: 412, CompletionTokens: 187, Total: ms + 3*time.Millisecond,
			Upstream: ms, Attempts: []Attempt{{Backend: "anth", Deployment: "anth/claude-bench", Model: "claude-bench",
				Status: 200, Duration: ms + time.Millisecond, PromptTokens: 412, CompletionTokens: 187}}}
	}
	return recs
}

// encoderCases are batches whose records repeat some segments of the record before and
// change others, in every way appendRecord tells apart.
func encoderCases() map[string][]Record {
	at := time.Date(2026, 12, 7, 11, 0, 0, 0, time.UTC)
	odd := oddRecords()
	cases := map[string][]Record{
		"odd":           odd,
		"odd x2":        append(append([]Record{}, odd...), odd...),
		"gateway":       gatewayRun(maxBatchRecords, at),
		"empty records": {{Time: at}, {Time: at}, {Time: at.Add(time.Second)}},
	}
	// Segments cut off with a record's defaults at the end, then repeated by a record
	// with more after them: encoded again, not copied from the bytes the next record's
	// took (the encoder writes into the batch's records themselves).
	cut := Record{Time: at, RequestID: "r", Key: "k", Model: "m"} // the route's status and flags cut
	cutCounts := Record{Time: at, Key: "k", Model: "m", Status: 200, CachedReadTokens: 1}
	cases["cut segments"] = []Record{cut, cut, func() Record { r := cut; r.PromptTokens = 5; return r }(), cut,
		func() Record { r := cut; r.Attempts = []Attempt{{Backend: "b", Status: 200}}; return r }(),
		cutCounts, cutCounts, func() Record { r := cutCounts; r.AttemptsOmitted = 2; return r }(),
		func() Record { r := cutCounts; r.Attempts = []Attempt{{Backend: "b", Status: 200}}; return r }(),
		func() Record { r := cutCounts; r.ToolsOmitted = 1; return r }(), func() Record { r := cutCounts; r.Completion = "c"; return r }()}
	// One field changed a record at a time: each segment copied and not.
	run := gatewayRun(40, at)
	changes := []func(r *Record){
		func(r *Record) { r.Key = "other" }, func(r *Record) { r.Team = "t" }, func(r *Record) { r.API = "" },
		func(r *Record) { r.Model = "m2" }, func(r *Record) { r.Served = "" }, func(r *Record) { r.Backend = "b2" },
		func(r *Record) { r.Deployment = "" }, func(r *Record) { r.Stream = true }, func(r *Record) { r.Status = 0 },
		func(r *Record) { r.PromptTokens = 0 }, func(r *Record) { r.CompletionTokens = -5 },
		func(r *Record) { r.CostUSD = 0.125 }, func(r *Record) { r.CostUSD = math.NaN() },
		func(r *Record) { r.CostUSD = math.Copysign(0, -1) }, func(r *Record) { r.CostUSD = math.Inf(1) },
		func(r *Record) { r.TraceID = "0af7651916cd43dd8448eb211c80319c" }, func(r *Record) { r.CachedReadTokens = 9 },
		func(r *Record) { r.ErrorType = "server_error" }, func(r *Record) { r.CacheWriteTokens = 1 },
		func(r *Record) { r.ReasoningTokens = 1000 }, func(r *Record) { r.Estimated = true },
		func(r *Record) { r.ToolCalls = 2 }, func(r *Record) { r.Fallbacks = 1 }, func(r *Record) { r.CacheHit = true },
		func(r *Record) { r.Attempts = nil }, func(r *Record) { r.Attempts = nil; r.AttemptsJSON = `[{"backend":"x"}]` },
		func(r *Record) { r.Attempts = append(r.Attempts, Attempt{Backend: "b", Status: 503, ErrorType: "e"}) },
		func(r *Record) { r.Attempts = []Attempt{{Backend: "anth", Model: "m", Status: 200, Continued: true}} },
		func(r *Record) { r.Attempts = make([]Attempt, MaxAttempts+2) }, // more than Add keeps: no decode
		func(r *Record) { r.AttemptsOmitted = 3 }, func(r *Record) { r.Tools = []ToolUse{{Name: "s", Calls: 1}} },
		func(r *Record) { r.ToolsJSON = `[{"name":"s"}]` }, func(r *Record) { r.ToolsOmitted = 1 },
		func(r *Record) { r.ContinuedFrom = "m" }, func(r *Record) { r.Prompt = "p\"" }, func(r *Record) { r.Completion = "c" },
		func(r *Record) { r.Prompt, r.Completion = "", "" },
		func(r *Record) { r.Attempts, r.RouteAttempt, r.RouteAttemptDuration = nil, true, 1500*time.Millisecond },
		func(r *Record) { r.RouteAttempt, r.RouteAttemptDuration = true, time.Second }, // ignored: Attempts holds it
	}
	for i, change := range changes {
		recs := append([]Record{}, run...)
		for k := range recs {
			recs[k].Attempts = append([]Attempt{}, recs[k].Attempts...)
		}
		for k := 3; k < len(recs); k += 3 + i%4 {
			change(&recs[k])
			if k%2 == 0 && k+1 < len(recs) { // two changed records in a row
				change(&recs[k+1])
			}
		}
		cases[fmt.Sprintf("change %d", i)] = recs
	}
	// A full dictionary: texts after maxBatchTexts written as they are, copied or not.
	full := make([]Record, maxBatchRecords)
	for i := range full {
		full[i] = Record{Time: at, Key: fmt.Sprintf("k%d", i), Team: fmt.Sprintf("t%d", i), Model: fmt.Sprintf("m%d", i),
			Backend: fmt.Sprintf("b%d", i/2), Deployment: fmt.Sprintf("d%d", i/2), Status: 200}
		if i%3 == 0 && i > 0 {
			full[i] = full[i-1]
		}
	}
	cases["full dictionary"] = full
	// Routes interleaved: each record's route last seen many records before (10 keys
	// of one length, 3 models, both streams: 30 routes in turn), some texts equal but
	// not the same memory.
	mix := make([]Record, 200)
	for i := range mix {
		mix[i] = Record{Time: at, Key: "key-" + strconv.Itoa(i%10), Team: "t", API: "chat", Model: []string{"m-1", "m-2", "m-3"}[i%3],
			Stream: i%2 == 0, Status: 200, Backend: "b", Attempts: []Attempt{{Backend: "b", Status: 200}}}
		if i%7 == 6 {
			mix[i].Status, mix[i].ErrorType, mix[i].Attempts = 429, "rate_limit_exceeded", nil
		}
	}
	cases["interleaved routes"] = mix
	return cases
}

// TestBatch_EncoderMatchesReference: appendBatch writes, byte for byte, what the form 9
// reference writes, pruned places or not, and the batch reads back.
func TestBatch_EncoderMatchesReference(t *testing.T) {
	var e batchEncoder
	var ref refV9Encoder
	for name, recs := range encoderCases() {
		for _, pruned := range []func(int) bool{nil, func(i int) bool { return i%5 == 1 }} {
			base := int64(math.MaxInt64)
			for i := range recs {
				base = min(base, recs[i].Time.UnixMicro())
			}
			want := ref.refAppendBatch([]byte("x"), recs, pruned, base)
			got := e.appendBatch([]byte("x"), recs, pruned, base)
			if string(got) != string(want) {
				t.Fatalf("%s (pruned %t):\n got %s\nwant %s", name, pruned != nil, got, want)
			}
			// The writer's form: the times and the route runs read once by the caller.
			if at := e.appendBatchAt([]byte("x"), recs, unixMicros(recs), writerRuns(recs, pruned), pruned, base); string(at) != string(want) {
				t.Fatalf("%s (pruned %t), the times and runs given:\n got %s\nwant %s", name, pruned != nil, at, want)
			}
			if _, err := decodeBatchV9(string(got[1:]), 1, nil); err != nil && !overAttempts(recs) {
				t.Errorf("%s: %v", name, err)
			}
		}
	}
}

// FuzzBatchEncoderMatchesReference: a batch of records made from the input (runs of
// records that repeat some fields of the one before and change others) encodes byte for
// byte as the form 9 reference encodes it.
//
//	go test -run '^$' -fuzz FuzzBatchEncoderMatchesReference -fuzztime 60s ./ledger
func FuzzBatchEncoderMatchesReference(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20})
	f.Add([]byte("\x00\x00\x00\x05\x05\x05\x1f\x1f\x80\x81\xff\xfe"))
	texts := []string{"", "a", "b", "q\"\\", "\x00\xff", "anth/claude-bench"}
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) > 4*maxBatchRecords {
			in = in[:4*maxBatchRecords]
		}
		var recs []Record
		r := Record{Time: time.UnixMicro(1_700_000_000_000_000)}
		for i := 0; i < len(in); i++ {
			c := int(in[i])
			txt := texts[c/32%len(texts)]
			n := int64(c/32) - 2
			switch c % 32 {
			case 0: // the record so far, as the next
				recs = append(recs, r)
				r.Attempts = append([]Attempt{}, r.Attempts...)
				r.Time = r.Time.Add(time.Duration(c) * time.Microsecond)
			case 1:
				r.RequestID = txt
			case 2:
				r.Key = txt
			case 3:
				r.Team = txt
			case 4:
				r.API, r.Model = txt, txt
			case 5:
				r.Served, r.Backend = txt, txt
			case 6:
				r.Deployment = txt
			case 7:
				r.Stream = !r.Stream
			case 8:
				r.Status = int(n)
			case 9:
				r.PromptTokens, r.CompletionTokens = n, n*1000
			case 10:
				r.CostUSD = []float64{0, math.Copysign(0, -1), math.NaN(), 0.5, 1e300, math.Inf(-1)}[c/32%6]
			case 11:
				r.Total, r.FirstToken, r.Upstream = time.Duration(n)*time.Millisecond, time.Duration(c)*time.Millisecond, time.Duration(n)
			case 12:
				r.TraceID = txt
			case 13:
				r.CachedReadTokens, r.CacheWriteTokens, r.ReasoningTokens = n, -n, n
			case 14:
				r.ErrorType = txt
			case 15:
				r.Estimated, r.CacheHit = c&32 != 0, c&64 != 0
			case 16:
				r.ToolCalls, r.Fallbacks = int(n), int(-n)
			case 17:
				r.Attempts = append(r.Attempts, Attempt{Backend: txt, Deployment: txt, Model: txt, Status: int(n)})
			case 18:
				if len(r.Attempts) > 0 {
					a := &r.Attempts[c/32%len(r.Attempts)]
					a.ErrorType, a.Duration, a.Continued = txt, time.Duration(n)*time.Millisecond, !a.Continued
				}
			case 19:
				if len(r.Attempts) > 0 {
					a := &r.Attempts[c/32%len(r.Attempts)]
					a.PromptTokens, a.CompletionTokens, a.Status = n, -n, c
				}
			case 20:
				r.Attempts = nil
			case 21:
				r.AttemptsJSON = []string{"", `[{"backend":"x"}]`, `[[0,0,0,200,"",1,0,1,1]]`}[c/32%3]
			case 22:
				r.AttemptsOmitted, r.ToolsOmitted = int(n), int(-n)
			case 23:
				if c&32 != 0 {
					r.Tools = append(r.Tools, ToolUse{Name: txt, Calls: int(n)})
				} else {
					r.Tools = nil
				}
			case 24:
				r.ToolsJSON = []string{"", `[{"name":"s"}]`}[c/32%2]
			case 25:
				r.ContinuedFrom = txt
			case 26:
				r.Prompt = txt
			case 27:
				r.Completion = txt
			case 28: // the filler's route attempt (ignored with Attempts)
				r.RouteAttempt, r.RouteAttemptDuration = !r.RouteAttempt, time.Duration(n)*time.Millisecond
			}
		}
		recs = append(recs, r)
		if len(recs) > maxBatchRecords {
			recs = recs[:maxBatchRecords]
		}
		var e batchEncoder
		var ref refV9Encoder
		pruned := func(i int) bool { return len(in) > 0 && int(in[0])%7 == i%7 }
		for _, p := range []func(int) bool{nil, pruned} {
			want := ref.refAppendBatch(nil, recs, p, 0)
			got := e.appendBatch(nil, recs, p, 0)
			if string(got) != string(want) {
				t.Fatalf("\n got %s\nwant %s", got, want)
			}
			if at := e.appendBatchAt(nil, recs, unixMicros(recs), writerRuns(recs, p), p, 0); string(at) != string(want) {
				t.Fatalf("the times and runs given:\n got %s\nwant %s", at, want)
			}
		}
	})
}

// overAttempts reports whether a record of recs holds more than MaxAttempts attempts
// (which Add never queues, and a reader refuses).
func overAttempts(recs []Record) bool {
	for i := range recs {
		if len(recs[i].Attempts) > MaxAttempts {
			return true
		}
	}
	return false
}

// BenchmarkBatchEncode: a batch of a gateway's steady records (gatewayRun), with the
// encoder and the reference. Count its instructions rather than time it:
//
//	go test -c -o /tmp/ledger.test ./ledger
//	valgrind --tool=cachegrind --cache-sim=no /tmp/ledger.test -test.run '^$' -test.bench 'BatchEncode/new' -test.benchtime 2000x
func BenchmarkBatchEncode(b *testing.B) {
	recs := gatewayRun(maxBatchRecords, time.Date(2026, 12, 7, 11, 0, 0, 0, time.UTC))
	var e batchEncoder
	var ref refV9Encoder
	var v8 v8Encoder
	buf := make([]byte, 0, 64<<10)
	perRecord := func(b *testing.B) { b.ReportMetric(float64(len(buf))/float64(len(recs)), "B/record") }
	b.Run("new", func(b *testing.B) {
		for range b.N {
			buf = e.appendBatch(buf[:0], recs, nil, recs[0].Time.UnixMicro())
		}
		perRecord(b)
	})
	b.Run("reference", func(b *testing.B) {
		for range b.N {
			buf = ref.refAppendBatch(buf[:0], recs, nil, recs[0].Time.UnixMicro())
		}
		perRecord(b)
	})
	b.Run("v8", func(b *testing.B) { // form 8's reference, for its bytes a record
		for range b.N {
			buf = v8.refAppendBatch(buf[:0], recs, nil, recs[0].Time.UnixMicro())
		}
		perRecord(b)
	})
	// The SQLite writer's form: the times read once and the route runs asked once a
	// record (both counted here), then given to the encoder.
	times, same := make([]int64, 0, len(recs)), make([]bool, 0, len(recs))
	b.Run("writer", func(b *testing.B) {
		for range b.N {
			times = times[:0]
			for i := range recs {
				times = append(times, recs[i].Time.UnixMicro())
			}
			same = sameRoutes(recs, same)
			buf = e.appendBatchAt(buf[:0], recs, times, same, nil, times[0])
		}
		perRecord(b)
	})
}

// unixMicros are recs' times as the writer reads them once (insertRecords).
func unixMicros(recs []Record) []int64 {
	times := make([]int64, len(recs))
	for i := range recs {
		times[i] = recs[i].Time.UnixMicro()
	}
	return times
}

// writerRuns are sameRoutes' answers for recs as the SQLite writer gives them to the
// encoder: none with pruned places (the pruner's rewrite).
func writerRuns(recs []Record, pruned func(int) bool) []bool {
	if pruned != nil {
		return nil
	}
	return sameRoutes(recs, nil)
}

// refV9Encoder is the reference of form 9 (batchv9.go) the encoder is held to, byte for
// byte (TestBatch_EncoderMatchesReference, FuzzBatchEncoderMatchesReference): every field
// of a record written, then its defaults at the end cut, each record's route looked for
// among the batch's routes by its values, newest first, texts compared with ==.
type refV9Encoder struct {
	v8     v8Encoder // the dictionary
	routes []Record
}

// refAppendBatch appends recs (some of them places pruned) as a form 9 batch's data.
func (e *refV9Encoder) refAppendBatch(b []byte, recs []Record, pruned func(i int) bool, base int64) []byte {
	e.v8.enc.reset()
	if e.v8.enc.texts == nil {
		e.v8.enc.texts = map[string]int{}
	}
	e.v8.enc.dict, e.routes = append(e.v8.enc.dict[:0], '['), nil
	var rb, out []byte
	for i := range recs {
		out = append(out, ',')
		if pruned != nil && pruned(i) {
			out = append(out, "null"...)
			continue
		}
		r := &recs[i]
		ri := -1
		for k := len(e.routes) - 1; k >= 0; k-- {
			p := &e.routes[k]
			if p.Key == r.Key && p.Team == r.Team && p.API == r.API && p.Model == r.Model && p.Served == r.Served &&
				p.Backend == r.Backend && p.Deployment == r.Deployment && p.Stream == r.Stream && p.Status == r.Status &&
				p.ErrorType == r.ErrorType {
				ri = k
				break
			}
		}
		if ri < 0 {
			ri = len(e.routes)
			e.routes = append(e.routes, *r)
			if ri > 0 {
				rb = append(rb, ',')
			}
			rb = append(rb, '[')
			for f, s := range []string{r.Key, r.Team, r.API, r.Model, r.Served, r.Backend, r.Deployment} {
				if f > 0 {
					rb = append(rb, ',')
				}
				rb = e.v8.appendDict(rb, 0, s)
			}
			rb = fmt.Appendf(rb, ",%d,%d,", map[bool]int{false: 0, true: 1}[r.Stream], r.Status)
			rb = append(e.v8.appendDict(rb, 0, r.ErrorType), ']')
		}
		out = e.refAppendRecord(out, r, ri, base)
	}
	b = strconv.AppendInt(append(b, '['), base, 10)
	b = append(append(append(b, ','), e.v8.enc.dict...), ']')
	b = append(append(append(append(b, ','), '['), rb...), ']')
	b = append(b, out...)
	return append(b, ']')
}

// refAppendRecord appends r's form 9 array.
func (e *refV9Encoder) refAppendRecord(b []byte, r *Record, route int, base int64) []byte {
	var fields []string // each field's JSON, "" where it holds its default
	var all []string
	add := func(v string, dflt bool) {
		all = append(all, v)
		if dflt {
			fields = append(fields, "")
		} else {
			fields = append(fields, v)
		}
	}
	num := func(n int64) { add(strconv.FormatInt(n, 10), n == 0) }
	text := func(s string) { add(string(appendJSONText(nil, s)), s == "") }
	flag := func(v bool) { add(map[bool]string{false: "0", true: "1"}[v], !v) }
	add(strconv.FormatInt(r.Time.UnixMicro()-base, 10), false)
	text(r.RequestID)
	add(strconv.Itoa(route), false)
	num(r.PromptTokens)
	num(r.CompletionTokens)
	add(string(appendReal(nil, r.CostUSD)), r.CostUSD == 0)
	num(r.Total.Milliseconds())
	num(r.FirstToken.Milliseconds())
	num(r.Upstream.Milliseconds())
	switch a := r.Attempts; {
	case len(a) == 0 && r.RouteAttempt:
		add(strconv.FormatInt(r.RouteAttemptDuration.Milliseconds(), 10), false)
	case len(a) == 1 && a[0].Backend == r.Backend && a[0].Deployment == r.Deployment && a[0].Model == r.Served &&
		a[0].Status == r.Status && a[0].ErrorType == r.ErrorType && !a[0].Continued &&
		a[0].PromptTokens == r.PromptTokens && a[0].CompletionTokens == r.CompletionTokens:
		add(strconv.FormatInt(a[0].Duration.Milliseconds(), 10), false)
	case len(a) > 0:
		add(string(e.v8.refAppendAttempts(nil, a)), false)
	case r.AttemptsJSON != "":
		add(r.AttemptsJSON, false)
	default:
		add("null", true)
	}
	text(r.TraceID)
	num(r.CachedReadTokens)
	num(r.CacheWriteTokens)
	num(r.ReasoningTokens)
	flag(r.Estimated)
	num(int64(r.ToolCalls))
	num(int64(r.Fallbacks))
	flag(r.CacheHit)
	num(int64(r.AttemptsOmitted))
	switch {
	case len(r.Tools) > 0:
		add(string(appendTools(nil, r.Tools)), false)
	case r.ToolsJSON != "":
		add(r.ToolsJSON, false)
	default:
		add("null", true)
	}
	num(int64(r.ToolsOmitted))
	add(string(e.v8.appendDict(nil, 0, r.ContinuedFrom)), r.ContinuedFrom == "")
	add(string(appendOpt(nil, r.Prompt)), r.Prompt == "")
	add(string(appendOpt(nil, r.Completion)), r.Completion == "")
	n := len(fields)
	for n > 3 && fields[n-1] == "" {
		n--
	}
	return append(append(b, '['), strings.Join(all[:n], ",")+"]"...)
}
