package ledger

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// On PostgreSQL the raw records table is partitioned by month (schema version 4):
// ledger_requests is a partitioned table over ts_us, with one partition per calendar
// month (UTC), ledger_requests_pYYYYMM, holding [the month's start, the next month's
// start) in Unix microseconds. The partitions are made ahead (the current month and the
// next partitionsAhead) at Open and by every prune, and for a batch whose month has none
// (a spooled batch of a month before). Retention drops the partitions wholly older than
// it, then deletes the rest in batches (one month at most).

// partitionsAhead is how many months after the current one have their partition made
// ahead.
const partitionsAhead = 2

// partitionLock is the PostgreSQL advisory lock id serializing partition DDL between
// replicas ("agate-part").
const partitionLock = 0x6167617465_50

// partitionedRequestsDDL is schema version 4 on PostgreSQL: ledger_requests made a table
// partitioned by month, its records copied over (in the transaction of the migration:
// a large table makes a long migration) with the partitions they need.
func partitionedRequestsDDL() string {
	table := requestsDDL("BIGINT GENERATED ALWAYS AS IDENTITY", "BIGINT", "BOOLEAN", "DOUBLE PRECISION")
	table = strings.Replace(table, "  completion TEXT\n);", "  completion TEXT,\n  PRIMARY KEY (id, ts_us)\n) PARTITION BY RANGE (ts_us);", 1)
	return `ALTER TABLE ledger_requests RENAME TO ledger_requests_unpartitioned;
ALTER INDEX ledger_requests_ts RENAME TO ledger_requests_unpartitioned_ts;
ALTER INDEX ledger_requests_key RENAME TO ledger_requests_unpartitioned_key;
` + table + `
DO $$
DECLARE
  lo BIGINT;
  hi BIGINT;
  m TIMESTAMP;
BEGIN
  SELECT MIN(ts_us), MAX(ts_us) INTO lo, hi FROM ledger_requests_unpartitioned;
  IF lo IS NULL THEN
    RETURN;
  END IF;
  m := date_trunc('month', to_timestamp(lo / 1000000.0) AT TIME ZONE 'UTC');
  WHILE m <= to_timestamp(hi / 1000000.0) AT TIME ZONE 'UTC' LOOP
    EXECUTE format('CREATE TABLE %I PARTITION OF ledger_requests FOR VALUES FROM (%s) TO (%s)',
      'ledger_requests_p' || to_char(m, 'YYYYMM'),
      (extract(epoch FROM m) * 1000000)::bigint,
      (extract(epoch FROM m + interval '1 month') * 1000000)::bigint);
    m := m + interval '1 month';
  END LOOP;
END $$;
INSERT INTO ledger_requests OVERRIDING SYSTEM VALUE SELECT * FROM ledger_requests_unpartitioned;
SELECT setval(pg_get_serial_sequence('ledger_requests', 'id'), COALESCE((SELECT MAX(id) FROM ledger_requests), 0) + 1, false);
DROP TABLE ledger_requests_unpartitioned;
`
}

// monthStart is the start of t's calendar month, UTC.
func monthStart(t time.Time) time.Time {
	t = t.UTC()
	return time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, time.UTC)
}

// partitionName is the partition of the month starting at m.
func partitionName(m time.Time) string { return "ledger_requests_p" + m.Format("200601") }

// partitioned reports whether the raw records are partitioned (PostgreSQL).
func (s *store) partitioned() bool { return s.d.dollar }

// ensurePartitions makes the partitions of the months from from's to to's that do not
// exist, under an advisory lock (replicas may make them at once).
func (s *store) ensurePartitions(ctx context.Context, from, to time.Time) error {
	if !s.partitioned() {
		return nil
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }()
	if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(partitionLock)); err != nil {
		return fmt.Errorf("ledger: partition lock: %w", err)
	}
	for m := monthStart(from); !m.After(to); m = m.AddDate(0, 1, 0) {
		q := fmt.Sprintf(`CREATE TABLE IF NOT EXISTS %s PARTITION OF ledger_requests FOR VALUES FROM (%d) TO (%d)`,
			partitionName(m), m.UnixMicro(), m.AddDate(0, 1, 0).UnixMicro())
		if _, err := tx.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("ledger: making partition %s: %w", partitionName(m), err)
		}
	}
	return tx.Commit()
}

// ensureAhead makes the partitions of the current month and the partitionsAhead after.
func (s *store) ensureAhead(ctx context.Context, now time.Time) error {
	return s.ensurePartitions(ctx, now, monthStart(now).AddDate(0, partitionsAhead, 0))
}

// noPartition reports whether err is PostgreSQL's refusal of a row no partition takes.
func noPartition(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "23514" && strings.Contains(pe.Message, "no partition")
}

// batchMonths returns the earliest and latest record times of recs.
func batchMonths(recs []Record) (from, to time.Time) {
	for i, r := range recs {
		if i == 0 || r.Time.Before(from) {
			from = r.Time
		}
		if i == 0 || r.Time.After(to) {
			to = r.Time
		}
	}
	return from, to
}

// partitions lists the raw records' partitions by month start, oldest first.
func (s *store) partitions(ctx context.Context) ([]time.Time, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
WHERE i.inhparent = 'ledger_requests'::regclass ORDER BY c.relname`)
	if err != nil {
		return nil, fmt.Errorf("ledger: listing partitions: %w", err)
	}
	defer rows.Close()
	var out []time.Time
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			return nil, err
		}
		m, err := time.Parse("200601", strings.TrimPrefix(name, "ledger_requests_p"))
		if err != nil {
			continue // not one of ours
		}
		out = append(out, m)
	}
	return out, rows.Err()
}

// dropPartitions drops the partitions whose month ended at or before cut and returns
// about how many records they held (the planner's estimate: counting would read them).
func (s *store) dropPartitions(ctx context.Context, cut time.Time) (int64, error) {
	parts, err := s.partitions(ctx)
	if err != nil {
		return 0, err
	}
	var total int64
	for _, m := range parts {
		if m.AddDate(0, 1, 0).After(cut) {
			break
		}
		name := partitionName(m)
		var est sql.NullFloat64
		_ = s.db.QueryRowContext(ctx, `SELECT reltuples FROM pg_class WHERE relname = $1`, name).Scan(&est)
		if _, err := s.db.ExecContext(ctx, `DROP TABLE IF EXISTS `+name); err != nil {
			return total, fmt.Errorf("ledger: dropping partition %s: %w", name, err)
		}
		total += max(0, int64(est.Float64))
	}
	return total, nil
}
