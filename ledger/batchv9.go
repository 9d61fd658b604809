package ledger

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/agate-gateway/agate/internal/jsonx"
)

// Schema version 9 (SQLite) stores a batch row's records in fewer bytes, with less to
// encode a record (docs/ledger.md, "The ledger's cost, fifteenth session"). A row's
// column format says which form its data has: 8 (the rows written before, batches.go's
// form) or 9:
//
//	[base_us, [text, ...], [route, ...], record, record, ...]
//
// base_us and the texts are as in form 8. A route is an array of the ten fields a
// gateway's records repeat in runs — key_name, team, api, model, served_model, backend,
// deployment (each a string or its index in the texts), stream (0 or 1), status,
// error_type (a string or its index) — every one
// written, each route once a batch; a record names its route by its index among them. A record is an
// array of its other fields in batchFieldsV9's order, the ones at the end that hold their
// defaults (0, "", null) left out: its time (microseconds after base_us), request_id, its
// route, the token counts, cost and durations, then attempts, before the fields most
// records leave at their defaults, so that a record with attempts needs none of them
// written. attempts is null (none), an array (form 8's: arrays of [backend, deployment,
// model, status, error_type, duration_ms, continued, prompt_tokens, completion_tokens],
// texts through the dictionary, or the objects of a record read back), or a number: one
// attempt that is its route's — backend, deployment, model (the served model), status and
// error_type the record's route's, not a continuation, the record's prompt and completion
// tokens — stored as its duration_ms alone (a proxied request's, most often). A record
// the pruner took out is a null in its place. The view ledger_requests reads both forms.

// batchFormat is the form of the batch rows this gateway writes (the column format).
const batchFormat = 9

// batchFieldsV9 are a record's fields in form 9, in their order in its array (route: its
// index among the batch's routes).
var batchFieldsV9 = [...]struct {
	col  string
	kind fieldKind
}{
	{"ts_us", fTime}, {"request_id", fText}, {"route", fInt}, {"prompt_tokens", fInt}, {"completion_tokens", fInt},
	{"cost_usd", fReal}, {"total_ms", fInt}, {"first_token_ms", fInt}, {"upstream_ms", fInt}, {"attempts", fArray},
	{"trace_id", fText}, {"cached_read_tokens", fInt}, {"cache_write_tokens", fInt}, {"reasoning_tokens", fInt},
	{"usage_estimated", fFlag}, {"tool_calls", fInt}, {"fallbacks", fInt}, {"cache_hit", fFlag},
	{"attempts_omitted", fInt}, {"tools", fArray}, {"tools_omitted", fInt}, {"continued_from", fDict},
	{"prompt", fOpt}, {"completion", fOpt},
}

// routeFields are a route's fields, in their order in its array.
var routeFields = [...]struct {
	col  string
	kind fieldKind
}{
	{"key_name", fDict}, {"team", fDict}, {"api", fDict}, {"model", fDict}, {"served_model", fDict},
	{"backend", fDict}, {"deployment", fDict}, {"stream", fFlag}, {"status", fInt}, {"error_type", fDict},
}

// v9Records is the offset of a form 9 batch's first record in its array (after base_us,
// the texts and the routes).
const v9Records = 3

// v9Place and v9Route are a field's place in a form 9 record and in a route (-1: none).
func v9Place(col string) int {
	for i, f := range batchFieldsV9 {
		if f.col == col {
			return i
		}
	}
	return -1
}

func v9Route(col string) int {
	for i, f := range routeFields {
		if f.col == col {
			return i
		}
	}
	return -1
}

// batchColumnsV9 is the view's select list over form 9 rows (r.value: a record, b.data:
// its row's), the columns of batchColumns in its order.
func batchColumnsV9() string {
	route := "(b.data -> 2 -> (r.value ->> 2))"
	rf := func(col string) string {
		p := strconv.Itoa(v9Route(col))
		if routeFields[v9Route(col)].kind == fDict {
			return dictSQL(route, p)
		}
		return route + " ->> " + p
	}
	var b strings.Builder
	b.WriteString("b.first_id + r.key - " + strconv.Itoa(v9Records) + " AS id")
	for _, c := range columns {
		var v string
		if p := v9Route(c); p >= 0 {
			v = rf(c)
		} else {
			p := strconv.Itoa(v9Place(c))
			v = fieldSQL(batchFieldsV9[v9Place(c)].kind, p)
			if c == "attempts" {
				one := "json_array(json_object('backend', " + rf("backend") + ", 'deployment', " + rf("deployment") +
					", 'model', " + rf("served_model") + ", 'status', " + rf("status") + ", 'error_type', " + rf("error_type") +
					", 'duration_ms', r.value ->> " + p + ", 'continued', json('false'), 'prompt_tokens', COALESCE(r.value ->> " +
					strconv.Itoa(v9Place("prompt_tokens")) + ", 0), 'completion_tokens', COALESCE(r.value ->> " +
					strconv.Itoa(v9Place("completion_tokens")) + ", 0)))"
				v = "CASE json_type(r.value, '$[" + p + "]') WHEN 'integer' THEN " + one + " ELSE " + attemptsSQL(p) + " END"
			}
		}
		b.WriteString(", " + v + " AS " + c)
	}
	return b.String()
}

// schemaV9SQLite is version 9 on SQLite: the batches' column format (the rows there are
// keep form 8), and the view reading both forms.
func schemaV9SQLite() string {
	return `ALTER TABLE ` + batchesTable + ` ADD COLUMN format INTEGER NOT NULL DEFAULT 8;
DROP VIEW ledger_requests;
CREATE VIEW ledger_requests AS SELECT ` + batchColumns() + `
  FROM ` + batchesTable + ` AS b, json_each(b.data) AS r WHERE b.format = 8 AND r.key >= ` + strconv.Itoa(batchRecords) + ` AND r.type = 'array'
UNION ALL SELECT ` + batchColumnsV9() + `
  FROM ` + batchesTable + ` AS b, json_each(b.data) AS r WHERE b.format = 9 AND r.key >= ` + strconv.Itoa(v9Records) + ` AND r.type = 'array';
`
}

// batchSQL is the INSERT of a batch row (SQLite), in form batchFormat.
func batchSQL() string {
	return "INSERT INTO " + batchesTable + " (last_id, first_id, first_us, last_us, n, data, format) VALUES (?, ?, ?, ?, ?, ?, " +
		strconv.Itoa(batchFormat) + ")"
}

// routeBuckets is the size of the encoder's table of a batch's routes by a hash of their
// values (routeHash).
const routeBuckets = 64

// batchEncoder encodes batches in form 9 (appendBatch), keeping its buffers and its
// dictionary's index between them. Not safe for concurrent use.
type batchEncoder struct {
	// texts is the dictionary's index: a text's place in it.
	texts map[string]int
	// dict, routes and recs are the dictionary's, the routes' and the records' JSON
	// being written.
	dict, routes, recs []byte
	// last are the text and its index a dictionary field had the last time (an
	// attempt's backend, deployment, model, error type; continued_from; a route's texts,
	// lastRoute on).
	last [lastRoute + len(routeFields)]struct {
		s string
		i int
	}
	// route are the records that gave the batch's routes, in order (their texts are
	// not kept after appendBatch); head and next chain them by routeHash, newest first
	// (a route's index plus one; 0 ends a chain).
	route []*Record
	head  [routeBuckets]int
	next  []int
}

// appendBatch appends recs (at most maxBatchRecords, some of them places pruned) as a
// batch's data in form 9, times stored from base (Unix microseconds, at most their
// earliest). The texts recs hold are not kept after it returns.
func (e *batchEncoder) appendBatch(b []byte, recs []Record, pruned func(i int) bool, base int64) []byte {
	return e.appendBatchAt(b, recs, nil, nil, pruned, base)
}

// appendBatchAt is appendBatch given us, recs' times as Unix microseconds (us[i] is
// recs[i].Time.UnixMicro(); nil: read from the records), which the writer reads once a
// record for the batch's bounds, its rows and its keys' ranges, and same, sameRoutes'
// answers for recs (nil: the route's texts compared here). same must be nil when
// pruned is not.
func (e *batchEncoder) appendBatchAt(b []byte, recs []Record, us []int64, same []bool, pruned func(i int) bool, base int64) []byte {
	if e.texts == nil {
		e.texts = map[string]int{}
	}
	defer e.reset()
	e.dict, e.routes, e.recs = append(e.dict[:0], '['), append(e.routes[:0], '['), e.recs[:0]
	var prev *Record
	ri := 0
	for i := range recs {
		if pruned != nil && pruned(i) {
			e.recs = append(e.recs, ",null"...)
			continue
		}
		r := &recs[i]
		t := int64(0)
		if us != nil {
			t = us[i]
		} else {
			t = r.Time.UnixMicro()
		}
		// r's route is prev's when its texts are (same[i], or compared) and its stream,
		// status and error type are: most records'.
		texts := prev != nil && (same != nil && same[i] || same == nil && sameRouteTexts(r, prev))
		if !texts || r.Status != prev.Status || r.Stream != prev.Stream || !sameText(r.ErrorType, prev.ErrorType) {
			ri = e.routeOf(r)
		}
		e.recs = e.appendRecord(append(e.recs, ','), r, ri, t-base)
		prev = r
	}
	b = strconv.AppendInt(append(b, '['), base, 10)
	b = append(append(append(b, ','), e.dict...), ']')
	b = append(append(append(b, ','), e.routes...), ']')
	b = append(b, e.recs...)
	return append(b, ']')
}

// reset forgets the batch's texts and routes.
func (e *batchEncoder) reset() {
	clear(e.texts)
	clear(e.last[:])
	clear(e.route)
	clear(e.head[:])
	e.route, e.next = e.route[:0], e.next[:0]
}

// sameRecordRoute reports whether r's route fields hold p's values.
func sameRecordRoute(r, p *Record) bool {
	return r.Status == p.Status && r.Stream == p.Stream && sameText(r.ErrorType, p.ErrorType) && sameRouteTexts(r, p)
}

// routeHash is r's route's bucket in the encoder's table: a hash of what its values
// most often differ in (the texts' lengths and last bytes, stream, status), never of
// where its texts are, so that a route's every record finds it.
func routeHash(r *Record) int {
	h := len(r.Key)*31 + len(r.Team)*7 + len(r.API)*5 + len(r.Model)*17 + len(r.Served)*3 + len(r.Backend)*19 +
		len(r.Deployment)*13 + len(r.ErrorType)*11 + r.Status
	if r.Stream {
		h += 37
	}
	if n := len(r.Key); n > 0 {
		h += int(r.Key[n-1]) * 131
	}
	if n := len(r.Model); n > 0 {
		h += int(r.Model[n-1]) * 61
	}
	return (h ^ h>>6) & (routeBuckets - 1)
}

// routeOf returns the index of r's route among the batch's: the newest that holds its
// values, else a new one.
func (e *batchEncoder) routeOf(r *Record) int {
	b := routeHash(r)
	for k := e.head[b]; k > 0; k = e.next[k-1] {
		if sameRecordRoute(r, e.route[k-1]) {
			return k - 1
		}
	}
	if len(e.route) > 0 {
		e.routes = append(e.routes, ',')
	}
	e.route, e.next = append(e.route, r), append(e.next, e.head[b])
	e.head[b] = len(e.route)
	e.routes = e.appendRoute(e.routes, r)
	return len(e.route) - 1
}

// lastRoute is the first of a route's texts' places in batchEncoder.last.
const lastRoute = 5

// appendRoute appends r's route (routeFields' order), its texts through the batch's
// dictionary.
func (e *batchEncoder) appendRoute(b []byte, r *Record) []byte {
	b = e.appendDict(append(b, '['), lastRoute, r.Key)
	b = e.appendDict(append(b, ','), lastRoute+1, r.Team)
	b = e.appendDict(append(b, ','), lastRoute+2, r.API)
	b = e.appendDict(append(b, ','), lastRoute+3, r.Model)
	b = e.appendDict(append(b, ','), lastRoute+4, r.Served)
	b = e.appendDict(append(b, ','), lastRoute+5, r.Backend)
	b = e.appendDict(append(b, ','), lastRoute+6, r.Deployment)
	b = appendFlag(append(b, ','), r.Stream)
	b = appendInt64(append(b, ','), int64(r.Status))
	b = e.appendDict(append(b, ','), lastRoute+9, r.ErrorType)
	return append(b, ']')
}

// routeAttempt reports whether r's attempts are one that is its route's (stored as its
// duration alone).
func routeAttempt(r *Record) bool {
	if len(r.Attempts) != 1 {
		return false
	}
	a := &r.Attempts[0]
	return a.Status == r.Status && !a.Continued && a.PromptTokens == r.PromptTokens && a.CompletionTokens == r.CompletionTokens &&
		sameText(a.Backend, r.Backend) && sameText(a.Deployment, r.Deployment) && sameText(a.Model, r.Served) &&
		sameText(a.ErrorType, r.ErrorType)
}

// defaultTail reports whether r's fields after attempts (trace_id to completion) all
// hold their defaults (most records').
func defaultTail(r *Record) bool {
	return r.TraceID == "" && r.CachedReadTokens == 0 && r.CacheWriteTokens == 0 && r.ReasoningTokens == 0 && !r.Estimated &&
		r.ToolCalls == 0 && r.Fallbacks == 0 && !r.CacheHit && r.AttemptsOmitted == 0 && len(r.Tools) == 0 &&
		r.ToolsJSON == "" && r.ToolsOmitted == 0 && r.ContinuedFrom == "" && r.Prompt == "" && r.Completion == ""
}

// appendRecord appends r's array (batchFieldsV9' order) of route ri, the fields at the
// end that hold their defaults left out; at is r's time as stored (microseconds after
// the batch's base).
func (e *batchEncoder) appendRecord(c []byte, r *Record, ri int, at int64) []byte {
	c = appendInt64(append(c, '['), at)
	c = appendJSONText(append(c, ','), r.RequestID)
	c = appendInt64(append(c, ','), int64(ri))
	end := len(c) // the route is always written
	num := func(c []byte, n int64) []byte {
		if c = appendInt64(append(c, ','), n); n != 0 {
			end = len(c)
		}
		return c
	}
	c = num(c, r.PromptTokens)
	c = num(c, r.CompletionTokens)
	if c = appendReal(append(c, ','), r.CostUSD); r.CostUSD != 0 {
		end = len(c)
	}
	c = num(c, r.Total.Milliseconds())
	c = num(c, r.FirstToken.Milliseconds())
	c = num(c, r.Upstream.Milliseconds())
	c = append(c, ',')
	switch {
	case r.RouteAttempt && len(r.Attempts) == 0: // the filler's word for routeAttempt's
		c = appendInt64(c, r.RouteAttemptDuration.Milliseconds())
		end = len(c)
	case routeAttempt(r):
		c = appendInt64(c, r.Attempts[0].Duration.Milliseconds())
		end = len(c)
	case len(r.Attempts) > 0:
		c = e.appendAttempts(c, r.Attempts)
		end = len(c)
	case r.AttemptsJSON != "": // a record read back (the pruner's rewrite)
		c = append(c, r.AttemptsJSON...)
		end = len(c)
	default:
		c = append(c, "null"...)
	}
	if defaultTail(r) {
		return append(c[:end], ']')
	}
	text := func(c []byte, s string) []byte {
		if c = appendJSONText(append(c, ','), s); s != "" {
			end = len(c)
		}
		return c
	}
	flag := func(c []byte, v bool) []byte {
		if c = appendFlag(append(c, ','), v); v {
			end = len(c)
		}
		return c
	}
	c = text(c, r.TraceID)
	c = num(c, r.CachedReadTokens)
	c = num(c, r.CacheWriteTokens)
	c = num(c, r.ReasoningTokens)
	c = flag(c, r.Estimated)
	c = num(c, int64(r.ToolCalls))
	c = num(c, int64(r.Fallbacks))
	c = flag(c, r.CacheHit)
	c = num(c, int64(r.AttemptsOmitted))
	c = append(c, ',')
	switch {
	case len(r.Tools) > 0:
		c = appendTools(c, r.Tools)
		end = len(c)
	case r.ToolsJSON != "": // a record read back (the pruner's rewrite)
		c = append(c, r.ToolsJSON...)
		end = len(c)
	default:
		c = append(c, "null"...)
	}
	c = num(c, int64(r.ToolsOmitted))
	if c = e.appendDict(append(c, ','), 4, r.ContinuedFrom); r.ContinuedFrom != "" {
		end = len(c)
	}
	if c = appendOpt(append(c, ','), r.Prompt); r.Prompt != "" {
		end = len(c)
	}
	if c = appendOpt(append(c, ','), r.Completion); r.Completion != "" {
		end = len(c)
	}
	return append(c[:end], ']')
}

// appendAttempts appends as in form 8's stored form: an array of arrays [backend,
// deployment, model, status, error_type, duration_ms, continued (0 or 1), prompt_tokens,
// completion_tokens], the texts through the batch's dictionary.
func (e *batchEncoder) appendAttempts(b []byte, as []Attempt) []byte {
	b = append(b, '[')
	for i := range as {
		a := &as[i]
		if i > 0 {
			b = append(b, ',')
		}
		b = e.appendDict(append(b, '['), 0, a.Backend)
		b = e.appendDict(append(b, ','), 1, a.Deployment)
		b = e.appendDict(append(b, ','), 2, a.Model)
		b = appendInt64(append(b, ','), int64(a.Status))
		b = e.appendDict(append(b, ','), 3, a.ErrorType)
		b = appendInt64(append(b, ','), a.Duration.Milliseconds())
		b = appendFlag(append(b, ','), a.Continued)
		b = appendInt64(append(b, ','), a.PromptTokens)
		b = appendInt64(append(b, ','), a.CompletionTokens)
		b = append(b, ']')
	}
	return append(b, ']')
}

// appendDict appends s, a text of dictionary field f (e.last's): "" as it is, else its
// index in the batch's dictionary (added there the first time, while it has room), else s.
func (e *batchEncoder) appendDict(b []byte, f int, s string) []byte {
	if s == "" {
		return append(b, '"', '"')
	}
	last := &e.last[f]
	if last.s != s {
		i, ok := e.texts[s]
		if !ok {
			if len(e.texts) >= maxBatchTexts {
				return appendJSONText(b, s)
			}
			i = len(e.texts)
			e.texts[s] = i
			if i > 0 {
				e.dict = append(e.dict, ',')
			}
			e.dict = appendJSONText(e.dict, s)
		}
		last.s, last.i = s, i
	}
	return appendInt64(b, int64(last.i))
}

// appendOpt appends s as a JSON string, "" as null.
func appendOpt(b []byte, s string) []byte {
	if s == "" {
		return append(b, "null"...)
	}
	return appendJSONText(b, s)
}

// decodeBatchRow appends the records of data, a batch row of the given format (8 or 9),
// to out (decodeBatch, decodeBatchV9).
func decodeBatchRow(format int64, data string, first int64, out []Record) ([]Record, error) {
	switch format {
	case 8:
		return decodeBatch(data, first, out)
	case 9:
		return decodeBatchV9(data, first, out)
	}
	return out, fmt.Errorf("%w: format %d", errBatch, format)
}

// decodeBatchV9 appends the records of data, a form 9 batch row's (appendBatch's), the
// first place of which has id first, to out: as decodeBatch, with the routes, at most
// maxBatchRecords of them. Anything but the form appendBatch writes with fields of their
// kinds is an error naming the route or the record and the field.
func decodeBatchV9(data string, first int64, out []Record) ([]Record, error) {
	return decodeForm(data, first, out, 9)
}

// decodeRoutes reads the routes at the cursor (an array of appendRoute's arrays, at
// most maxBatchRecords).
func decodeRoutes(sc *jsonx.Scanner, texts []string) ([]Record, error) {
	if sc.Peek() != '[' {
		return nil, fmt.Errorf("%w: the routes are not an array", errBatch)
	}
	var routes []Record
	for k := 0; sc.NextElem(&k); {
		if k > maxBatchRecords {
			return nil, fmt.Errorf("%w: more than %d routes", errBatch, maxBatchRecords)
		}
		routes = append(routes, Record{})
		if err := decodeRoute(sc, &routes[k-1], texts); err != nil {
			return nil, fmt.Errorf("%w: route %d: %w", errBatch, k-1, err)
		}
	}
	return routes, nil
}

// decodeRoute reads the route at the cursor (appendRoute's array, all ten fields) into
// r's route fields.
func decodeRoute(sc *jsonx.Scanner, r *Record, texts []string) error {
	k, err := eachField(sc, len(routeFields), func(k int, v *jsonx.Value) error {
		if err := setField(r, routeFields[k].col, routeFields[k].kind, v, 0, texts); err != nil {
			return fmt.Errorf("%s: %w", routeFields[k].col, err)
		}
		return nil
	})
	if err == nil && k != len(routeFields) {
		err = fmt.Errorf("%d fields, want %d", k, len(routeFields))
	}
	return err
}

// decodeRecordV9 reads the record at the cursor (appendRecord's array) into r: times
// from base, dictionary texts from texts, its route's fields from routes.
func decodeRecordV9(sc *jsonx.Scanner, r *Record, base int64, texts []string, routes []Record) error {
	k, err := eachField(sc, len(batchFieldsV9), func(k int, v *jsonx.Value) error {
		f := batchFieldsV9[k]
		var err error
		switch {
		case f.col == "route":
			var i int64
			if v.Kind != jsonx.Number {
				err = errors.New("not a number")
			} else if i, err = strconv.ParseInt(v.Raw, 10, 64); err != nil || i < 0 || i >= int64(len(routes)) {
				err = fmt.Errorf("route %s of %d", v.Raw, len(routes))
			} else {
				p := &routes[i]
				r.Key, r.Team, r.API, r.Model, r.Served, r.Backend, r.Deployment = p.Key, p.Team, p.API, p.Model, p.Served, p.Backend, p.Deployment
				r.Stream, r.Status, r.ErrorType = p.Stream, p.Status, p.ErrorType
			}
		case f.col == "attempts" && v.Kind == jsonx.Number: // one attempt, its route's
			var ms int64
			if ms, err = strconv.ParseInt(v.Raw, 10, 64); err == nil {
				a := [1]Attempt{{Backend: r.Backend, Deployment: r.Deployment, Model: r.Served, Status: r.Status,
					ErrorType: r.ErrorType, Duration: time.Duration(ms) * time.Millisecond,
					PromptTokens: r.PromptTokens, CompletionTokens: r.CompletionTokens}}
				r.AttemptsJSON = string(appendAttempts(make([]byte, 0, 160), a[:]))
			} else {
				err = errors.New("not an integer")
			}
		default:
			err = setField(r, f.col, f.kind, v, base, texts)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", f.col, err)
		}
		return nil
	})
	if err == nil && k < 3 {
		err = errors.New("no route")
	}
	return err
}
