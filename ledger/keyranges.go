package ledger

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// On SQLite, from schema version 7, the raw records have no index by key: the table
// ledger_request_keys says where each key's records are instead, one row per key a
// written batch (first_id: the id of the key's first record in the batch, its primary
// key; last_id the last's; first_us and last_us their times' bounds). A batch's records
// take consecutive ids, so a batch of 1,000 records of 10 keys adds 10 rows here where
// the index (key_name, id) took 1,000 entries, each a search from the index's root
// among strings: 1.4 of the SQLite writer's 4.2 µs a record (docs/ledger.md, "The
// SQLite writer"). A key's listing (requests) reads its ranges newest first and each
// range by id. PostgreSQL keeps its index (its version 7 changes nothing).

// keyRangesTable is the table of the keys' ranges (SQLite).
const keyRangesTable = "ledger_request_keys"

// schemaV7SQLite is version 7 on SQLite: the ranges' table, filled from the records
// there are (a range per key and 1,024 ids), and the key index dropped.
func schemaV7SQLite() string {
	return `CREATE TABLE ` + keyRangesTable + ` (
  first_id INTEGER PRIMARY KEY,
  last_id INTEGER NOT NULL,
  key_name TEXT NOT NULL,
  first_us INTEGER NOT NULL,
  last_us INTEGER NOT NULL
);
CREATE INDEX ledger_request_keys_key ON ` + keyRangesTable + ` (key_name, last_id);
INSERT INTO ` + keyRangesTable + ` (first_id, last_id, key_name, first_us, last_us)
  SELECT MIN(id), MAX(id), key_name, MIN(ts_us), MAX(ts_us) FROM ledger_requests GROUP BY key_name, id / 1024;
DROP INDEX ledger_requests_key;
`
}

// keyRangesSQL is the INSERT of n ranges (SQLite).
func keyRangesSQL(n int) string {
	return "INSERT INTO " + keyRangesTable + " (first_id, last_id, key_name, first_us, last_us) VALUES " +
		strings.TrimSuffix(strings.Repeat("(?, ?, ?, ?, ?), ", n), ", ")
}

// keyRange is one key's records in a batch: the indexes of its first and last in the
// batch and the bounds of their times.
type keyRange struct {
	first, last     int
	firstUS, lastUS int64
}

// keyRanges returns each key's range in recs, in order of first appearance, using
// index (cleared first) and out's storage; times are recs' times as Unix microseconds
// (times[i] is recs[i].Time.UnixMicro()), same sameRoutes' answers for recs (nil: the
// keys compared here).
func keyRanges(recs []Record, times []int64, same []bool, index map[string]int, out []keyRange) []keyRange {
	clear(index)
	out = out[:0]
	j := -1 // the range of the record before: a gateway's records come in runs of a key
	for i := range recs {
		us := times[i]
		if j < 0 || !(same != nil && same[i]) && !sameText(recs[i].Key, recs[out[j].first].Key) {
			var ok bool
			if j, ok = index[recs[i].Key]; !ok {
				j = len(out)
				index[recs[i].Key] = j
				out = append(out, keyRange{first: i, last: i, firstUS: us, lastUS: us})
				continue
			}
		}
		r := &out[j]
		r.last = i
		r.firstUS, r.lastUS = min(r.firstUS, us), max(r.lastUS, us)
	}
	return out
}

// listByKey lists q's records (q.Key's) with ids below before, newest first, at most
// limit: the key's ranges are read newest first, a page at a time (bounded by before,
// the cursor's id, and the query's times), and each range's records from its batch rows
// (batchread.go), until limit are found or the ranges end.
func (s *store) listByKey(ctx context.Context, key string, before int64, q RequestQuery, limit int) ([]Record, error) {
	rq := "SELECT first_id, last_id FROM " + keyRangesTable + " WHERE key_name = ? AND first_id < ? AND last_id < ?"
	rargs := []any{key, before, int64(math.MaxInt64)}
	if !q.From.IsZero() {
		rq, rargs = rq+" AND last_us >= ?", append(rargs, q.From.UnixMicro())
	}
	if !q.To.IsZero() {
		rq, rargs = rq+" AND first_us < ?", append(rargs, q.To.UnixMicro())
	}
	const page = 256
	rq += " ORDER BY last_id DESC LIMIT " + strconv.Itoa(page)
	var out []Record
	for {
		ranges, err := s.keyRangesPage(ctx, rq, rargs)
		if err != nil {
			return nil, err
		}
		for _, r := range ranges {
			recs, err := s.listRange(ctx, &q, before, r[0], r[1], limit-len(out))
			if err != nil {
				return nil, err
			}
			if out = append(out, recs...); len(out) >= limit {
				return out, nil
			}
		}
		if len(ranges) < page {
			return out, nil
		}
		rargs[2] = ranges[len(ranges)-1][0] // the ranges are disjoint: the next page ends before this one's last
	}
}

// keyRangesPage reads a page of ranges (first_id, last_id).
func (s *store) keyRangesPage(ctx context.Context, q string, args []any) ([][2]int64, error) {
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("ledger: listing requests: %w", err)
	}
	defer rows.Close()
	var out [][2]int64
	for rows.Next() {
		var r [2]int64
		if err := rows.Scan(&r[0], &r[1]); err != nil {
			return nil, fmt.Errorf("ledger: listing requests: %w", err)
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// pruneKeyRanges deletes the ranges whose records are all gone (ids below the oldest
// record's), pruneBatch a statement, at most maxBatches statements. The rows it deletes
// are not counted as pruned records.
func (s *store) pruneKeyRanges(ctx context.Context, maxBatches int) error {
	q := `DELETE FROM ` + keyRangesTable + ` WHERE first_id IN (SELECT first_id FROM ` + keyRangesTable +
		` WHERE first_id < ?1 AND last_id < ?1 LIMIT ` + strconv.Itoa(pruneBatch) + `)`
	var oldest int64
	if err := s.db.QueryRowContext(ctx, `SELECT COALESCE((SELECT first_id FROM `+batchesTable+` ORDER BY last_id LIMIT 1), ?)`,
		int64(math.MaxInt64)).Scan(&oldest); err != nil {
		return fmt.Errorf("ledger: pruning %s: %w", keyRangesTable, err)
	}
	for range maxBatches {
		res, err := s.db.ExecContext(ctx, q, oldest)
		if err != nil {
			return fmt.Errorf("ledger: pruning %s: %w", keyRangesTable, err)
		}
		if n, _ := res.RowsAffected(); n < pruneBatch {
			return nil
		}
	}
	return nil
}
