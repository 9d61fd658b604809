package ledger

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/agate-gateway/agate/internal/jsonx"
)

// On SQLite, from schema version 8, the raw records are stored a batch to a row: the
// table ledger_request_batches holds, for up to maxBatchRecords records the writer wrote
// together, the ids of the first and the last (a batch's records take consecutive ids:
// a record's id is first_id plus its index), the bounds of their times (first_us,
// last_us), their count n and data, the records themselves as one JSON array of
// positional arrays in columns' order (appendBatchRecord). SQLite then inserts a row
// and an index entry a batch where it inserted a row of 33 columns and an index entry a
// record: the writer's CPU a record goes from ~3 µs to about a third (docs/ledger.md,
// "The SQLite writer, seventh session"). The listings, the record by id and the
// overview's newest records decode the batches in Go (decodeBatch); a view,
// ledger_requests, gives operators' SQL the version 7 columns back through json_each.
// PostgreSQL keeps a row a record (COPY costs the gateway the same either way): its
// version 8 changes nothing.

// batchesTable is the raw records' batches (SQLite).
const batchesTable = "ledger_request_batches"

// maxBatchRecords bounds the records of a batch row: the writer cuts a larger write into
// rows of at most this many, the migration from version 7 too, and a reader refuses a
// row that holds more. It bounds what one decode holds (and lets a listing bound the
// ids of the rows it needs: last_id < first_id + maxBatchRecords).
const maxBatchRecords = 256

// batchColumns is the view's select list: each column of columns out of its place in a
// record's array (value, json_each's), and the id.
func batchColumns() string {
	var b strings.Builder
	b.WriteString("b.first_id + r.key AS id")
	for i, c := range columns {
		b.WriteString(", r.value ->> " + strconv.Itoa(i) + " AS " + c)
	}
	return b.String()
}

// schemaV8SQLite is version 8 on SQLite: the batches' table, filled from the records
// there are (runs of consecutive ids, cut at every multiple of maxBatchRecords), its
// AUTOINCREMENT sequence continuing the records', the records' table dropped and the
// view in its place. A boolean is stored as 0 or 1, a float always with a point (0.0),
// attempts and tools as the JSON they are, prompt and completion null when empty: what
// json_each gives back is what the version 7 columns held.
func schemaV8SQLite() string {
	var rec strings.Builder
	for i, c := range columns {
		if i > 0 {
			rec.WriteString(", ")
		}
		switch c {
		case "attempts", "tools":
			rec.WriteString("json(" + c + ")")
		case "cost_usd":
			rec.WriteString("CAST(" + c + " AS REAL)")
		default:
			rec.WriteString(c)
		}
	}
	n := strconv.Itoa(maxBatchRecords)
	return `CREATE TABLE ` + batchesTable + ` (
  last_id INTEGER PRIMARY KEY AUTOINCREMENT,
  first_id INTEGER NOT NULL,
  first_us INTEGER NOT NULL,
  last_us INTEGER NOT NULL,
  n INTEGER NOT NULL,
  data TEXT NOT NULL
);
CREATE INDEX ledger_request_batches_last_us ON ` + batchesTable + ` (last_us);
CREATE INDEX ledger_request_batches_first_us ON ` + batchesTable + ` (first_us);
INSERT INTO ` + batchesTable + ` (last_id, first_id, first_us, last_us, n, data)
  SELECT MAX(id), MIN(id), MIN(ts_us), MAX(ts_us), COUNT(*), json_group_array(json(rec) ORDER BY id)
  FROM (SELECT id, ts_us, id - ROW_NUMBER() OVER (ORDER BY id) AS run, json_array(` + rec.String() + `) AS rec FROM ledger_requests)
  GROUP BY run, (id - 1) / ` + n + `;
INSERT INTO sqlite_sequence (name, seq) SELECT '` + batchesTable + `', 0
  WHERE NOT EXISTS (SELECT 1 FROM sqlite_sequence WHERE name = '` + batchesTable + `');
UPDATE sqlite_sequence SET seq = MAX(seq, COALESCE((SELECT MAX(seq) FROM sqlite_sequence WHERE name = 'ledger_requests'), 0))
  WHERE name = '` + batchesTable + `';
DROP TABLE ledger_requests;
CREATE VIEW ledger_requests AS SELECT ` + batchColumns() + `
  FROM ` + batchesTable + ` AS b, json_each(b.data) AS r WHERE r.type = 'array';
`
}

// batchSQL is the INSERT of a batch row (SQLite).
func batchSQL() string {
	return "INSERT INTO " + batchesTable + " (last_id, first_id, first_us, last_us, n, data) VALUES (?, ?, ?, ?, ?, ?)"
}

// appendBatch appends recs (at most maxBatchRecords) as a batch's data: a JSON array of
// their arrays.
func appendBatch(b []byte, recs []Record) []byte {
	b = append(b, '[')
	for i := range recs {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendBatchRecord(b, &recs[i])
	}
	return append(b, ']')
}

// appendBatchRecord appends r as a JSON array of its columns' values in columns' order:
// integers, booleans as 0 or 1, cost_usd as a number with a point or an exponent (null
// if it is not finite, which no column could hold either), texts as JSON strings of
// their bytes as they are (appendJSONText), prompt and completion null when empty, attempts
// and tools as their JSON arrays (appendAttempts, appendTools) or null when none.
func appendBatchRecord(b []byte, r *Record) []byte {
	b = strconv.AppendInt(append(b, '['), r.Time.UnixMicro(), 10)
	for _, s := range [...]string{r.RequestID, r.Key, r.Team, r.API, r.Model, r.Served, r.Backend} {
		b = appendJSONText(append(b, ','), s)
	}
	b = appendFlag(append(b, ','), r.Stream)
	b = strconv.AppendInt(append(b, ','), int64(r.Status), 10)
	b = appendJSONText(append(b, ','), r.ErrorType)
	for _, n := range [...]int64{r.PromptTokens, r.CachedReadTokens, r.CacheWriteTokens, r.CompletionTokens, r.ReasoningTokens} {
		b = strconv.AppendInt(append(b, ','), n, 10)
	}
	b = appendReal(append(b, ','), r.CostUSD)
	b = appendFlag(append(b, ','), r.Estimated)
	for _, n := range [...]int64{r.Total.Milliseconds(), r.FirstToken.Milliseconds(), r.Upstream.Milliseconds(),
		int64(r.ToolCalls), int64(r.Fallbacks)} {
		b = strconv.AppendInt(append(b, ','), n, 10)
	}
	b = appendFlag(append(b, ','), r.CacheHit)
	for _, s := range [...]string{r.Prompt, r.Completion} {
		if b = append(b, ','); s == "" {
			b = append(b, "null"...)
		} else {
			b = appendJSONText(b, s)
		}
	}
	for _, s := range [...]string{r.Deployment, r.TraceID, r.ContinuedFrom} {
		b = appendJSONText(append(b, ','), s)
	}
	switch b = append(b, ','); {
	case len(r.Attempts) > 0:
		b = appendAttempts(b, r.Attempts)
	case r.AttemptsJSON != "": // a record read back (the pruner's rewrite)
		b = append(b, r.AttemptsJSON...)
	default:
		b = append(b, "null"...)
	}
	b = strconv.AppendInt(append(b, ','), int64(r.AttemptsOmitted), 10)
	switch b = append(b, ','); {
	case len(r.Tools) > 0:
		b = appendTools(b, r.Tools)
	case r.ToolsJSON != "":
		b = append(b, r.ToolsJSON...)
	default:
		b = append(b, "null"...)
	}
	b = strconv.AppendInt(append(b, ','), int64(r.ToolsOmitted), 10)
	return append(b, ']')
}

// appendFlag appends v as 1 or 0 (SQLite's booleans).
func appendFlag(b []byte, v bool) []byte {
	if v {
		return append(b, '1')
	}
	return append(b, '0')
}

// appendReal appends f as a JSON number SQLite reads as a REAL (with a point or an
// exponent), or null when f is not finite.
func appendReal(b []byte, f float64) []byte {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return append(b, "null"...)
	}
	start := len(b)
	b = strconv.AppendFloat(b, f, 'g', -1, 64)
	for _, c := range b[start:] {
		if c == '.' || c == 'e' {
			return b
		}
	}
	return append(b, ".0"...)
}

// appendJSONText appends s as a JSON string holding s's bytes as they are: '"', '\' and the
// control characters escaped, nothing else (invalid UTF-8 is kept, not replaced as
// jsonx.AppendString replaces it), so that every text reads back as it was written.
func appendJSONText(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		b = append(b, s[start:i]...)
		switch c {
		case '"', '\\':
			b = append(b, '\\', c)
		case '\n':
			b = append(b, '\\', 'n')
		case '\t':
			b = append(b, '\\', 't')
		case '\r':
			b = append(b, '\\', 'r')
		default:
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		}
		start = i + 1
	}
	return append(append(b, s[start:]...), '"')
}

// errBatch is a batch row that cannot be read.
var errBatch = errors.New("ledger: a stored batch of records is malformed")

// decodeBatch appends the records of data, a batch row's records (appendBatch's form),
// the first of which has id first, to out. A null in a record's place is a record the
// pruner took out (its id is not reused): it is skipped. At most maxBatchRecords are read: a row
// holding more, or anything but an array of records of columns' values of their kinds,
// is an error naming the record and the column. The records' texts are data's
// substrings or decoded from it (never more than data's bytes).
func decodeBatch(data string, first int64, out []Record) ([]Record, error) {
	sc := jsonx.NewScanner(data)
	if sc.Peek() != '[' {
		return out, fmt.Errorf("%w: not an array", errBatch)
	}
	n := 0
	for i := 0; sc.NextElem(&i); {
		if i > maxBatchRecords {
			return out, fmt.Errorf("%w: more than %d records", errBatch, maxBatchRecords)
		}
		if sc.Peek() == 'n' { // a record the pruner took out of a row it kept
			if !sc.Literal("null") {
				break
			}
			n = i
			continue
		}
		out = append(out, Record{ID: first + int64(i-1)})
		if err := decodeRecord(&sc, &out[len(out)-1]); err != nil {
			return out, fmt.Errorf("%w: record %d: %w", errBatch, i-1, err)
		}
		n = i
	}
	if sc.Failed() || !sc.AtEnd() {
		return out, fmt.Errorf("%w: bad JSON after %d records", errBatch, n)
	}
	return out, nil
}

// decodeRecord reads the record at the cursor (appendBatchRecord's array) into r.
func decodeRecord(sc *jsonx.Scanner, r *Record) error {
	if sc.Peek() != '[' {
		return errors.New("not an array")
	}
	var v jsonx.Value
	k := 0
	for sc.NextElem(&k) {
		if k > len(columns) {
			return fmt.Errorf("more than %d columns", len(columns))
		}
		v = jsonx.Value{}
		if !sc.Value(&v) {
			break
		}
		if err := setColumn(r, k-1, &v); err != nil {
			return fmt.Errorf("%s: %w", columns[k-1], err)
		}
	}
	if sc.Failed() {
		return errors.New("bad JSON")
	}
	if k != len(columns) {
		return fmt.Errorf("%d columns, want %d", k, len(columns))
	}
	return nil
}

// setColumn sets r's field of column i (columns' index) to v.
func setColumn(r *Record, i int, v *jsonx.Value) error {
	var err error
	integer := func() int64 {
		if v.Kind != jsonx.Number {
			err = errors.New("not a number")
			return 0
		}
		n, perr := strconv.ParseInt(v.Raw, 10, 64)
		if perr != nil {
			err = errors.New("not an integer")
		}
		return n
	}
	text := func() string {
		if v.Kind != jsonx.String {
			err = errors.New("not a string")
		}
		return v.Str
	}
	flag := func() bool {
		n := integer()
		if err == nil && n != 0 && n != 1 {
			err = errors.New("not 0 or 1")
		}
		return n == 1
	}
	nullable := func() string { // a text or null (Go's "")
		if v.Kind == jsonx.Null {
			return ""
		}
		return text()
	}
	array := func() string { // the JSON of an array, or null ("")
		switch v.Kind {
		case jsonx.Null:
			return ""
		case jsonx.Array:
			return v.Raw
		}
		err = errors.New("not an array")
		return ""
	}
	ms := func() time.Duration { return time.Duration(integer()) * time.Millisecond }
	switch columns[i] {
	case "ts_us":
		r.Time = time.UnixMicro(integer()).UTC()
	case "request_id":
		r.RequestID = text()
	case "key_name":
		r.Key = text()
	case "team":
		r.Team = text()
	case "api":
		r.API = text()
	case "model":
		r.Model = text()
	case "served_model":
		r.Served = text()
	case "backend":
		r.Backend = text()
	case "stream":
		r.Stream = flag()
	case "status":
		r.Status = int(integer())
	case "error_type":
		r.ErrorType = text()
	case "prompt_tokens":
		r.PromptTokens = integer()
	case "cached_read_tokens":
		r.CachedReadTokens = integer()
	case "cache_write_tokens":
		r.CacheWriteTokens = integer()
	case "completion_tokens":
		r.CompletionTokens = integer()
	case "reasoning_tokens":
		r.ReasoningTokens = integer()
	case "cost_usd":
		switch v.Kind {
		case jsonx.Null:
			r.CostUSD = 0
		case jsonx.Number:
			r.CostUSD, err = strconv.ParseFloat(v.Raw, 64)
		default:
			err = errors.New("not a number")
		}
	case "usage_estimated":
		r.Estimated = flag()
	case "total_ms":
		r.Total = ms()
	case "first_token_ms":
		r.FirstToken = ms()
	case "upstream_ms":
		r.Upstream = ms()
	case "tool_calls":
		r.ToolCalls = int(integer())
	case "fallbacks":
		r.Fallbacks = int(integer())
	case "cache_hit":
		r.CacheHit = flag()
	case "prompt":
		r.Prompt = nullable()
	case "completion":
		r.Completion = nullable()
	case "deployment":
		r.Deployment = text()
	case "trace_id":
		r.TraceID = text()
	case "continued_from":
		r.ContinuedFrom = text()
	case "attempts":
		r.AttemptsJSON = array()
	case "attempts_omitted":
		r.AttemptsOmitted = int(integer())
	case "tools":
		r.ToolsJSON = array()
	case "tools_omitted":
		r.ToolsOmitted = int(integer())
	}
	return err
}
