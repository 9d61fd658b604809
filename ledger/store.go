package ledger

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver
	_ "modernc.org/sqlite"           // the "sqlite" database/sql driver (pure Go)
)

// store is the ledger's database: SQLite or PostgreSQL through database/sql, with
// PostgreSQL's COPY through the pgx connection underneath.
type store struct {
	db *sql.DB
	d  *dialect
	// stmts are the writer's statements (write.go); on SQLite, w is its connection
	// (sqlitewrite.go), used by the writer's goroutine only (insertWith is not called
	// concurrently).
	stmts stmts
	w     sqliteWriter
	copy  copyBuf // PostgreSQL: the records' COPY data (pgcopy.go), the writer's goroutine's
}

// close closes the writer's statements and the database.
func (s *store) close() error {
	s.w.release()
	return s.db.Close()
}

// openStore opens the database of typ ("sqlite": dsn is a file path; "postgres": dsn is
// a postgres:// URL) and brings its schema to the latest version.
func openStore(ctx context.Context, typ, dsn string) (*store, error) {
	var s store
	var err error
	switch typ {
	case "sqlite":
		s.d = &sqliteDialect
		// WAL: readers (reports) do not block the writer; NORMAL sync is durable at each
		// checkpoint and never corrupts; the busy timeout covers a second process.
		s.db, err = sql.Open("sqlite", "file:"+dsn+"?_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)&_pragma=busy_timeout(10000)")
		s.w.path = dsn // the writer's own connection (sqlitewrite.go)
		if err == nil {
			s.db.SetMaxOpenConns(4)
		}
	case "postgres":
		s.d = &postgresDialect
		s.db, err = sql.Open("pgx", dsn)
		if err == nil {
			s.db.SetMaxOpenConns(8)
			s.db.SetConnMaxIdleTime(5 * time.Minute)
		}
	default:
		return nil, fmt.Errorf("ledger: unknown type %q (want sqlite or postgres)", typ)
	}
	if err != nil {
		return nil, fmt.Errorf("ledger: opening the %s database: %w", typ, err)
	}
	if err := s.migrate(ctx); err != nil {
		_ = s.db.Close()
		return nil, err
	}
	if err := s.ensureAhead(ctx, time.Now()); err != nil { // partition.go
		_ = s.db.Close()
		return nil, err
	}
	return &s, nil
}

// migrate applies the schema versions the database lacks, in one transaction each
// (serialized between replicas by an advisory lock on PostgreSQL).
func (s *store) migrate(ctx context.Context) error {
	if _, err := s.db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS ledger_schema (version INTEGER PRIMARY KEY, applied_us BIGINT NOT NULL)`); err != nil {
		return fmt.Errorf("ledger: creating ledger_schema: %w", err)
	}
	for {
		done, err := s.migrateOne(ctx)
		if err != nil || done {
			return err
		}
	}
}

// migrationLock is the PostgreSQL advisory lock id of migrations ("agate-ledger").
const migrationLock = 0x6167617465_4c

// migrateOne applies the next missing version; done reports there was none.
func (s *store) migrateOne(ctx context.Context) (done bool, err error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return false, fmt.Errorf("ledger: migrating: %w", err)
	}
	defer func() { _ = tx.Rollback() }()
	if s.d.dollar {
		if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(migrationLock)); err != nil {
			return false, fmt.Errorf("ledger: migration lock: %w", err)
		}
	}
	var v int
	if err := tx.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM ledger_schema`).Scan(&v); err != nil {
		return false, fmt.Errorf("ledger: reading the schema version: %w", err)
	}
	if v > len(s.d.migrations) {
		return false, fmt.Errorf("ledger: the database's schema version %d is newer than this gateway's (%d)", v, len(s.d.migrations))
	}
	if v == len(s.d.migrations) {
		return true, nil
	}
	if _, err := tx.ExecContext(ctx, s.d.migrations[v]); err != nil {
		return false, fmt.Errorf("ledger: applying schema version %d: %w", v+1, err)
	}
	if _, err := tx.ExecContext(ctx, s.d.bind(`INSERT INTO ledger_schema (version, applied_us) VALUES (?, ?)`), v+1, time.Now().UnixMicro()); err != nil {
		return false, fmt.Errorf("ledger: recording schema version %d: %w", v+1, err)
	}
	return false, tx.Commit()
}

// version returns the schema version.
func (s *store) version(ctx context.Context) (int, error) {
	var v int
	err := s.db.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM ledger_schema`).Scan(&v)
	return v, err
}

// insertArgs appends r's column values in columns' order.
func insertArgs(a []any, r *Record) []any {
	var prompt, completion any // NULL unless captured
	var one [1]Attempt
	if r.Prompt != "" {
		prompt = r.Prompt
	}
	if r.Completion != "" {
		completion = r.Completion
	}
	return append(a, r.Time.UnixMicro(), r.RequestID, r.Key, r.Team, r.API, r.Model, r.Served, r.Backend,
		r.Stream, r.Status, r.ErrorType, r.PromptTokens, r.CachedReadTokens, r.CacheWriteTokens,
		r.CompletionTokens, r.ReasoningTokens, r.CostUSD, r.Estimated, r.Total.Milliseconds(),
		r.FirstToken.Milliseconds(), r.Upstream.Milliseconds(), r.ToolCalls, r.Fallbacks, r.CacheHit,
		prompt, completion, r.Deployment, r.TraceID, r.ContinuedFrom, attemptsText(r.attemptList(&one)), r.AttemptsOmitted,
		toolsText(r.Tools), r.ToolsOmitted)
}

// insert writes recs and adds them to the rollups, in one transaction.
func (s *store) insert(ctx context.Context, recs []Record) error {
	return s.insertWith(ctx, recs, anonymous{})
}

// insertWith is insert with anonymous refusals added to the rollups.
func (s *store) insertWith(ctx context.Context, recs []Record, anon anonymous) error {
	if len(recs) == 0 && anon.n == 0 {
		return nil
	}
	if s.d.dollar {
		rollups := rollupWith(recs, nil, anon)
		err := s.insertPostgres(ctx, recs, rollups)
		if noPartition(err) { // a batch of a month without its partition (spooled long ago)
			from, to := batchMonths(recs)
			if perr := s.ensurePartitions(ctx, from, to); perr != nil {
				return perr
			}
			err = s.insertPostgres(ctx, recs, rollups)
		}
		return err
	}
	// The SQLite writer's passes share sameRoutes' answers (routeruns.go).
	s.w.same = sameRoutes(recs, s.w.same)
	rollups := rollupWith(recs, s.w.same, anon)
	text := func(table string, n int) string { return s.stmts.sql(s.d, table, n) }
	return s.w.write(ctx, text, func() error {
		if err := s.w.insertRecords(recs, s.w.same); err != nil {
			return err
		}
		return s.w.upsertRollups(rollups)
	})
}

// insertPostgres copies recs (COPY) and upserts the rollups in one transaction on the
// pgx connection under database/sql's.
func (s *store) insertPostgres(ctx context.Context, recs []Record, rollups []rollupRows) error {
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	return conn.Raw(func(dc any) error {
		pc := dc.(*stdlib.Conn).Conn()
		tx, err := pc.Begin(ctx)
		if err != nil {
			return err
		}
		defer func() { _ = tx.Rollback(ctx) }()
		if len(recs) > 0 { // pgcopy.go
			if err := s.copy.copyRecords(ctx, pc.PgConn(), recs); err != nil {
				return fmt.Errorf("ledger: copying records: %w", err)
			}
		}
		if err := s.copy.upsertRollups(ctx, pc, &s.stmts, rollups); err != nil { // pgcopy.go
			return err
		}
		return tx.Commit(ctx)
	})
}

// insertSQL is the INSERT of n records (SQLite).
func insertSQL(n int) string {
	var b strings.Builder
	b.WriteString("INSERT INTO " + requestsTable + " (")
	b.WriteString(strings.Join(columns[:], ", "))
	b.WriteString(") VALUES ")
	one := "(" + strings.TrimSuffix(strings.Repeat("?, ", len(columns)), ", ") + ")"
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(one)
	}
	return b.String()
}

// upsertSQL is the upsert of n rows into a rollup table (both databases).
func upsertSQL(table string, n int) string {
	var b strings.Builder
	dims := strings.Join(rollupDims[:], ", ")
	b.WriteString("INSERT INTO " + table + " (" + dims + ", " + strings.Join(rollupColumns[:], ", ") + ") VALUES ")
	one := "(" + strings.TrimSuffix(strings.Repeat("?, ", len(rollupDims)+len(rollupColumns)), ", ") + ")"
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(one)
	}
	b.WriteString(" ON CONFLICT (" + dims + ") DO UPDATE SET ")
	for i, c := range rollupColumns {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(c + " = " + table + "." + c + " + excluded." + c)
	}
	return b.String()
}

// pruneBatch is how many rows one delete removes: small enough that no delete holds
// its locks for long, big enough that a day's records go in a few hundred statements.
const pruneBatch = 5000

// prune deletes what is older than each cutoff (zero cutoff: keep), at most maxBatches
// deletes per table, and returns the rows deleted.
func (s *store) prune(ctx context.Context, raw time.Time, rollups [3]time.Time, maxBatches int) (int64, error) {
	var total int64
	del := func(table, ref, col string, before int64) error {
		q := `DELETE FROM ` + table + ` WHERE ` + ref + ` IN (SELECT ` + ref + ` FROM ` + table + ` WHERE ` + col + ` < ? LIMIT ` + strconv.Itoa(pruneBatch) + `)`
		if s.d.dollar { // a TID (or key) array makes PostgreSQL delete by TID scan
			q = `DELETE FROM ` + table + ` WHERE ` + ref + ` = ANY(ARRAY(SELECT ` + ref + ` FROM ` + table + ` WHERE ` + col + ` < $1 LIMIT ` + strconv.Itoa(pruneBatch) + `))`
		}
		for range maxBatches {
			res, err := s.db.ExecContext(ctx, q, before)
			if err != nil {
				return fmt.Errorf("ledger: pruning %s: %w", table, err)
			}
			n, _ := res.RowsAffected()
			total += n
			if n < pruneBatch {
				return nil
			}
		}
		return nil
	}
	if !raw.IsZero() {
		if s.partitioned() { // whole months first (partition.go), then the rest of one
			n, err := s.dropPartitions(ctx, raw)
			total += n
			if err != nil {
				return total, err
			}
		}
		if s.d.dollar {
			if err := del("ledger_requests", "id", "ts_us", raw.UnixMicro()); err != nil {
				return total, err
			}
		} else { // SQLite: whole batch rows (batchread.go), then the keys' ranges
			n, err := s.pruneBatches(ctx, raw.UnixMicro(), maxBatches)
			total += n
			if err != nil {
				return total, err
			}
			if err := s.pruneKeyRanges(ctx, maxBatches); err != nil { // keyranges.go
				return total, err
			}
		}
	}
	for i, t := range rollupTables {
		if !rollups[i].IsZero() {
			if err := del(t.name, s.d.rowRef, "bucket", rollups[i].Unix()); err != nil {
				return total, err
			}
		}
	}
	return total, nil
}

// usage runs q over the coarsest rollup whose buckets [From, To) falls on.
func (s *store) usage(ctx context.Context, q UsageQuery) ([]UsageRow, error) {
	from, to := q.From.Unix()/60*60, q.To.Unix()/60*60
	if to <= from {
		return nil, errors.New("ledger: the usage range is empty (to must be after from, a minute at least)")
	}
	table := rollupTables[0].name
	for _, t := range rollupTables {
		if from%t.width == 0 && to%t.width == 0 {
			table = t.name
		}
	}
	var sel, group []string
	grouped := map[string]bool{}
	for _, g := range q.GroupBy {
		if grouped[g] {
			continue
		}
		grouped[g] = true
		switch g {
		case "key":
			sel = append(sel, "key_name")
		case "team":
			sel = append(sel, "team")
		case "model":
			sel = append(sel, "model")
		case "deployment":
			sel = append(sel, "deployment")
		case "status":
			sel = append(sel, "status")
		case "day":
			sel = append(sel, "bucket - bucket % 86400")
		default:
			return nil, fmt.Errorf("ledger: cannot group by %q (key, team, model, deployment, day or status)", g)
		}
		group = append(group, strconv.Itoa(len(sel)))
	}
	cols := append(append([]string(nil), sel...),
		"SUM(requests)", "SUM(errors)", "SUM(prompt_tokens)", "SUM(cached_read_tokens)", "SUM(cache_write_tokens)",
		"SUM(completion_tokens)", "SUM(reasoning_tokens)", "SUM(cost_usd)")
	where := []string{"bucket >= ?", "bucket < ?"}
	args := []any{from, to}
	for _, f := range [...]struct{ col, v string }{{"key_name", q.Key}, {"team", q.Team}, {"model", q.Model}, {"deployment", q.Deployment}} {
		if f.v != "" {
			where = append(where, f.col+" = ?")
			args = append(args, f.v)
		}
	}
	sqlq := "SELECT " + strings.Join(cols, ", ") + " FROM " + table + " WHERE " + strings.Join(where, " AND ")
	if len(group) > 0 {
		sqlq += " GROUP BY " + strings.Join(group, ", ") + " ORDER BY " + strings.Join(group, ", ")
	}
	rows, err := s.db.QueryContext(ctx, s.d.bind(sqlq), args...)
	if err != nil {
		return nil, fmt.Errorf("ledger: usage report: %w", err)
	}
	defer rows.Close()
	var out []UsageRow
	for rows.Next() {
		var u UsageRow
		var day int64
		dest := make([]any, 0, len(cols))
		for _, g := range q.GroupBy {
			switch g {
			case "key":
				dest = append(dest, &u.Key)
			case "team":
				dest = append(dest, &u.Team)
			case "model":
				dest = append(dest, &u.Model)
			case "deployment":
				dest = append(dest, &u.Deployment)
			case "status":
				dest = append(dest, &u.Status)
			case "day":
				dest = append(dest, &day)
			}
		}
		dest = dest[:len(sel)] // repeated names were not selected twice
		var cost sql.NullFloat64
		var sums [7]sql.NullInt64
		for i := range sums {
			dest = append(dest, &sums[i])
		}
		dest = append(dest, &cost)
		if err := rows.Scan(dest...); err != nil {
			return nil, fmt.Errorf("ledger: usage report: %w", err)
		}
		if grouped["day"] {
			u.Day = time.Unix(day, 0).UTC().Format(time.DateOnly)
		}
		u.Requests, u.Errors, u.PromptTokens, u.CachedReadTokens = sums[0].Int64, sums[1].Int64, sums[2].Int64, sums[3].Int64
		u.CacheWriteTokens, u.CompletionTokens, u.ReasoningTokens = sums[4].Int64, sums[5].Int64, sums[6].Int64
		u.CostUSD = cost.Float64
		if len(group) == 0 && u.Requests == 0 {
			continue // SUM over no rows: no usage, no row
		}
		out = append(out, u)
	}
	return out, rows.Err()
}

// requests lists raw records for q, newest first, and the cursor of the next page ("":
// none).
func (s *store) requests(ctx context.Context, q RequestQuery) ([]Record, string, error) {
	limit := q.Limit
	if limit <= 0 {
		limit = 100
	}
	limit = min(limit, 1000)
	var where []string
	var args []any
	if !q.From.IsZero() {
		where, args = append(where, "ts_us >= ?"), append(args, q.From.UnixMicro())
	}
	if !q.To.IsZero() {
		where, args = append(where, "ts_us < ?"), append(args, q.To.UnixMicro())
	}
	for _, f := range [...]struct{ col, v string }{{"key_name", q.Key}, {"team", q.Team}, {"model", q.Model}} {
		if f.v != "" {
			where, args = append(where, f.col+" = ?"), append(args, f.v)
		}
	}
	if q.Status != 0 {
		where, args = append(where, "status = ?"), append(args, q.Status)
	}
	if q.ErrorsOnly {
		where = append(where, "status >= 400")
	}
	if q.FallbacksOnly {
		where = append(where, "fallbacks > 0")
	}
	before := int64(math.MaxInt64)
	if q.Cursor != "" {
		id, err := strconv.ParseInt(q.Cursor, 10, 64)
		if err != nil || id <= 0 {
			return nil, "", fmt.Errorf("ledger: bad cursor %q", q.Cursor)
		}
		before = id
		where, args = append(where, "id < ?"), append(args, id)
	}
	sqlq := "SELECT id, " + strings.Join(columns[:], ", ") + " FROM ledger_requests"
	if len(where) > 0 {
		sqlq += " WHERE " + strings.Join(where, " AND ")
	}
	var out []Record
	var err error
	switch {
	case q.Key != "" && !s.d.dollar: // SQLite: by the key's ranges (keyranges.go)
		out, err = s.listByKey(ctx, q.Key, before, q, limit+1)
	case !s.d.dollar: // SQLite: the batch rows (batchread.go)
		out, err = s.listBatches(ctx, &q, before, limit+1)
	default:
		out, err = s.list(ctx, s.d.bind(sqlq+" ORDER BY id DESC LIMIT "+strconv.Itoa(limit+1)), args)
	}
	if err != nil {
		return nil, "", err
	}
	next := ""
	if len(out) > limit {
		out = out[:limit]
		next = strconv.FormatInt(out[limit-1].ID, 10)
	}
	return out, next, nil
}

// list runs q, a SELECT of "id, <columns>" of the records, and reads its rows.
func (s *store) list(ctx context.Context, q string, args []any) ([]Record, error) {
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("ledger: listing requests: %w", err)
	}
	defer rows.Close()
	var out []Record
	for rows.Next() {
		r, err := scanRecord(rows)
		if err != nil {
			return nil, fmt.Errorf("ledger: listing requests: %w", err)
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// scanRecord reads a row of "SELECT id, <columns>" into a Record.
func scanRecord(row scanner) (Record, error) {
	var r Record
	var ts, total, first, up int64
	var prompt, completion, attempts, tools sql.NullString
	if err := row.Scan(&r.ID, &ts, &r.RequestID, &r.Key, &r.Team, &r.API, &r.Model, &r.Served, &r.Backend,
		&r.Stream, &r.Status, &r.ErrorType, &r.PromptTokens, &r.CachedReadTokens, &r.CacheWriteTokens,
		&r.CompletionTokens, &r.ReasoningTokens, &r.CostUSD, &r.Estimated, &total, &first, &up,
		&r.ToolCalls, &r.Fallbacks, &r.CacheHit, &prompt, &completion,
		&r.Deployment, &r.TraceID, &r.ContinuedFrom, &attempts, &r.AttemptsOmitted,
		&tools, &r.ToolsOmitted); err != nil {
		return r, err
	}
	r.Time = time.UnixMicro(ts).UTC()
	r.Total, r.FirstToken, r.Upstream = time.Duration(total)*time.Millisecond, time.Duration(first)*time.Millisecond, time.Duration(up)*time.Millisecond
	r.Prompt, r.Completion = prompt.String, completion.String
	r.AttemptsJSON, r.ToolsJSON = attempts.String, tools.String
	return r, nil
}

// request reads the record of row id; ok is false when there is none.
func (s *store) request(ctx context.Context, id int64) (r Record, ok bool, err error) {
	if !s.d.dollar { // SQLite: from its batch row (batchread.go)
		return s.requestBatch(ctx, id)
	}
	row := s.db.QueryRowContext(ctx, s.d.bind("SELECT id, "+strings.Join(columns[:], ", ")+" FROM ledger_requests WHERE id = ?"), id)
	r, err = scanRecord(row)
	if errors.Is(err, sql.ErrNoRows) {
		return Record{}, false, nil
	}
	if err != nil {
		return Record{}, false, fmt.Errorf("ledger: reading request %d: %w", id, err)
	}
	return r, true, nil
}
