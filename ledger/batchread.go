package ledger

import (
	"container/heap"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"strconv"
)

// The readers of the raw records on SQLite (schema version 8, batches.go): every one
// reads batch rows by their id (last_id, the table's key) or time (last_us, indexed),
// decodes them in Go and filters their records.

// eachBatch runs q, a SELECT of first_id, last_us, data and format of batch rows, and calls fn
// with each row's last_us and records (in id order; recs is reused between calls), until
// fn returns false or the rows end.
func (s *store) eachBatch(ctx context.Context, q string, args []any, fn func(lastUS int64, recs []Record) bool) error {
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	var recs []Record
	for rows.Next() {
		var first, lastUS, format int64
		var data string
		if err := rows.Scan(&first, &lastUS, &data, &format); err != nil {
			return err
		}
		if recs, err = decodeBatchRow(format, data, first, recs[:0]); err != nil {
			return fmt.Errorf("the batch of record %d: %w", first, err)
		}
		if !fn(lastUS, recs) {
			return nil
		}
	}
	return rows.Err()
}

// matches reports whether r is one q selects, with an id below before.
func (q *RequestQuery) matches(r *Record, before int64) bool {
	us := r.Time.UnixMicro()
	return r.ID < before &&
		(q.From.IsZero() || us >= q.From.UnixMicro()) && (q.To.IsZero() || us < q.To.UnixMicro()) &&
		(q.Key == "" || r.Key == q.Key) && (q.Team == "" || r.Team == q.Team) && (q.Model == "" || r.Model == q.Model) &&
		(q.Status == 0 || r.Status == q.Status) && (!q.ErrorsOnly || r.Status >= 400) && (!q.FallbacksOnly || r.Fallbacks > 0)
}

// batchTimes is the condition on a batch row's times that q's From and To put (the row
// holds a record of [From, To) only if its bounds overlap it), and its arguments.
func batchTimes(q *RequestQuery) (string, []any) {
	cond, args := "", []any(nil)
	if !q.From.IsZero() {
		cond, args = cond+" AND last_us >= ?", append(args, q.From.UnixMicro())
	}
	if !q.To.IsZero() {
		cond, args = cond+" AND first_us < ?", append(args, q.To.UnixMicro())
	}
	return cond, args
}

// listBatches lists q's records with ids below before, newest first, at most limit:
// the batch rows holding ids below before (last_id < before + maxBatchRecords bounds the
// scan of the table's key), newest first, decoded and filtered, until limit are found.
func (s *store) listBatches(ctx context.Context, q *RequestQuery, before int64, limit int) ([]Record, error) {
	cond, targs := batchTimes(q)
	sqlq := "SELECT first_id, last_us, data, format FROM " + batchesTable + " WHERE first_id < ? AND last_id < ?" + cond +
		" ORDER BY last_id DESC"
	bound := before
	if bound <= math.MaxInt64-maxBatchRecords {
		bound += maxBatchRecords
	}
	var out []Record
	err := s.eachBatch(ctx, sqlq, append([]any{before, bound}, targs...), func(_ int64, recs []Record) bool {
		for i := len(recs) - 1; i >= 0 && len(out) < limit; i-- {
			if q.matches(&recs[i], before) {
				out = append(out, recs[i])
			}
		}
		return len(out) < limit
	})
	if err != nil {
		return nil, fmt.Errorf("ledger: listing requests: %w", err)
	}
	return out, nil
}

// listRange lists q's records of ids [lo, hi] below before, newest first, at most limit
// (a key's range, keyranges.go): the batch rows from the one holding lo up (by last_id)
// to the one holding hi.
func (s *store) listRange(ctx context.Context, q *RequestQuery, before, lo, hi int64, limit int) ([]Record, error) {
	cond, targs := batchTimes(q)
	sqlq := "SELECT first_id, last_us, data, format FROM " + batchesTable + " WHERE last_id >= ? AND first_id <= ?" + cond + " AND last_id < ?" +
		" ORDER BY last_id"
	bound := hi
	if bound <= math.MaxInt64-maxBatchRecords {
		bound += maxBatchRecords
	}
	var found []Record
	err := s.eachBatch(ctx, sqlq, append(append([]any{lo, hi}, targs...), bound), func(_ int64, recs []Record) bool {
		for i := range recs {
			if recs[i].ID >= lo && recs[i].ID <= hi && q.matches(&recs[i], before) {
				found = append(found, recs[i])
			}
		}
		return true
	})
	if err != nil {
		return nil, fmt.Errorf("ledger: listing requests: %w", err)
	}
	// Oldest first as read: the newest limit, newest first.
	out := make([]Record, 0, min(limit, len(found)))
	for i := len(found) - 1; i >= 0 && len(out) < limit; i-- {
		out = append(out, found[i])
	}
	return out, nil
}

// requestBatch reads the record of id from its batch row; ok is false when there is none.
func (s *store) requestBatch(ctx context.Context, id int64) (r Record, ok bool, err error) {
	if id <= 0 {
		return Record{}, false, nil
	}
	row := s.db.QueryRowContext(ctx, "SELECT first_id, data, format FROM "+batchesTable+" WHERE last_id >= ? ORDER BY last_id LIMIT 1", id)
	var first, format int64
	var data string
	if err := row.Scan(&first, &data, &format); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return Record{}, false, nil
		}
		return Record{}, false, fmt.Errorf("ledger: reading request %d: %w", id, err)
	}
	if id < first {
		return Record{}, false, nil
	}
	recs, err := decodeBatchRow(format, data, first, nil)
	if err != nil {
		return Record{}, false, fmt.Errorf("ledger: reading request %d: %w", id, err)
	}
	for i := range recs {
		if recs[i].ID == id {
			return recs[i], true, nil
		}
	}
	return Record{}, false, nil
}

// latencySample is a record's part of the overview's latencies.
type latencySample struct {
	us, totalMS, firstMS int64
	e                    ErrorCount
}

// newestSamples is a min-heap of samples by time: the newest n seen.
type newestSamples []latencySample

func (h newestSamples) Len() int           { return len(h) }
func (h newestSamples) Less(i, j int) bool { return h[i].us < h[j].us }
func (h newestSamples) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *newestSamples) Push(x any)        { *h = append(*h, x.(latencySample)) }
func (h *newestSamples) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// newestBatches calls fn with the latency samples of the newest n records of [from, to)
// (Unix microseconds), in no order: the batch rows overlapping the range newest last_us
// first, until the next row's records are all older than the n kept.
func (s *store) newestBatches(ctx context.Context, from, to int64, n int, fn func(latencySample)) error {
	h := make(newestSamples, 0, min(n, 1024))
	err := s.eachBatch(ctx, "SELECT first_id, last_us, data, format FROM "+batchesTable+" WHERE last_us >= ? AND first_us < ? ORDER BY last_us DESC",
		[]any{from, to}, func(lastUS int64, recs []Record) bool {
			if len(h) == n && lastUS < h[0].us {
				return false
			}
			for i := range recs {
				r := &recs[i]
				us := r.Time.UnixMicro()
				if us < from || us >= to || len(h) == n && us <= h[0].us {
					continue
				}
				sm := latencySample{us: us, totalMS: r.Total.Milliseconds(), firstMS: r.FirstToken.Milliseconds(),
					e: ErrorCount{Status: r.Status, Type: r.ErrorType}}
				if len(h) == n {
					h[0] = sm
					heap.Fix(&h, 0)
				} else {
					heap.Push(&h, sm)
				}
			}
			return true
		})
	if err != nil {
		return fmt.Errorf("ledger: overview: %w", err)
	}
	for _, sm := range h {
		fn(sm)
	}
	return nil
}

// pruneBatchRows is how many batch rows one delete removes (SQLite): at most
// pruneBatchRows * maxBatchRecords records.
const pruneBatchRows = 64

// pruneBatches deletes the records older than before (Unix microseconds), pruneBatchRows
// batch rows a statement, at most maxBatches statements of each kind, and returns the
// records deleted. The rows whose records are all older go whole (by last_us); then each
// row that holds older and newer records (after those deletes, the rows with first_us
// still before the cutoff) is written again with a null in the place of each older
// record, so that retention is exact and the others keep their ids.
func (s *store) pruneBatches(ctx context.Context, before int64, maxBatches int) (int64, error) {
	q := `DELETE FROM ` + batchesTable + ` WHERE last_id IN (SELECT last_id FROM ` + batchesTable +
		` WHERE last_us < ? LIMIT ` + strconv.Itoa(pruneBatchRows) + `) RETURNING n`
	var total int64
	for range maxBatches {
		n, deleted, err := s.deleteBatches(ctx, q, before)
		total += n
		if err != nil {
			return total, fmt.Errorf("ledger: pruning %s: %w", batchesTable, err)
		}
		if deleted < pruneBatchRows {
			break
		}
	}
	for range maxBatches {
		n, rows, err := s.trimBatches(ctx, before)
		total += n
		if err != nil {
			return total, fmt.Errorf("ledger: pruning %s: %w", batchesTable, err)
		}
		if rows < pruneBatchRows {
			break
		}
	}
	return total, nil
}

// deleteBatches runs q, a DELETE of batch rows returning their n, and returns the
// records and rows deleted.
func (s *store) deleteBatches(ctx context.Context, q string, before int64) (n int64, deleted int, err error) {
	rows, err := s.db.QueryContext(ctx, q, before)
	if err != nil {
		return 0, 0, err
	}
	defer rows.Close()
	for rows.Next() {
		var k int64
		if err := rows.Scan(&k); err != nil {
			return n, deleted, err
		}
		n += k
		deleted++
	}
	return n, deleted, rows.Err()
}

// trimBatches writes again up to pruneBatchRows rows holding records older than before
// (and newer ones), without the older ones, in one transaction, and returns the records
// taken out and the rows read. The transaction takes the write lock first (BEGIN
// IMMEDIATE: waiting for the writer's, within the busy timeout), so that no batch the
// writer commits meanwhile makes its update fail on a stale snapshot.
func (s *store) trimBatches(ctx context.Context, before int64) (n int64, read int, err error) {
	tx, err := s.db.Conn(ctx)
	if err != nil {
		return 0, 0, err
	}
	defer tx.Close()
	if _, err := tx.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		return 0, 0, err
	}
	committed := false
	defer func() {
		if !committed {
			_, _ = tx.ExecContext(context.WithoutCancel(ctx), "ROLLBACK")
		}
	}()
	type row struct {
		last, first, format int64
		data                string
	}
	var rs []row
	rows, err := tx.QueryContext(ctx, `SELECT last_id, first_id, data, format FROM `+batchesTable+` WHERE first_us < ? LIMIT `+
		strconv.Itoa(pruneBatchRows), before)
	if err != nil {
		return 0, 0, err
	}
	for rows.Next() {
		var r row
		if err := rows.Scan(&r.last, &r.first, &r.data, &r.format); err != nil {
			rows.Close()
			return 0, 0, err
		}
		rs = append(rs, r)
	}
	if err := rows.Close(); err != nil {
		return 0, 0, err
	}
	var recs, places []Record
	var pruned []bool
	var buf []byte
	var enc batchEncoder
	for _, r := range rs {
		if r.last < r.first || r.last-r.first >= maxBatchRecords {
			return 0, 0, fmt.Errorf("the batch of record %d: %w: ids %d to %d", r.first, errBatch, r.first, r.last)
		}
		if recs, err = decodeBatchRow(r.format, r.data, r.first, recs[:0]); err != nil {
			return 0, 0, fmt.Errorf("the batch of record %d: %w", r.first, err)
		}
		size := int(r.last - r.first + 1)
		places, pruned = append(places[:0], make([]Record, size)...), append(pruned[:0], make([]bool, size)...)
		for i := range pruned {
			pruned[i] = true // a place with no record: pruned before
		}
		kept, firstUS, lastUS := int64(0), int64(math.MaxInt64), int64(math.MinInt64)
		for i := range recs {
			p := recs[i].ID - r.first
			if p < 0 || p >= int64(size) {
				return 0, 0, fmt.Errorf("the batch of record %d: %w: record %d past last_id", r.first, errBatch, recs[i].ID)
			}
			if us := recs[i].Time.UnixMicro(); us < before {
				n++
			} else {
				places[p], pruned[p] = recs[i], false
				kept++
				firstUS, lastUS = min(firstUS, us), max(lastUS, us)
			}
		}
		if kept == 0 { // cannot be (last_us is a kept record's time): deleted all the same
			if _, err := tx.ExecContext(ctx, `DELETE FROM `+batchesTable+` WHERE last_id = ?`, r.last); err != nil {
				return 0, 0, err
			}
			continue
		}
		buf = enc.appendBatch(buf[:0], places, func(i int) bool { return pruned[i] }, firstUS)
		if _, err := tx.ExecContext(ctx, `UPDATE `+batchesTable+` SET first_us = ?, last_us = ?, n = ?, data = ?, format = ? WHERE last_id = ?`,
			firstUS, lastUS, kept, string(buf), batchFormat, r.last); err != nil {
			return 0, 0, err
		}
	}
	if _, err := tx.ExecContext(ctx, "COMMIT"); err != nil {
		return 0, 0, err
	}
	committed = true
	return n, len(rs), nil
}
