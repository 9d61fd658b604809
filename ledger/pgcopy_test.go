package ledger

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
)

// hostileRecords are records whose values the COPY encoder must carry exactly: texts
// with COPY's text-format specials (tab, newline, carriage return, backslash, \N),
// quotes, multi-byte and 4-byte UTF-8, empty texts beside NULL ones, the integer
// types' limits, negative and special floats, attempts and tools.
func hostileRecords(at time.Time) []Record {
	specials := "a\tb\nc\rd\\e\\N\"f'g,h|i"
	unicode := "héllo wörld — 日本語 🦜\u2028\ufeff"
	return []Record{
		{Time: at, RequestID: "plain", Key: "k", Team: "t", API: "chat", Model: "m", Served: "m", Backend: "b", Status: 200},
		{Time: at.Add(time.Microsecond), RequestID: "specials", Key: specials, Team: specials, API: "responses", Model: unicode,
			Served: specials, Backend: unicode, ErrorType: specials, Prompt: specials, Completion: unicode, Deployment: specials,
			TraceID: unicode, ContinuedFrom: specials, Stream: true, Estimated: true, CacheHit: true, Status: 499},
		{Time: at.Add(2 * time.Microsecond), RequestID: `\N`, Key: `\N`, Team: "", API: "", Model: "", Prompt: `\N`, Completion: "\\",
			Status: -1, ErrorType: "", CostUSD: math.Copysign(0, -1)},
		{Time: at.Add(3 * time.Microsecond), RequestID: "limits", Key: "k", Status: math.MaxInt32, PromptTokens: math.MaxInt64,
			CachedReadTokens: math.MinInt64, CacheWriteTokens: -1, CompletionTokens: 1 << 40, ReasoningTokens: 7,
			CostUSD: math.SmallestNonzeroFloat64, Total: math.MaxInt32 * time.Millisecond, FirstToken: math.MinInt32 * time.Millisecond,
			Upstream: 1500 * time.Microsecond, ToolCalls: math.MaxInt32, Fallbacks: math.MinInt32,
			AttemptsOmitted: math.MaxInt32, ToolsOmitted: 1},
		{Time: at.Add(4 * time.Microsecond), RequestID: "floats", Key: "k", CostUSD: 0.1 + 0.2, Status: 200},
		{Time: at.Add(5 * time.Microsecond), RequestID: "max-float", Key: "k", CostUSD: math.MaxFloat64, Status: 200},
		{Time: at.Add(6 * time.Microsecond), RequestID: "attempts", Key: "k", Status: 502,
			Attempts: []Attempt{{Backend: "b\t1", Deployment: "b/\"x\"", Model: "m\n", Status: 0, ErrorType: "timeout", Duration: 3 * time.Second,
				Continued: true, PromptTokens: 5, CompletionTokens: 6}},
			Tools: []ToolUse{{Name: "search__web", Source: "sé\\arch", Calls: 3, Errors: 1, Duration: 1500 * time.Millisecond}}},
		{Time: at.Add(7 * time.Microsecond), RequestID: strings.Repeat("r", 128), Key: "k", Prompt: strings.Repeat("p\t\\", 40000),
			Completion: strings.Repeat("é\n", 30000), Status: 200},
	}
}

// stored is r as a read back record has it: the database's id aside, times in
// microseconds, durations in milliseconds, attempts and tools as their stored JSON.
func stored(r Record) Record {
	r.Time = time.UnixMicro(r.Time.UnixMicro())
	r.Total, r.FirstToken, r.Upstream = r.Total.Truncate(time.Millisecond), r.FirstToken.Truncate(time.Millisecond), r.Upstream.Truncate(time.Millisecond)
	if len(r.Attempts) > 0 {
		r.AttemptsJSON = attemptsText(r.Attempts).(string)
	}
	if len(r.Tools) > 0 {
		r.ToolsJSON = toolsText(r.Tools).(string)
	}
	r.Attempts, r.Tools = nil, nil
	return r
}

// pgxCopy is the writer of the fifth session, kept to compare with: pgx's CopyFrom of
// insertArgs' rows.
func pgxCopy(ctx context.Context, s *store, recs []Record) error {
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	return conn.Raw(func(dc any) error {
		i := 0
		_, err := dc.(*stdlib.Conn).Conn().CopyFrom(ctx, pgx.Identifier{requestsTable}, columns[:], pgx.CopyFromFunc(func() ([]any, error) {
			if i == len(recs) {
				return nil, nil
			}
			i++
			return insertArgs(nil, &recs[i-1]), nil
		}))
		return err
	})
}

// TestPostgresCopy_RoundTrip writes hostile records with the COPY encoder and reads them
// back through Requests: every value is what was written, NULL where the writer wrote
// NULL (no prompt, no attempts) and the empty text where it wrote one; and pgx's CopyFrom
// of the same records reads back the same.
func TestPostgresCopy_RoundTrip(t *testing.T) {
	ctx := context.Background()
	at := time.Now().UTC().Add(-time.Hour)
	recs := hostileRecords(at)
	read := func(t *testing.T, write func(s *store) error) []Record {
		s, err := openStore(ctx, "postgres", Postgres.NewDatabase(t))
		if err != nil {
			t.Fatal(err)
		}
		defer s.close()
		if err := write(s); err != nil {
			t.Fatal(err)
		}
		got, _, err := s.requests(ctx, RequestQuery{Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		for i := range got {
			got[i].ID = 0
		}
		return got
	}
	ours := read(t, func(s *store) error {
		if err := s.insert(ctx, recs); err != nil {
			return err
		}
		// NULL where the writer writes NULL: no prompt, completion, attempts or tools;
		// the empty text where it writes one.
		var nulls, empties int
		err := s.db.QueryRowContext(ctx, `SELECT
		  count(*) FILTER (WHERE prompt IS NULL AND completion IS NULL AND attempts IS NULL AND tools IS NULL),
		  count(*) FILTER (WHERE team = '' AND error_type = '' AND prompt IS NOT NULL)
		FROM ledger_requests WHERE request_id IN ('plain', '\N')`).Scan(&nulls, &empties)
		if err != nil || nulls != 1 || empties != 1 {
			t.Errorf("NULL content in %d records, empty team and error type in %d, %v; want 1, 1", nulls, empties, err)
		}
		return nil
	})
	theirs := read(t, func(s *store) error { return pgxCopy(ctx, s, recs) })

	want := make([]Record, len(recs))
	for i, r := range recs {
		want[len(recs)-1-i] = stored(r) // newest first
	}
	timeEq := cmp.Comparer(func(a, b time.Time) bool { return a.Equal(b) })
	if d := cmp.Diff(want, ours, timeEq, cmpopts.EquateEmpty()); d != "" {
		t.Errorf("read back (-written +read):\n%s", d)
	}
	if d := cmp.Diff(theirs, ours, timeEq, cmpopts.EquateEmpty()); d != "" {
		t.Errorf("pgx's CopyFrom and ours read back differently (-pgx +ours):\n%s", d)
	}
	if !math.Signbit(ours[len(ours)-1-2].CostUSD) {
		t.Error("-0.0 cost read back as +0")
	}

}

// TestPostgresCopy_Refused: what PostgreSQL or pgx refused, the COPY encoder's batch
// fails on too, naming the cause (and writes nothing of the batch).
func TestPostgresCopy_Refused(t *testing.T) {
	ctx := context.Background()
	at := time.Now().UTC().Add(-time.Hour)
	for _, tc := range []struct {
		name string
		r    Record
		want string // in both errors
	}{
		{"a NUL byte in a text", Record{Time: at, RequestID: "nul", Key: "a\x00b"}, "0x00"},
		{"invalid UTF-8", Record{Time: at, RequestID: "utf8", Key: "k", Prompt: "\xff\xfe"}, "invalid byte sequence"},
		{"a duration over int4", Record{Time: at, RequestID: "long", Key: "k", Total: (math.MaxInt32 + 1) * time.Millisecond}, "2147483648"},
		{"a count under int4", Record{Time: at, RequestID: "neg", Key: "k", ToolsOmitted: math.MinInt32 - 1}, "-2147483649"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := openStore(ctx, "postgres", Postgres.NewDatabase(t))
			if err != nil {
				t.Fatal(err)
			}
			defer s.close()
			good := Record{Time: at, RequestID: "good", Key: "k"}
			ours := s.insert(ctx, []Record{good, tc.r})
			theirs := pgxCopy(ctx, s, []Record{good, tc.r})
			for _, e := range []struct {
				who string
				err error
			}{{"ours", ours}, {"pgx's", theirs}} {
				if e.err == nil || !strings.Contains(e.err.Error(), tc.want) {
					t.Errorf("%s error %v; want one with %q", e.who, e.err, tc.want)
				}
			}
			var n int
			if err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM ledger_requests`).Scan(&n); err != nil || n != 0 {
				t.Errorf("%d records written, %v; want none", n, err)
			}
		})
	}
}

// decodeCopy decodes binary COPY data (the format in pgcopy.go) into its tuples' fields,
// nil for NULL: the test's reader of the format, independent of the encoder.
func decodeCopy(b []byte) ([][][]byte, error) {
	if !strings.HasPrefix(string(b), copyHeader) {
		return nil, errors.New("no header")
	}
	b = b[len(copyHeader):]
	var rows [][][]byte
	for {
		if len(b) < 2 {
			return nil, errors.New("no trailer")
		}
		n := int16(binary.BigEndian.Uint16(b))
		b = b[2:]
		if n == -1 {
			if len(b) != 0 {
				return nil, fmt.Errorf("%d bytes after the trailer", len(b))
			}
			return rows, nil
		}
		if n < 0 {
			return nil, fmt.Errorf("field count %d", n)
		}
		row := make([][]byte, n)
		for i := range row {
			if len(b) < 4 {
				return nil, errors.New("a field's length cut")
			}
			l := int32(binary.BigEndian.Uint32(b))
			b = b[4:]
			if l == -1 {
				continue
			}
			if l < 0 || int(l) > len(b) {
				return nil, fmt.Errorf("field length %d of %d bytes left", l, len(b))
			}
			row[i], b = b[:l:l], b[l:]
			if row[i] == nil {
				row[i] = []byte{}
			}
		}
		rows = append(rows, row)
	}
}

// FuzzAppendCopyRecord: whatever the texts and numbers, the COPY data decodes into one
// tuple a record of len(columns) fields, its texts are the record's bytes as they are,
// its integers and float the record's, and it is refused only for an integer out of
// int4's range.
func FuzzAppendCopyRecord(f *testing.F) {
	for _, r := range hostileRecords(time.Unix(1_800_000_000, 123456789)) {
		f.Add(r.RequestID, r.Key, r.Prompt, r.Completion, r.Time.UnixNano(), r.PromptTokens, r.CostUSD, int64(r.Total), r.Status, r.ToolsOmitted)
	}
	f.Fuzz(func(t *testing.T, id, key, prompt, completion string, ns, tokens int64, cost float64, total int64, status, omitted int) {
		r := Record{Time: time.Unix(0, ns), RequestID: id, Key: key, Team: key, Prompt: prompt, Completion: completion, PromptTokens: tokens,
			CostUSD: cost, Total: time.Duration(total), Status: status, ToolsOmitted: omitted, Stream: tokens%2 == 0,
			Attempts: []Attempt{{Backend: key, Model: id, Status: status}}}
		b, err := appendCopy(nil, []Record{r, r})
		ms := r.Total.Milliseconds()
		inRange := func(v int64) bool { return v >= math.MinInt32 && v <= math.MaxInt32 }
		if !inRange(int64(status)) || !inRange(int64(omitted)) || !inRange(ms) {
			if err == nil {
				t.Fatal("an int4 out of range was not refused")
			}
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		rows, err := decodeCopy(b)
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) != 2 {
			t.Fatalf("%d tuples; want 2", len(rows))
		}
		col := func(name string) []byte {
			for i, c := range columns {
				if c == name {
					return rows[1][i]
				}
			}
			t.Fatalf("no column %s", name)
			return nil
		}
		if len(rows[0]) != len(columns) {
			t.Fatalf("%d fields; want %d", len(rows[0]), len(columns))
		}
		for _, tc := range []struct {
			col  string
			want string
			null bool
		}{{"request_id", id, false}, {"key_name", key, false}, {"team", key, false}, {"prompt", prompt, prompt == ""},
			{"completion", completion, completion == ""}, {"attempts", attemptsText(r.Attempts).(string), false}, {"tools", "", true}} {
			got := col(tc.col)
			if tc.null != (got == nil) || string(got) != tc.want {
				t.Fatalf("%s: %q; want %q (NULL %v)", tc.col, got, tc.want, tc.null)
			}
		}
		for _, tc := range []struct {
			col  string
			want int64
		}{{"ts_us", r.Time.UnixMicro()}, {"prompt_tokens", tokens}, {"total_ms", ms}, {"status", int64(status)}, {"tools_omitted", int64(omitted)}} {
			got := col(tc.col)
			var v int64
			switch len(got) {
			case 8:
				v = int64(binary.BigEndian.Uint64(got))
			case 4:
				v = int64(int32(binary.BigEndian.Uint32(got)))
			default:
				t.Fatalf("%s: %d bytes", tc.col, len(got))
			}
			if v != tc.want {
				t.Fatalf("%s: %d; want %d", tc.col, v, tc.want)
			}
		}
		if got := math.Float64frombits(binary.BigEndian.Uint64(col("cost_usd"))); math.Float64bits(got) != math.Float64bits(cost) {
			t.Fatalf("cost_usd %v; want %v", got, cost)
		}
		if got := col("stream"); len(got) != 1 || (got[0] == 1) != r.Stream {
			t.Fatalf("stream %v; want %v", got, r.Stream)
		}
	})
}
