package ledger

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// The PostgreSQL writer encodes the raw records itself in COPY's binary format and sends
// them with pgconn's CopyFrom, instead of handing pgx.CopyFrom rows of []any: pgx boxes
// every value, looks up its encoder in its type map and encodes it field by field on a
// goroutine of its own, ~3 µs of CPU a record; appending the record's fields straight
// into one buffer a batch costs ~0.1-0.2 µs (docs/ledger.md, "The PostgreSQL writer,
// sixth session").
//
// The format is PostgreSQL's (https://www.postgresql.org/docs/current/sql-copy.html,
// "Binary Format"): an 11-byte signature "PGCOPY\n\377\r\n\0", a 32-bit flags field (0: no
// OIDs) and a 32-bit header extension length (0); then each tuple: a 16-bit field count
// and, for each field, a 32-bit length in bytes (-1: NULL, no bytes follow) and the
// value in its type's binary send format (int8 and int4 big-endian two's complement,
// float8 the IEEE 754 bits big-endian, boolean one byte 0 or 1, text the string's bytes);
// last a 16-bit -1. Every integer is in network byte order. The bytes are those pgx's
// CopyFrom sent for the same values (it uses the binary format too), so PostgreSQL
// accepts and refuses what it did: a text with a NUL byte or invalid UTF-8 fails the
// batch ("invalid byte sequence for encoding"), as it did.

// copyHeader starts a binary COPY: the signature, the flags and the extension's length.
const copyHeader = "PGCOPY\n\377\r\n\x00" + "\x00\x00\x00\x00" + "\x00\x00\x00\x00"

// copyTrailer ends a binary COPY: a field count of -1.
const copyTrailer = "\xff\xff"

// copySQL is the COPY of the raw records in the binary format, columns in columns'
// order (appendCopyRecord writes them in the PostgreSQL schema's types).
var copySQL = "COPY " + requestsTable + " (" + strings.Join(columns[:], ", ") + ") FROM STDIN (FORMAT binary)"

// copyBuf holds a batch's COPY data, reused from batch to batch by the writer's
// goroutine (insertWith is not called concurrently). Batches larger than copyKeep do
// not keep their buffer, so that one burst does not pin its memory.
type copyBuf struct {
	b      []byte
	r      bytes.Reader
	rollup rollupParams
}

// copyKeep is the largest buffer a copyBuf keeps between batches, 2 MiB: a batch of
// 4,000 records of ~300 bytes fits.
const copyKeep = 2 << 20

// copyRecords sends recs to PostgreSQL with one COPY on pc, in its transaction.
func (c *copyBuf) copyRecords(ctx context.Context, pc *pgconn.PgConn, recs []Record) error {
	b, err := appendCopy(c.b[:0], recs)
	if err != nil {
		return err
	}
	if cap(b) <= copyKeep {
		c.b = b
	} else {
		c.b = nil
	}
	c.r.Reset(b)
	_, err = pc.CopyFrom(ctx, &c.r, copySQL)
	c.r.Reset(nil)
	return err
}

// appendCopy appends the binary COPY data of recs: header, one tuple a record, trailer.
func appendCopy(b []byte, recs []Record) ([]byte, error) {
	b = append(b, copyHeader...)
	for i := range recs {
		var err error
		if b, err = appendCopyRecord(b, &recs[i]); err != nil {
			return b, err
		}
	}
	return append(b, copyTrailer...), nil
}

// appendCopyRecord appends r's tuple: the values of insertArgs, in columns' order, in
// the column types of the PostgreSQL schema (schema.go, attempts.go, tools.go). A
// duration or count out of int4's range is an error naming the column, as pgx's was.
func appendCopyRecord(b []byte, r *Record) ([]byte, error) {
	b = binary.BigEndian.AppendUint16(b, uint16(len(columns)))
	b = appendInt8(b, r.Time.UnixMicro()) // ts_us
	for _, s := range [...]string{r.RequestID, r.Key, r.Team, r.API, r.Model, r.Served, r.Backend} {
		b = appendText(b, s)
	}
	b = appendBool(b, r.Stream)
	ints := [...]struct {
		col string
		v   int64
	}{{"status", int64(r.Status)}, {"total_ms", r.Total.Milliseconds()}, {"first_token_ms", r.FirstToken.Milliseconds()},
		{"upstream_ms", r.Upstream.Milliseconds()}, {"tool_calls", int64(r.ToolCalls)}, {"fallbacks", int64(r.Fallbacks)},
		{"attempts_omitted", int64(r.AttemptsOmitted)}, {"tools_omitted", int64(r.ToolsOmitted)}}
	for _, f := range ints {
		if f.v < math.MinInt32 || f.v > math.MaxInt32 {
			return b, fmt.Errorf("%s %d is out of the int4 range", f.col, f.v)
		}
	}
	b = appendInt4(b, ints[0].v) // status
	b = appendText(b, r.ErrorType)
	for _, v := range [...]int64{r.PromptTokens, r.CachedReadTokens, r.CacheWriteTokens, r.CompletionTokens, r.ReasoningTokens} {
		b = appendInt8(b, v)
	}
	b = appendField(b, 8) // cost_usd: float8
	b = binary.BigEndian.AppendUint64(b, math.Float64bits(r.CostUSD))
	b = appendBool(b, r.Estimated)
	for _, f := range ints[1:6] { // total_ms … fallbacks
		b = appendInt4(b, f.v)
	}
	b = appendBool(b, r.CacheHit)
	b = appendNullText(b, r.Prompt) // NULL unless captured
	b = appendNullText(b, r.Completion)
	for _, s := range [...]string{r.Deployment, r.TraceID, r.ContinuedFrom} {
		b = appendText(b, s)
	}
	var one [1]Attempt
	if as := r.attemptList(&one); len(as) == 0 { // attempts: NULL when none (attemptsText)
		b = appendNull(b)
	} else {
		at := len(b)
		b = appendAttempts(appendField(b, 0), as)
		setFieldLen(b, at)
	}
	b = appendInt4(b, ints[6].v) // attempts_omitted
	if len(r.Tools) == 0 {       // tools: NULL when none ran (toolsText)
		b = appendNull(b)
	} else {
		at := len(b)
		b = appendTools(appendField(b, 0), r.Tools)
		setFieldLen(b, at)
	}
	return appendInt4(b, ints[7].v), nil // tools_omitted
}

// appendField appends a field's length.
func appendField(b []byte, n int) []byte { return binary.BigEndian.AppendUint32(b, uint32(n)) }

// setFieldLen sets the length of the field whose length is at b[at:] to the bytes after it.
func setFieldLen(b []byte, at int) {
	binary.BigEndian.PutUint32(b[at:], uint32(len(b)-at-4))
}

// appendNull appends a NULL field.
func appendNull(b []byte) []byte { return append(b, 0xff, 0xff, 0xff, 0xff) }

// appendInt8 appends a bigint field.
func appendInt8(b []byte, v int64) []byte {
	return binary.BigEndian.AppendUint64(appendField(b, 8), uint64(v))
}

// appendInt4 appends an integer field; v is in int4's range (the caller checked).
func appendInt4(b []byte, v int64) []byte {
	return binary.BigEndian.AppendUint32(appendField(b, 4), uint32(int32(v)))
}

// appendBool appends a boolean field.
func appendBool(b []byte, v bool) []byte {
	if v {
		return append(appendField(b, 1), 1)
	}
	return append(appendField(b, 1), 0)
}

// appendText appends a text field (its bytes as they are; strings are bounded by Add,
// far under the format's 1 GB field limit).
func appendText(b []byte, s string) []byte { return append(appendField(b, len(s)), s...) }

// appendNullText appends a text field, NULL when s is empty.
func appendNullText(b []byte, s string) []byte {
	if s == "" {
		return appendNull(b)
	}
	return appendText(b, s)
}

// The rollups' upserts go the same way: pgx encoded every row's 15 values, boxed in
// []any, through its type map (as much CPU a batch as the records' COPY once that was
// cut). upsertRollups binds them in the binary format from one buffer, into the
// statements of writeChunks' sizes prepared once a connection (pgx.Conn.Prepare keeps
// them by name), all in one round trip.

// rollupOIDs are the PostgreSQL types of a rollup row's parameters, in rollupDims' then
// rollupColumns' order (schema.go): checked against the prepared statement's, so that a
// schema the encoder does not match is an error, never a misread value.
var rollupOIDs = [...]uint32{20, 25, 25, 25, 23, 25, 20, 20, 20, 20, 20, 20, 20, 701, 20} // int8, text, int4, float8

// binaryFormat is the format code of every parameter: binary.
var binaryFormat = []int16{1}

// rollupParams holds a chunk's parameters: their bytes and the bounds of each, reused.
type rollupParams struct {
	vals   []byte
	ends   []int
	params [][]byte
}

// upsertRollups adds each table's rows to it on pc, in its transaction.
func (c *copyBuf) upsertRollups(ctx context.Context, pc *pgx.Conn, st *stmts, rollups []rollupRows) error {
	var b pgconn.Batch
	for ti, rows := range rollups {
		table := rollupTables[ti].name
		err := eachChunk(len(rows), func(i, j int) error {
			sd, err := pc.Prepare(ctx, "agate_ledger_"+table+"_"+strconv.Itoa(j-i), st.sql(&postgresDialect, table, j-i))
			if err != nil {
				return err
			}
			if len(sd.ParamOIDs) != (j-i)*len(rollupOIDs) || !slices.Equal(sd.ParamOIDs[:len(rollupOIDs)], rollupOIDs[:]) {
				return fmt.Errorf("the parameters' types %v are not the encoder's %v", sd.ParamOIDs[:min(len(sd.ParamOIDs), len(rollupOIDs))], rollupOIDs)
			}
			b.ExecPrepared(sd.Name, c.rollup.bind(rows[i:j]), binaryFormat, nil)
			return nil
		})
		if err != nil {
			return fmt.Errorf("ledger: updating %s: %w", table, err)
		}
	}
	if len(rollups) == 0 {
		return nil
	}
	mr := pc.PgConn().ExecBatch(ctx, &b)
	for mr.NextResult() {
		_, _ = mr.ResultReader().Close()
	}
	if err := mr.Close(); err != nil {
		return fmt.Errorf("ledger: updating the rollups: %w", err)
	}
	return nil
}

// bind encodes rows' values (rollupOIDs' types) and returns them, valid until the next
// call. A status out of int4's range cannot come here: the records' COPY refused it.
func (p *rollupParams) bind(rows []rollupRow) [][]byte {
	p.vals, p.ends = p.vals[:0], p.ends[:0]
	be := binary.BigEndian
	for k := range rows {
		r := &rows[k]
		p.vals = be.AppendUint64(p.vals, uint64(r.bucket))
		p.ends = append(p.ends, len(p.vals))
		for _, s := range [...]string{r.key, r.team, r.model} {
			p.vals = append(p.vals, s...)
			p.ends = append(p.ends, len(p.vals))
		}
		p.vals = be.AppendUint32(p.vals, uint32(int32(r.status)))
		p.ends = append(p.ends, len(p.vals))
		p.vals = append(p.vals, r.deployment...)
		p.ends = append(p.ends, len(p.vals))
		for _, v := range [...]int64{r.requests, r.errors, r.prompt, r.cachedRead, r.cacheWrite, r.completion, r.reasoning} {
			p.vals = be.AppendUint64(p.vals, uint64(v))
			p.ends = append(p.ends, len(p.vals))
		}
		p.vals = be.AppendUint64(p.vals, math.Float64bits(r.costUSD))
		p.ends = append(p.ends, len(p.vals))
		p.vals = be.AppendUint64(p.vals, uint64(r.totalMS))
		p.ends = append(p.ends, len(p.vals))
	}
	p.params = p.params[:0]
	start := 0
	for _, end := range p.ends {
		p.params = append(p.params, p.vals[start:end:end])
		start = end
	}
	return p.params
}
