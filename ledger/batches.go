package ledger

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agate-gateway/agate/internal/jsonx"
)

// On SQLite, from schema version 8, the raw records are stored a batch to a row: the
// table ledger_request_batches holds, for up to maxBatchRecords records the writer wrote
// together, the ids of the first and the last (a batch's records take consecutive ids:
// a record's id is first_id plus its place), the bounds of their times (first_us,
// last_us), their count n and data, the records themselves in one JSON array (appendBatch):
//
//	[base_us, [text, ...], record, record, ...]
//
// base_us is the time the records' times are stored from (the batch's earliest), the
// array of texts the batch's dictionary, and each record an array of its fields in
// batchFields' order: a time as microseconds after base_us, a text that repeats (key,
// team, model, ...) as its index in the dictionary, the fields at the end that hold
// their default (0, "", null) left out. A record the pruner took out is a null in its
// place. SQLite then inserts a row and an index entry a batch where it inserted a row of
// 33 columns and an index entry a record, and writes about a quarter of the bytes
// (docs/ledger.md, "The SQLite writer, seventh session"). The listings, the record by id
// and the overview's newest records decode the batches in Go (decodeBatch); a view,
// ledger_requests, gives operators' SQL the version 7 columns back through json_each.
// PostgreSQL keeps a row a record (COPY costs the gateway the same either way): its
// version 8 changes nothing. From version 9 the writer writes form 9 (batchv9.go); this
// file's form, form 8, is what the rows written before hold (their column format is 8),
// which decodeBatch reads.

// batchesTable is the raw records' batches (SQLite).
const batchesTable = "ledger_request_batches"

// maxBatchRecords bounds the records of a batch row: the writer cuts a larger write into
// rows of at most this many, the migration from version 7 too, and a reader refuses a
// row that holds more. It bounds what one decode holds (and lets a listing bound the
// ids of the rows it needs: last_id < first_id + maxBatchRecords).
const maxBatchRecords = 256

// maxBatchTexts bounds a batch's dictionary: the writer adds no text after this many
// (it writes the others as they are), a reader refuses a longer one.
const maxBatchTexts = 1024

// fieldKind is how a stored record holds a field.
type fieldKind uint8

const (
	fTime  fieldKind = iota // microseconds after the batch's base_us
	fInt                    // an integer, default 0
	fFlag                   // 0 or 1, default 0
	fReal                   // a number with a point or an exponent (null: not finite), default 0.0
	fText                   // a JSON string, default ""
	fDict                   // a JSON string or its index in the batch's texts, default ""
	fOpt                    // a JSON string or null, default null
	fArray                  // a JSON array or null, default null
)

// batchFields are a stored record's fields in their order in its array: the version 7
// columns, those most records leave at their defaults last.
var batchFields = [...]struct {
	col  string
	kind fieldKind
}{
	{"ts_us", fTime}, {"request_id", fText}, {"key_name", fDict}, {"team", fDict}, {"api", fDict},
	{"model", fDict}, {"served_model", fDict}, {"backend", fDict}, {"deployment", fDict}, {"stream", fFlag},
	{"status", fInt}, {"prompt_tokens", fInt}, {"completion_tokens", fInt}, {"cost_usd", fReal},
	{"total_ms", fInt}, {"first_token_ms", fInt}, {"upstream_ms", fInt}, {"trace_id", fText},
	{"cached_read_tokens", fInt}, {"error_type", fDict}, {"cache_write_tokens", fInt},
	{"reasoning_tokens", fInt}, {"usage_estimated", fFlag}, {"tool_calls", fInt}, {"fallbacks", fInt},
	{"cache_hit", fFlag}, {"attempts", fArray}, {"attempts_omitted", fInt}, {"tools", fArray},
	{"tools_omitted", fInt}, {"continued_from", fDict}, {"prompt", fOpt}, {"completion", fOpt},
}

// batchRecords is the offset of a batch's first record in its array (after base_us and
// the texts).
const batchRecords = 2

// batchColumns is the view's select list: the id, and each column of columns out of its
// place in a record's array (r.value, json_each's), its default when left out.
func batchColumns() string {
	place := map[string]int{}
	for i, f := range batchFields {
		place[f.col] = i
	}
	var b strings.Builder
	b.WriteString("b.first_id + r.key - " + strconv.Itoa(batchRecords) + " AS id")
	for _, c := range columns {
		p := strconv.Itoa(place[c])
		v := fieldSQL(batchFields[place[c]].kind, p)
		if c == "attempts" {
			v = attemptsSQL(p)
		}
		b.WriteString(", " + v + " AS " + c)
	}
	return b.String()
}

// fieldSQL is the view's value of a field stored as kind at place p of a record's array
// (r.value), its default when left out.
func fieldSQL(kind fieldKind, p string) string {
	v := "r.value ->> " + p
	switch kind {
	case fTime:
		v = "(b.data ->> 0) + " + v
	case fInt, fFlag:
		v = "COALESCE(" + v + ", 0)"
	case fReal:
		v = "COALESCE(" + v + ", 0.0)"
	case fText:
		v = "COALESCE(" + v + ", '')"
	case fDict:
		v = "COALESCE(" + dictSQL("r.value", p) + ", '')"
	}
	return v
}

// dictSQL is the text at place p of the JSON array val: a string, or its index in the
// batch's texts (b.data's second element).
func dictSQL(val, p string) string {
	return "CASE json_type(" + val + ", '$[" + p + "]') WHEN 'integer' THEN b.data -> 1 ->> (" + val + " ->> " + p +
		") ELSE " + val + " ->> " + p + " END"
}

// attemptsSQL is the view's attempts column out of a record's place p: the stored arrays
// (appendAttempts' form) as appendAttempts' objects, or the objects the migration kept.
func attemptsSQL(p string) string {
	obj := "json_object('backend', " + dictSQL("a.value", "0") + ", 'deployment', " + dictSQL("a.value", "1") +
		", 'model', " + dictSQL("a.value", "2") + ", 'status', a.value ->> 3, 'error_type', " + dictSQL("a.value", "4") +
		", 'duration_ms', a.value ->> 5, 'continued', json(CASE a.value ->> 6 WHEN 1 THEN 'true' ELSE 'false' END)" +
		", 'prompt_tokens', a.value ->> 7, 'completion_tokens', a.value ->> 8)"
	return "CASE json_type(r.value, '$[" + p + "][0]') WHEN 'array' THEN (SELECT json_group_array(" + obj +
		") FROM json_each(r.value, '$[" + p + "]') AS a) ELSE r.value ->> " + p + " END"
}

// schemaV8SQLite is version 8 on SQLite: the batches' table, filled from the records
// there are (runs of consecutive ids, cut at every multiple of maxBatchRecords; each
// record's every field written, no dictionary), its AUTOINCREMENT sequence continuing
// the records', the records' table dropped and the view in its place.
func schemaV8SQLite() string {
	var rec strings.Builder
	for i, f := range batchFields {
		if i > 0 {
			rec.WriteString(", ")
		}
		switch f.kind {
		case fTime:
			rec.WriteString(f.col + " - MIN(ts_us) OVER run")
		case fArray:
			rec.WriteString("json(" + f.col + ")")
		case fReal:
			rec.WriteString("CAST(" + f.col + " AS REAL)")
		default:
			rec.WriteString(f.col)
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
  SELECT MAX(id), MIN(id), MIN(ts_us), MAX(ts_us), COUNT(*), '[' || MIN(ts_us) || ',[],' || group_concat(rec, ',' ORDER BY id) || ']'
  FROM (SELECT id, ts_us, run, part, json_array(` + rec.String() + `) AS rec
    FROM (SELECT *, id - ROW_NUMBER() OVER (ORDER BY id) AS run, (id - 1) / ` + n + ` AS part FROM ledger_requests)
    WINDOW run AS (PARTITION BY run, part))
  GROUP BY run, part;
INSERT INTO sqlite_sequence (name, seq) SELECT '` + batchesTable + `', 0
  WHERE NOT EXISTS (SELECT 1 FROM sqlite_sequence WHERE name = '` + batchesTable + `');
UPDATE sqlite_sequence SET seq = MAX(seq, COALESCE((SELECT MAX(seq) FROM sqlite_sequence WHERE name = 'ledger_requests'), 0))
  WHERE name = '` + batchesTable + `';
DROP TABLE ledger_requests;
CREATE VIEW ledger_requests AS SELECT ` + batchColumns() + `
  FROM ` + batchesTable + ` AS b, json_each(b.data) AS r WHERE r.key >= ` + strconv.Itoa(batchRecords) + ` AND r.type = 'array';
`
}

// decodeAttempts returns the JSON of raw, a stored record's attempts: raw itself when it
// is an array of objects (a row the migration made), else its arrays (appendAttempts'
// form) as appendAttempts' objects, their texts from texts.
func decodeAttempts(raw string, texts []string) (string, error) {
	sc := jsonx.NewScanner(raw)
	if sc.Peek() != '[' {
		return "", errors.New("not an array")
	}
	var as []Attempt
	for i := 0; sc.NextElem(&i); {
		if i > MaxAttempts {
			return "", fmt.Errorf("more than %d attempts", MaxAttempts)
		}
		if i == 1 && sc.Peek() == '{' {
			return raw, nil // objects, as version 7 stored them (checked by the batch's scan)
		}
		if sc.Peek() != '[' {
			return "", fmt.Errorf("attempt %d is not an array", i-1)
		}
		var a Attempt
		k := 0
		for sc.NextElem(&k) {
			var v jsonx.Value
			if k > 9 || !sc.Value(&v) {
				return "", fmt.Errorf("attempt %d: more than 9 fields, or bad JSON", i-1)
			}
			var err error
			var n int64
			if k == 1 || k == 2 || k == 3 || k == 5 {
				var t string
				if t, err = dictText(&v, texts); err == nil {
					switch k {
					case 1:
						a.Backend = t
					case 2:
						a.Deployment = t
					case 3:
						a.Model = t
					default:
						a.ErrorType = t
					}
				}
			} else if v.Kind != jsonx.Number {
				err = errors.New("not a number")
			} else if n, err = strconv.ParseInt(v.Raw, 10, 64); err == nil {
				switch k {
				case 4:
					a.Status = int(n)
				case 6:
					a.Duration = time.Duration(n) * time.Millisecond
				case 7:
					if n != 0 && n != 1 {
						err = errors.New("not 0 or 1")
					}
					a.Continued = n == 1
				case 8:
					a.PromptTokens = n
				case 9:
					a.CompletionTokens = n
				}
			}
			if err != nil {
				return "", fmt.Errorf("attempt %d, field %d: %w", i-1, k-1, err)
			}
		}
		if sc.Failed() || k != 9 {
			return "", fmt.Errorf("attempt %d: %d fields, want 9", i-1, k)
		}
		as = append(as, a)
	}
	if sc.Failed() || !sc.AtEnd() {
		return "", errors.New("bad JSON")
	}
	if len(as) == 0 {
		return "", errors.New("empty")
	}
	return string(appendAttempts(make([]byte, 0, 160*len(as)), as)), nil
}

// dictText is v, a dictionary field's value: a string, or the index of one in texts.
func dictText(v *jsonx.Value, texts []string) (string, error) {
	switch v.Kind {
	case jsonx.String:
		return v.Str, nil
	case jsonx.Number:
		i, err := strconv.ParseInt(v.Raw, 10, 64)
		if err != nil || i < 0 || i >= int64(len(texts)) {
			return "", fmt.Errorf("text %s of %d", v.Raw, len(texts))
		}
		return texts[i], nil
	}
	return "", errors.New("not a string")
}

// appendInt64 appends n in decimal, as strconv.AppendInt(b, n, 10) does. Most of a
// record's numbers are small (zeros, a status, a dictionary index, a few tokens): those
// under 1,000 are written here, without the call and its general loop.
func appendInt64(b []byte, n int64) []byte {
	if uint64(n) < 10 { // inlined: the zeros and indexes most of a record's numbers are
		return append(b, byte('0'+n))
	}
	return appendInt64Slow(b, n)
}

// appendInt64Slow is appendInt64 of n ≥ 10 or negative: two digits at a time from a
// table (one division by 100 for each), strconv's below 0 and from 10^16 on. The digits
// are written in place, from the last, into b grown by their count (one comparison
// with a power of ten finds it), not into a buffer of their own copied after.
func appendInt64Slow(b []byte, n int64) []byte {
	switch {
	case uint64(n) < 100:
		return append(b, digitPairs[2*n], digitPairs[2*n+1])
	case uint64(n) < 1000:
		q := n / 100
		d := 2 * (n - 100*q)
		return append(b, byte('0'+q), digitPairs[d], digitPairs[d+1])
	case uint64(n) >= 1e16:
		return strconv.AppendInt(b, n, 10)
	}
	u := uint64(n)
	// k digits: bits.Len64(u)*1233>>12 is ⌊log10(2^len)⌋, which is u's digits less one
	// or its digits.
	k := bits.Len64(u) * 1233 >> 12
	if u >= pow10[k] {
		k++
	}
	b = slices.Grow(b, k)
	i := len(b) + k
	b = b[:i]
	for u >= 100 {
		q := u / 100
		d := 2 * (u - 100*q)
		i -= 2
		b[i], b[i+1] = digitPairs[d], digitPairs[d+1]
		u = q
	}
	if u >= 10 {
		b[i-2], b[i-1] = digitPairs[2*u], digitPairs[2*u+1]
	} else {
		b[i-1] = byte('0' + u)
	}
	return b
}

// pow10 are the powers of ten 10^0 to 10^16 (appendInt64Slow's k is at most 16: u <
// 10^16 has at most 54 bits).
var pow10 = [17]uint64{1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16}

// digitPairs are the numbers 00 to 99, two digits each.
const digitPairs = "00010203040506070809101112131415161718192021222324252627282930313233343536373839" +
	"40414243444546474849505152535455565758596061626364656667686970717273747576777879" +
	"8081828384858687888990919293949596979899"

// appendReal appends f as a JSON number SQLite reads as a REAL (with a point or an
// exponent), or null when f is not finite.
func appendReal(b []byte, f float64) []byte {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return append(b, "null"...)
	}
	if f == 0 {
		return append(b, "0.0"...)
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

// appendJSONText appends s as a JSON string holding s's bytes as they are: '"', '\' and
// the control characters escaped, nothing else (invalid UTF-8 is kept, not replaced as
// jsonx.AppendString replaces it), so that every text reads back as it was written.
// Its prefix with nothing to escape (all of a request or trace id, most often) is found
// eight bytes at a time (plainText) and copied whole.
func appendJSONText(b []byte, s string) []byte {
	if p := plainText(s); p < len(s) {
		return appendJSONTextFrom(b, s, p)
	}
	// All plain (an id): quoted here, without appendJSONTextFrom's loop and frame.
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// plainText is the length of s's prefix without a byte appendJSONText escapes ('"', '\',
// a control character), looked at eight bytes at a time: in each word, a byte's high bit
// is set in m where it is one of those (a byte of 0x80 or more never is). A borrow
// between bytes comes only from a byte that is one, so the lowest bit set is the first.
// (jsonx.PlainPrefix, which the encoder used before, also stops at '<', '>', '&' and
// bytes from 0x80 on, which this encoder writes as they are: twice the work a word.)
func plainText(s string) int {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	i := 0
	for ; i+8 <= len(s); i += 8 {
		t := s[i : i+8]
		w := uint64(t[0]) | uint64(t[1])<<8 | uint64(t[2])<<16 | uint64(t[3])<<24 |
			uint64(t[4])<<32 | uint64(t[5])<<40 | uint64(t[6])<<48 | uint64(t[7])<<56
		if m := (((w ^ (ones * '"')) - ones) | ((w ^ (ones * '\\')) - ones) | (w - ones*0x20)) &^ w & highs; m != 0 {
			return i + bits.TrailingZeros64(m)/8
		}
	}
	for ; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' {
			return i
		}
	}
	return i
}

// appendJSONTextFrom is appendJSONText given that s[:plain] has nothing to escape: it
// looks at the bytes from plain on one by one (0 looks at every byte).
func appendJSONTextFrom(b []byte, s string, plain int) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := plain; i < len(s); i++ {
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
// the first place of which has id first, to out. A null in a record's place is a record
// the pruner took out (its id is not reused): it is skipped. At most maxBatchRecords
// places and maxBatchTexts texts are read: a row holding more, or anything but the form
// appendBatch writes with fields of their kinds, is an error naming the record and the
// field. The records' texts are data's substrings or decoded from it (never more than
// data's bytes).
func decodeBatch(data string, first int64, out []Record) ([]Record, error) {
	return decodeForm(data, first, out, 8)
}

// decodeForm is decodeBatch (form 8) or decodeBatchV9 (form 9, batchv9.go): after
// base_us and the texts, form 9 has its routes.
func decodeForm(data string, first int64, out []Record, form int) ([]Record, error) {
	sc := jsonx.NewScanner(data)
	if sc.Peek() != '[' {
		return out, fmt.Errorf("%w: not an array", errBatch)
	}
	head := batchRecords // the elements before the records
	if form == 9 {
		head = v9Records
	}
	var base int64
	var texts []string
	var routes []Record
	n := 0
	for i := 0; sc.NextElem(&i); {
		n = i
		switch place := i - 1 - head; {
		case i == 1:
			var v jsonx.Value
			if !sc.Value(&v) || v.Kind != jsonx.Number {
				return out, fmt.Errorf("%w: base_us is not a number", errBatch)
			}
			var err error
			if base, err = strconv.ParseInt(v.Raw, 10, 64); err != nil {
				return out, fmt.Errorf("%w: base_us is not an integer", errBatch)
			}
		case i == 2:
			if sc.Peek() != '[' {
				return out, fmt.Errorf("%w: the texts are not an array", errBatch)
			}
			for k := 0; sc.NextElem(&k); {
				var v jsonx.Value
				if k > maxBatchTexts {
					return out, fmt.Errorf("%w: more than %d texts", errBatch, maxBatchTexts)
				}
				if !sc.Value(&v) || v.Kind != jsonx.String {
					return out, fmt.Errorf("%w: text %d is not a string", errBatch, k-1)
				}
				texts = append(texts, v.Str)
			}
		case i == 3 && form == 9:
			var err error
			if routes, err = decodeRoutes(&sc, texts); err != nil {
				return out, err
			}
		case place >= maxBatchRecords:
			return out, fmt.Errorf("%w: more than %d records", errBatch, maxBatchRecords)
		case sc.Peek() == 'n': // a record the pruner took out
			if !sc.Literal("null") {
				return out, fmt.Errorf("%w: record %d: bad JSON", errBatch, place)
			}
		default:
			out = append(out, Record{ID: first + int64(place)})
			var err error
			if form == 9 {
				err = decodeRecordV9(&sc, &out[len(out)-1], base, texts, routes)
			} else {
				err = decodeRecord(&sc, &out[len(out)-1], base, texts)
			}
			if err != nil {
				return out, fmt.Errorf("%w: record %d: %w", errBatch, place, err)
			}
		}
		if sc.Failed() {
			break
		}
	}
	if sc.Failed() || !sc.AtEnd() {
		return out, fmt.Errorf("%w: bad JSON after %d elements", errBatch, n)
	}
	if n < head && form == 9 {
		return out, fmt.Errorf("%w: no base_us, texts and routes", errBatch)
	} else if n < head {
		return out, fmt.Errorf("%w: no base_us and texts", errBatch)
	}
	return out, nil
}

// decodeRecord reads the record at the cursor (appendRecord's array) into r: times from
// base, dictionary texts from texts.
func decodeRecord(sc *jsonx.Scanner, r *Record, base int64, texts []string) error {
	k, err := eachField(sc, len(batchFields), func(k int, v *jsonx.Value) error {
		if err := setField(r, batchFields[k].col, batchFields[k].kind, v, base, texts); err != nil {
			return fmt.Errorf("%s: %w", batchFields[k].col, err)
		}
		return nil
	})
	if err == nil && k == 0 {
		err = errors.New("no time")
	}
	return err
}

// eachField calls fn with each element of the array at the cursor, at most max, and its
// place; it returns how many it read, and the first error (fn's, or of the array).
func eachField(sc *jsonx.Scanner, max int, fn func(k int, v *jsonx.Value) error) (int, error) {
	if sc.Peek() != '[' {
		return 0, errors.New("not an array")
	}
	k := 0
	for sc.NextElem(&k) {
		if k > max {
			return k, fmt.Errorf("more than %d fields", max)
		}
		var v jsonx.Value
		if !sc.Value(&v) {
			break
		}
		if err := fn(k-1, &v); err != nil {
			return k, err
		}
	}
	if sc.Failed() {
		return k, errors.New("bad JSON")
	}
	return k, nil
}

// setField sets r's field col, stored as kind, to v (times from base, dictionary texts
// from texts).
func setField(r *Record, col string, kind fieldKind, v *jsonx.Value, base int64, texts []string) error {
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
		switch {
		case v.Kind == jsonx.String:
			return v.Str
		case v.Kind == jsonx.Number && kind == fDict:
			i := integer()
			if err == nil && (i < 0 || i >= int64(len(texts))) {
				err = fmt.Errorf("text %d of %d", i, len(texts))
			}
			if err != nil {
				return ""
			}
			return texts[i]
		}
		err = errors.New("not a string")
		return ""
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
	switch col {
	case "ts_us":
		d := integer()
		if err == nil && (d < 0 || base > 0 && d > math.MaxInt64-base) {
			err = errors.New("out of range")
		}
		r.Time = time.UnixMicro(base + d).UTC()
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
		if raw := array(); raw != "" && err == nil {
			r.AttemptsJSON, err = decodeAttempts(raw, texts)
		}
	case "attempts_omitted":
		r.AttemptsOmitted = int(integer())
	case "tools":
		r.ToolsJSON = array()
	case "tools_omitted":
		r.ToolsOmitted = int(integer())
	}
	return err
}

// appendFlag appends v as 1 or 0 (SQLite's booleans).
func appendFlag(b []byte, v bool) []byte {
	if v {
		return append(b, '1')
	}
	return append(b, '0')
}
