package ledger

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/bits"

	"modernc.org/libc"
	sqlite3 "modernc.org/sqlite/lib"
)

// sqliteWriter writes the writer's batches on SQLite through the SQLite library's own
// API (modernc.org/sqlite/lib, the pure-Go SQLite the database/sql driver wraps), on a
// connection of its own, not database/sql's: opened SQLITE_OPEN_NOMUTEX (the store's
// writer goroutine is its only user, so SQLite's per-call connection mutex, which the
// driver's connections take on every bind and step, is left out), its statements
// prepared once, integers and floats bound as they are (no boxing), and the texts of a
// statement copied into one C buffer the writer keeps and bound from it without a copy
// (SQLITE_STATIC). The driver copies every text into C memory of its own, keeps a list
// of them to free and unbinds each after the step: with its conversions and its mutex,
// more than half of the writer's CPU and all of its allocations (docs/ledger.md, "The
// SQLite writer, sixth session").
//
// Readers and every other statement keep database/sql's pool; SQLite's WAL lets the two
// connections work side by side, and its busy timeout covers another writer (the pruner).
// Not safe for concurrent use: the store's writer goroutine is its only user.
type sqliteWriter struct {
	// path is the database file, as the pool's DSN names it (file: URI).
	path string
	// tls is the C library's thread state the calls run under, db the connection (0 until
	// the first write, and after it broke), prep the statements prepared on it.
	tls  *libc.TLS
	db   uintptr
	prep map[stmtKey]uintptr
	// begin, commit and rollback are the transaction's statements, seq reads the
	// batches' sequence (nextID). The transaction takes the write lock at its start
	// (BEGIN IMMEDIATE, waiting within the busy timeout): the sequence it reads first
	// is then the one its inserts continue, and another writer (a second process, the
	// pruner) cannot make its first write fail on a stale snapshot.
	begin, commit, rollback, seq uintptr
	// cbuf is the C buffer a statement's texts are bound from, kept and grown to the
	// largest statement's texts; cmem is the same memory seen as a Go slice (written
	// with copy), its length the buffer's size.
	cbuf uintptr
	cmem []byte
	// texts are a statement's texts, gathered while its other values are bound, in the
	// C buffer itself (cmem[:0], appended to) while they fit, else in Go memory append
	// moved them to (exec then grows the buffer and copies them); spans their places in
	// texts and their parameters.
	texts []byte
	spans []textSpan
	// st is the statement being bound, rc the first error its binds returned.
	st uintptr
	rc int32
	// text gives the statements' texts during a write.
	text func(table string, n int) string
	// enc encodes the batch rows (batches.go).
	enc batchEncoder
	// times are a write's records' times in Unix microseconds (insertRecords), same
	// sameRoutes' answers for them (store.insertWith), reused.
	times []int64
	same  []bool
	// keys and ranges are a batch's keys' ranges (keyranges.go), reused.
	keys   map[string]int
	ranges []keyRange
}

// textSpan is a text parameter: the bytes texts[off:off+n] bound to parameter i.
type textSpan struct {
	i      int32
	off, n int
}

// writerCacheKiB bounds the writer connection's page cache (writerPragmas sets it:
// cache_size=-512). SQLite's default, 2,000 KiB, filled with the pages of the batch rows
// the writer appends and never reads again: 2.2 MB of C heap a gateway kept for nothing.
// A batch of 2,000 records dirties about 70 pages (280 KiB), which fit; a larger
// batch_size may spill pages to the WAL before its commit, which SQLite does correctly
// (at 4,096 records a batch: the same instructions and writes, 8% more reads;
// docs/ledger.md, "GC and memory, ninth session").
const writerCacheKiB = 512

// writerPragmas are the writer connection's settings (those of the pool's DSN in
// store.go that are per connection: journal_mode WAL is the database's), and its page
// cache's bound.
const writerPragmas = "PRAGMA synchronous=NORMAL; PRAGMA busy_timeout=10000; PRAGMA cache_size=-512;"

// open opens the writer's connection if it has none.
func (w *sqliteWriter) open() error {
	if w.db != 0 {
		return nil
	}
	if w.tls == nil {
		w.tls = libc.NewTLS()
	}
	name, err := libc.CString("file:" + w.path)
	if err != nil {
		return err
	}
	defer libc.Xfree(w.tls, name)
	pp := libc.Xmalloc(w.tls, 8)
	if pp == 0 {
		return errors.New("ledger: sqlite: out of memory")
	}
	defer libc.Xfree(w.tls, pp)
	rc := sqlite3.Xsqlite3_open_v2(w.tls, name, pp,
		sqlite3.SQLITE_OPEN_READWRITE|sqlite3.SQLITE_OPEN_CREATE|sqlite3.SQLITE_OPEN_NOMUTEX|sqlite3.SQLITE_OPEN_URI, 0)
	w.db = readPtr(pp)
	if rc != sqlite3.SQLITE_OK {
		err := w.error("opening the writer's connection", rc)
		w.release()
		return err
	}
	sqlite3.Xsqlite3_extended_result_codes(w.tls, w.db, 1)
	w.prep = map[stmtKey]uintptr{}
	if err := w.execText(writerPragmas); err != nil {
		w.release()
		return err
	}
	for _, s := range []struct {
		p   *uintptr
		sql string
	}{{&w.begin, "BEGIN IMMEDIATE"}, {&w.commit, "COMMIT"}, {&w.rollback, "ROLLBACK"},
		{&w.seq, "SELECT MAX(seq) FROM sqlite_sequence WHERE name = '" + batchesTable + "'"}} {
		if *s.p, err = w.prepare(s.sql); err != nil {
			w.release()
			return err
		}
	}
	return nil
}

// readPtr reads the pointer a C call left at p.
func readPtr(p uintptr) uintptr {
	if bits.UintSize == 32 {
		return uintptr(binary.NativeEndian.Uint32(libc.GoBytes(p, 4)))
	}
	return uintptr(binary.NativeEndian.Uint64(libc.GoBytes(p, 8)))
}

// prepare compiles sql (one statement) on the writer's connection.
func (w *sqliteWriter) prepare(sql string) (uintptr, error) {
	z, err := libc.CString(sql)
	if err != nil {
		return 0, err
	}
	defer libc.Xfree(w.tls, z)
	pp := libc.Xmalloc(w.tls, 8)
	if pp == 0 {
		return 0, errors.New("ledger: sqlite: out of memory")
	}
	defer libc.Xfree(w.tls, pp)
	if rc := sqlite3.Xsqlite3_prepare_v2(w.tls, w.db, z, int32(len(sql)), pp, 0); rc != sqlite3.SQLITE_OK {
		return 0, w.error("preparing a statement", rc)
	}
	return readPtr(pp), nil
}

// execText runs sql (statements without results) on the writer's connection.
func (w *sqliteWriter) execText(sql string) error {
	z, err := libc.CString(sql)
	if err != nil {
		return err
	}
	defer libc.Xfree(w.tls, z)
	if rc := sqlite3.Xsqlite3_exec(w.tls, w.db, z, 0, 0, 0); rc != sqlite3.SQLITE_OK {
		return w.error("configuring the writer's connection", rc)
	}
	return nil
}

// error is rc as an error, with SQLite's message of the connection when it has one.
func (w *sqliteWriter) error(what string, rc int32) error {
	msg := libc.GoString(sqlite3.Xsqlite3_errstr(w.tls, rc))
	if w.db != 0 && sqlite3.Xsqlite3_extended_errcode(w.tls, w.db) == rc {
		msg = libc.GoString(sqlite3.Xsqlite3_errmsg(w.tls, w.db))
	}
	return &sqliteError{what: what, msg: msg, code: rc}
}

// sqliteError is a failed call of the writer's connection: code is SQLite's extended
// result code.
type sqliteError struct {
	what, msg string
	code      int32
}

func (e *sqliteError) Error() string {
	return fmt.Sprintf("sqlite: %s: %s (%d)", e.what, e.msg, e.code)
}

// broken reports whether err leaves the writer's connection unfit for the next batch
// (an I/O error, a damaged or replaced file, no memory), so it is closed and opened again.
func broken(err error) bool {
	var e *sqliteError
	if !errors.As(err, &e) {
		return false
	}
	switch e.code & 0xff {
	case sqlite3.SQLITE_IOERR, sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_NOTADB,
		sqlite3.SQLITE_NOMEM, sqlite3.SQLITE_MISUSE, sqlite3.SQLITE_INTERNAL:
		return true
	}
	return false
}

// write runs fn in a transaction on the writer's connection; fn's statements are
// text's (prepared once per key). A failed transaction is rolled back; a connection
// the failure broke is closed, and the next write opens another.
func (w *sqliteWriter) write(ctx context.Context, text func(table string, n int) string, fn func() error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := w.open(); err != nil {
		return err
	}
	err := w.run(w.begin, "beginning a transaction")
	if err == nil {
		w.text = text
		err = fn()
		w.text = nil
		if err == nil {
			err = w.run(w.commit, "committing")
		}
		if err != nil {
			_ = w.run(w.rollback, "rolling back") // nothing to roll back after INSERT OR ROLLBACK failed
		}
	}
	if broken(err) {
		w.release()
	}
	return err
}

// run steps st, a statement without parameters or results, to its end.
func (w *sqliteWriter) run(st uintptr, what string) error {
	rc := sqlite3.Xsqlite3_step(w.tls, st)
	sqlite3.Xsqlite3_reset(w.tls, st)
	if rc != sqlite3.SQLITE_DONE {
		return w.error(what, rc)
	}
	return nil
}

// stmt starts binding the statement key (prepared once): its values follow with
// int, float, str and null, in parameter order from 1, and exec runs it.
func (w *sqliteWriter) stmt(key stmtKey) error {
	st := w.prep[key]
	if st == 0 {
		var err error
		if st, err = w.prepare(w.text(key.table, key.n)); err != nil {
			return err
		}
		w.prep[key] = st
	}
	w.st, w.rc = st, sqlite3.SQLITE_OK
	w.texts, w.spans = w.cmem[:0], w.spans[:0]
	return nil
}

// int binds parameter i to v.
func (w *sqliteWriter) int(i int32, v int64) {
	if rc := sqlite3.Xsqlite3_bind_int64(w.tls, w.st, i, v); rc != sqlite3.SQLITE_OK && w.rc == sqlite3.SQLITE_OK {
		w.rc = rc
	}
}

// bool binds parameter i to 1 or 0.
func (w *sqliteWriter) bool(i int32, v bool) {
	n := int64(0)
	if v {
		n = 1
	}
	w.int(i, n)
}

// float binds parameter i to v.
func (w *sqliteWriter) float(i int32, v float64) {
	if rc := sqlite3.Xsqlite3_bind_double(w.tls, w.st, i, v); rc != sqlite3.SQLITE_OK && w.rc == sqlite3.SQLITE_OK {
		w.rc = rc
	}
}

// null binds parameter i to NULL.
func (w *sqliteWriter) null(i int32) {
	if rc := sqlite3.Xsqlite3_bind_null(w.tls, w.st, i); rc != sqlite3.SQLITE_OK && w.rc == sqlite3.SQLITE_OK {
		w.rc = rc
	}
}

// str binds parameter i to s (at exec, from the C buffer).
func (w *sqliteWriter) str(i int32, s string) {
	w.spans = append(w.spans, textSpan{i: i, off: len(w.texts), n: len(s)})
	w.texts = append(w.texts, s...)
}

// strs binds the parameters after p to ss, in order (at exec, from the C buffer).
func (w *sqliteWriter) strs(p int32, ss ...string) {
	for i, s := range ss {
		w.str(p+1+int32(i), s)
	}
}

// strFrom binds parameter i to what appendFn appends (at exec, from the C buffer).
func (w *sqliteWriter) strFrom(i int32, appendFn func([]byte) []byte) {
	off := len(w.texts)
	w.texts = appendFn(w.texts)
	w.spans = append(w.spans, textSpan{i: i, off: off, n: len(w.texts) - off})
}

// exec binds the statement's texts from the C buffer and runs it. Texts gathered in the
// buffer (they fitted) are bound where they are; others are copied into it, grown.
func (w *sqliteWriter) exec(what string) error {
	if n := len(w.texts); n > 0 && (len(w.cmem) == 0 || &w.texts[0] != &w.cmem[0]) {
		if n > len(w.cmem) {
			if err := w.grow(n); err != nil {
				return err
			}
		}
		copy(w.cmem, w.texts)
	}
	for _, s := range w.spans {
		// A text of length 0 is bound from the buffer's start: '' (not NULL).
		if rc := sqlite3.Xsqlite3_bind_text(w.tls, w.st, s.i, w.cbuf+uintptr(s.off), int32(s.n), sqlite3.SQLITE_STATIC); rc != sqlite3.SQLITE_OK && w.rc == sqlite3.SQLITE_OK {
			w.rc = rc
		}
	}
	if w.rc != sqlite3.SQLITE_OK {
		return w.error(what, w.rc)
	}
	rc := sqlite3.Xsqlite3_step(w.tls, w.st)
	// The texts' bindings point into cbuf, which the next statement overwrites: the
	// statement is reset here and every parameter bound again before its next step.
	sqlite3.Xsqlite3_reset(w.tls, w.st)
	if rc != sqlite3.SQLITE_DONE {
		return w.error(what, rc)
	}
	return nil
}

// grow replaces the C buffer with one of at least n bytes.
func (w *sqliteWriter) grow(n int) error {
	size := max(n, 2*len(w.cmem), 64<<10)
	if size > math.MaxInt32 {
		return errors.New("ledger: sqlite: a statement's texts are over 2 GB")
	}
	p := libc.Xmalloc(w.tls, libc.Tsize_t(size))
	if p == 0 {
		return errors.New("ledger: sqlite: out of memory")
	}
	if w.cbuf != 0 {
		libc.Xfree(w.tls, w.cbuf)
	}
	w.cbuf, w.cmem = p, libc.GoBytes(p, size)[:size:size] // appends past size move to Go memory
	return nil
}

// release finalizes the writer's statements, closes its connection and frees its
// buffer.
func (w *sqliteWriter) release() {
	if w.tls == nil {
		return
	}
	for _, st := range w.prep {
		sqlite3.Xsqlite3_finalize(w.tls, st)
	}
	for _, st := range []uintptr{w.begin, w.commit, w.rollback, w.seq} {
		if st != 0 {
			sqlite3.Xsqlite3_finalize(w.tls, st)
		}
	}
	if w.db != 0 {
		sqlite3.Xsqlite3_close_v2(w.tls, w.db)
	}
	if w.cbuf != 0 {
		libc.Xfree(w.tls, w.cbuf)
	}
	w.tls.Close()
	// texts may be the freed buffer's memory: not kept.
	*w = sqliteWriter{path: w.path, spans: w.spans[:0], enc: w.enc, times: w.times[:0], same: w.same[:0]}
}

// insertRecords writes recs as batch rows of at most maxBatchRecords records
// (batches.go), and their keys' ranges (keyranges.go). The records' ids continue the
// batches' AUTOINCREMENT sequence (the largest last_id ever written, pruned or not),
// read in the transaction, which holds SQLite's one write lock.
func (w *sqliteWriter) insertRecords(recs []Record, same []bool) error {
	if len(recs) == 0 {
		return nil
	}
	first, err := w.nextID()
	if err != nil {
		return fmt.Errorf("ledger: inserting records: %w", err)
	}
	// The records' times in microseconds, read once for the rows' bounds, the rows and
	// the keys' ranges.
	w.times = w.times[:0]
	for i := range recs {
		w.times = append(w.times, recs[i].Time.UnixMicro())
	}
	for i := 0; i < len(recs); i += maxBatchRecords {
		j := min(i+maxBatchRecords, len(recs))
		batch, times := recs[i:j], w.times[i:j]
		var runs []bool
		if same != nil {
			runs = same[i:j]
		}
		if err := w.stmt(stmtKey{batchesTable, 1}); err != nil {
			return fmt.Errorf("ledger: inserting records: %w", err)
		}
		lo, hi := times[0], times[0]
		for _, us := range times {
			lo, hi = min(lo, us), max(hi, us)
		}
		id := first + int64(i)
		w.int(1, id+int64(len(batch))-1)
		w.int(2, id)
		w.int(3, lo)
		w.int(4, hi)
		w.int(5, int64(len(batch)))
		w.strFrom(6, func(b []byte) []byte { return w.enc.appendBatchAt(b, batch, times, runs, nil, lo) })
		if err := w.exec("inserting records"); err != nil {
			return fmt.Errorf("ledger: inserting records: %w", err)
		}
	}
	if w.keys == nil {
		w.keys = map[string]int{}
	}
	w.ranges = keyRanges(recs, w.times, same, w.keys, w.ranges)
	defer clear(w.keys) // the records' strings are not kept
	return eachChunk(len(w.ranges), func(i, j int) error {
		if err := w.stmt(stmtKey{keyRangesTable, j - i}); err != nil {
			return fmt.Errorf("ledger: recording the keys' ranges: %w", err)
		}
		for k, r := range w.ranges[i:j] {
			p := int32(k * 5)
			w.int(p+1, first+int64(r.first))
			w.int(p+2, first+int64(r.last))
			w.str(p+3, recs[r.first].Key)
			w.int(p+4, r.firstUS)
			w.int(p+5, r.lastUS)
		}
		if err := w.exec("recording the keys' ranges"); err != nil {
			return fmt.Errorf("ledger: recording the keys' ranges: %w", err)
		}
		return nil
	})
}

// nextID is the id of the next record: one more than the batches' sequence (1 when
// none was ever written).
func (w *sqliteWriter) nextID() (int64, error) {
	rc := sqlite3.Xsqlite3_step(w.tls, w.seq)
	var seq int64
	if rc == sqlite3.SQLITE_ROW {
		seq = sqlite3.Xsqlite3_column_int64(w.tls, w.seq, 0)
		rc = sqlite3.Xsqlite3_step(w.tls, w.seq)
	}
	sqlite3.Xsqlite3_reset(w.tls, w.seq)
	if rc != sqlite3.SQLITE_DONE {
		return 0, w.error("reading the records' sequence", rc)
	}
	return seq + 1, nil
}

// spend binds the token and cost columns (spendDDL's, in its order) to the six
// parameters after p.
func (w *sqliteWriter) spend(p int32, prompt, cachedRead, cacheWrite, completion, reasoning int64, costUSD float64) {
	w.int(p+1, prompt)
	w.int(p+2, cachedRead)
	w.int(p+3, cacheWrite)
	w.int(p+4, completion)
	w.int(p+5, reasoning)
	w.float(p+6, costUSD)
}

// upsertRollups adds each table's rows to it, in statements of writeChunks' sizes
// (upsertSQL's parameters: rollupDims, then rollupColumns).
func (w *sqliteWriter) upsertRollups(rollups []rollupRows) error {
	const per = int32(len(rollupDims) + len(rollupColumns))
	for ti, rows := range rollups {
		table := rollupTables[ti].name
		err := eachChunk(len(rows), func(i, j int) error {
			if err := w.stmt(stmtKey{table, j - i}); err != nil {
				return err
			}
			for k := range rows[i:j] {
				r, p := &rows[i+k], int32(k)*per
				w.int(p+1, r.bucket)
				w.strs(p+1, r.key, r.team, r.model)
				w.int(p+5, int64(r.status))
				w.str(p+6, r.deployment)
				w.int(p+7, r.requests)
				w.int(p+8, r.errors)
				w.spend(p+8, r.prompt, r.cachedRead, r.cacheWrite, r.completion, r.reasoning, r.costUSD)
				w.int(p+15, r.totalMS)
			}
			return w.exec("updating " + table)
		})
		if err != nil {
			return fmt.Errorf("ledger: updating %s: %w", table, err)
		}
	}
	return nil
}
