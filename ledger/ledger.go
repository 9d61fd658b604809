package ledger

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/agate-gateway/agate/internal/redact"
)

// Options configure a Ledger. Zero fields take the documented defaults.
type Options struct {
	// Type is "sqlite" or "postgres"; DSN the SQLite file's path or the postgres:// URL.
	Type, DSN string
	// QueueSize bounds the records waiting to be written. Default 65536. The queue's
	// memory follows what waits, not this bound: it is released once written.
	QueueSize int
	// BatchSize is the most records one transaction writes, and how many waiting records
	// wake the writer before FlushInterval. Default 2000.
	BatchSize int
	// FlushInterval is how long a record may wait for its batch to fill. Default 1s.
	FlushInterval time.Duration
	// SpoolPath is the file batches go to while the database cannot be written; empty
	// means none (such batches are dropped and counted). SpoolMaxBytes bounds it
	// (default 64 MiB); batches beyond are dropped and counted.
	SpoolPath     string
	SpoolMaxBytes int64
	// Retention of raw records and of the minute, hour and day rollups; zero keeps them
	// for ever. PruneInterval is how often the pruner runs (default 10m).
	Retention                                    time.Duration
	MinuteRetention, HourRetention, DayRetention time.Duration
	PruneInterval                                time.Duration
	// CaptureContent keeps Record.Prompt and Completion (masked, cut to MaxContentBytes,
	// default 2048, by the writer); otherwise Add and AddFrom drop them.
	CaptureContent  bool
	MaxContentBytes int
	// OnDrop is told of records dropped ("queue_full": the queue was full; "spool_full":
	// neither the database nor the spool could take them); OnWrite of records written.
	// Either may be nil. They run on the writer's goroutine, or Add's for queue_full.
	OnDrop  func(reason string, n int)
	OnWrite func(n int)
	// OnWriteCPU, when set, is told after each of the writer's wake-ups of the CPU time
	// its writes took on the writer's own thread (writecpu.go; on Linux, else never
	// called): what the ledger costs the process beside the request path's copy.
	OnWriteCPU func(d time.Duration)
	// Logger receives the writer's failures; nil discards them.
	Logger *slog.Logger
	// Now is the pruner's clock; nil means time.Now.
	Now func() time.Time
}

// Ledger writes records to the database off the request path. Safe for concurrent use.
type Ledger struct {
	opts Options
	st   *store
	// mu guards the queue (queue.go) and closed, set by Close: Add takes mu only to copy
	// its record into the queue's last block (no goroutine is woken per record).
	mu     sync.Mutex
	q      queue
	closed bool
	// full wakes the writer when BatchSize records wait (capacity 1, never blocks Add).
	full chan struct{}
	// stop ends the writer and the pruner; done closes when the writer has drained.
	stop        chan struct{}
	done, prune chan struct{}
	closeOnce   sync.Once
	// unwritable holds the last write error while the database cannot be written (nil
	// once a write succeeds).
	unwritable atomic.Pointer[error]
	spool      *spool
	// flushReq asks the writer to write what it holds now (Flush).
	flushReq chan chan struct{}
	// anonymous counts the requests refused before a key was known since the last write
	// (AddUnauthenticated).
	anonymous atomic.Int64
}

// Open opens the database, applies the migrations it lacks, and starts the writer and
// the pruner.
func Open(ctx context.Context, opts Options) (*Ledger, error) {
	if opts.QueueSize <= 0 {
		opts.QueueSize = 65536
	}
	if opts.BatchSize <= 0 {
		opts.BatchSize = 2000
	}
	if opts.FlushInterval <= 0 {
		opts.FlushInterval = time.Second
	}
	if opts.SpoolMaxBytes <= 0 {
		opts.SpoolMaxBytes = 64 << 20
	}
	if opts.PruneInterval <= 0 {
		opts.PruneInterval = 10 * time.Minute
	}
	if opts.MaxContentBytes <= 0 {
		opts.MaxContentBytes = 2048
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	st, err := openStore(ctx, opts.Type, opts.DSN)
	if err != nil {
		return nil, err
	}
	l := &Ledger{opts: opts, st: st, full: make(chan struct{}, 1), stop: make(chan struct{}),
		done: make(chan struct{}), prune: make(chan struct{}), flushReq: make(chan chan struct{})}
	l.q.size = min(opts.BatchSize, opts.QueueSize, maxBlockLen)
	if opts.SpoolPath != "" {
		l.spool = &spool{path: opts.SpoolPath, max: opts.SpoolMaxBytes}
		if err := l.spool.open(); err != nil {
			_ = st.db.Close()
			return nil, err
		}
	}
	go l.write()
	go l.pruneLoop()
	return l, nil
}

// Add queues r to be written and reports whether it was: it never blocks, and a full
// queue (or a closed ledger) drops r, counted as queue_full. It keeps MaxAttempts of
// r's attempts and counts the others in AttemptsOmitted, and MaxTools of its tools
// (the others' calls in ToolsOmitted). It copies r's attempts: the caller may reuse
// their array once Add returns. Without CaptureContent r's Prompt and Completion are
// not kept; with it the writer masks and cuts them before it writes or spools the
// record (maskContent).
func (l *Ledger) Add(r Record) bool {
	rec := l.reserve()
	if rec == nil {
		return false
	}
	*rec = r
	return l.commit(rec)
}

// Filler is what AddFrom takes a record from: the request path's own state, which
// fills the record in the queue itself (a record is ~450 bytes: built on the caller's
// stack and handed to Add it would be written three times).
type Filler interface {
	// FillRecord sets r's fields; r holds zeros. It runs with the ledger's queue
	// locked: it must be short, must not block and must not call the ledger. r's
	// Attempts may be the caller's own array (AddFrom copies them); r is not the
	// caller's after FillRecord returns.
	FillRecord(r *Record)
}

// AddFrom is Add of the record f fills in the queue's own memory (no copy of it): the
// request path's form of Add, with its contract; f is not called when the record is
// dropped.
func (l *Ledger) AddFrom(f Filler) bool {
	rec := l.reserve()
	if rec == nil {
		return false
	}
	f.FillRecord(rec)
	return l.commit(rec)
}

// reserve locks l.mu and returns the queue's next slot, zeroed, for commit; or, with
// the queue full or the ledger closed, unlocks it, counts the drop as queue_full and
// returns nil.
func (l *Ledger) reserve() *Record {
	l.mu.Lock()
	if l.closed || l.q.n >= l.opts.QueueSize {
		l.mu.Unlock()
		l.dropped("queue_full", 1)
		return nil
	}
	return l.q.slot()
}

// commit bounds rec, the queue's slot filled, adds it to the queue and unlocks l.mu
// (held since the slot was taken), waking the writer when a batch waits.
func (l *Ledger) commit(rec *Record) bool {
	boundAttempts(rec)
	boundTools(rec)
	if !l.opts.CaptureContent {
		rec.Prompt, rec.Completion = "", ""
	}
	l.q.commit(rec)
	n := l.q.n
	l.mu.Unlock()
	if n == l.opts.BatchSize {
		select {
		case l.full <- struct{}{}:
		default: // the writer is already woken
		}
	}
	return true
}

// AddUnauthenticated counts a request refused before its key was known (401: no key, or
// one no key matches). Such requests make no record (a flood of bad keys must not fill the
// database): the writer adds their count to the rollups of the minute it writes them in,
// as key, team and model "" with status 401, so usage reports show them. It never blocks
// or allocates.
func (l *Ledger) AddUnauthenticated() {
	l.anonymous.Add(1)
}

// maskContent masks and cuts the captured content of recs (content): with
// CaptureContent only (Add clears it otherwise), on the writer, before a record is
// written or spooled.
func (l *Ledger) maskContent(recs []Record) {
	if !l.opts.CaptureContent {
		return
	}
	for i := range recs {
		if r := &recs[i]; r.Prompt != "" || r.Completion != "" {
			r.Prompt, r.Completion = l.content(r.Prompt), l.content(r.Completion)
		}
	}
}

// content is s masked (internal/redact), then cut to MaxContentBytes on a rune boundary:
// masked first, so that a cut cannot leave part of a credential that no longer looks
// like one.
func (l *Ledger) content(s string) string {
	s = redact.Mask(s)
	if len(s) > l.opts.MaxContentBytes {
		n := l.opts.MaxContentBytes
		for n > 0 && !utf8.RuneStart(s[n]) {
			n--
		}
		s = s[:n]
	}
	return s
}

func (l *Ledger) dropped(reason string, n int) {
	if l.opts.OnDrop != nil && n > 0 {
		l.opts.OnDrop(reason, n)
	}
}

// Ready returns the last write error while the database cannot be written, nil when
// it can (records then go to the spool, or are dropped).
func (l *Ledger) Ready() error {
	if e := l.unwritable.Load(); e != nil {
		return *e
	}
	return nil
}

// Flush writes the queued records now, and the spooled ones if the database takes them,
// and returns once they are written (or spooled).
func (l *Ledger) Flush(ctx context.Context) error {
	ack := make(chan struct{})
	select {
	case l.flushReq <- ack:
	case <-l.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case <-ack:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Close stops taking records, writes what is queued and spooled (until ctx ends: then
// the queue is spooled, or dropped and counted), and closes the database.
func (l *Ledger) Close(ctx context.Context) error {
	var err error
	l.closeOnce.Do(func() {
		l.mu.Lock()
		l.closed = true // no record is queued after the writer's last take
		l.mu.Unlock()
		close(l.stop)
		select {
		case <-l.done:
		case <-ctx.Done():
			err = fmt.Errorf("ledger: closing: %w", ctx.Err())
			<-l.done // the writer's write is bounded by its own timeout
		}
		<-l.prune
		if l.spool != nil {
			_ = l.spool.close()
		}
		if cerr := l.st.close(); err == nil {
			err = cerr
		}
	})
	return err
}

// writeTimeout bounds one batch's write.
const writeTimeout = 10 * time.Second

// write is the writer goroutine: when BatchSize records wait, at each FlushInterval, on
// Flush and at Close, it takes every waiting record and writes them in batches.
func (l *Ledger) write() {
	defer close(l.done)
	tick := time.NewTicker(l.opts.FlushInterval)
	defer tick.Stop()
	for {
		var ack chan struct{}
		stop, unspool := false, true
		select {
		case <-l.full:
			unspool = false
		case <-tick.C:
		case ack = <-l.flushReq:
		case <-l.stop:
			stop = true
		}
		l.timedWrite(func() {
			l.writeQueued()
			if unspool {
				l.unspool()
			}
		})
		if ack != nil {
			close(ack)
		}
		if stop {
			return
		}
	}
}

// writeQueued takes the queue and writes it a block at a time (a block is at most
// BatchSize records: queue.go), each block's records as they are, without a copy.
func (l *Ledger) writeQueued() {
	l.mu.Lock()
	blocks := l.q.take()
	l.mu.Unlock()
	if len(blocks) == 0 {
		l.flush(nil) // the anonymous refusals alone, if any
		return
	}
	for _, b := range blocks {
		recs := b.records()
		l.maskContent(recs)
		l.flush(recs)
	}
	l.mu.Lock()
	l.q.recycle(blocks, l.opts.BatchSize)
	l.mu.Unlock()
}

// flush writes batch and the anonymous refusals counted since the last write (or spools
// the batch when the database fails, keeping the count for the next write).
func (l *Ledger) flush(batch []Record) {
	anon := anonymous{n: l.anonymous.Swap(0), at: l.opts.Now()}
	if len(batch) == 0 && anon.n == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), writeTimeout)
	err := l.st.insertWith(ctx, batch, anon)
	cancel()
	if err != nil {
		l.anonymous.Add(anon.n)
	}
	if err == nil {
		l.unwritable.Store(nil)
		if l.opts.OnWrite != nil {
			l.opts.OnWrite(len(batch))
		}
		return
	}
	if l.unwritable.Load() == nil {
		l.opts.Logger.Error("ledger: the database cannot be written; spooling", "error", err.Error())
	}
	// The driver's message names the host and user at most; masked all the same.
	e := errors.New("ledger: the " + l.opts.Type + " database cannot be written: " + redact.Mask(err.Error()))
	l.unwritable.Store(&e)
	if len(batch) == 0 { // anonymous refusals only: kept for the next write
		return
	}
	if l.spool == nil {
		l.dropped("spool_full", len(batch))
		return
	}
	if err := l.spool.add(batch); err != nil {
		l.dropped("spool_full", len(batch))
	}
}

// unspool writes the spooled batches back while the database takes them.
func (l *Ledger) unspool() {
	if l.spool == nil || l.spool.empty() {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), writeTimeout)
	defer cancel()
	if err := l.st.db.PingContext(ctx); err != nil {
		return
	}
	err := l.spool.drain(func(batch []Record) error { return l.st.insert(ctx, batch) })
	if err != nil {
		l.opts.Logger.Warn("ledger: writing the spool back failed; kept for later", "error", err.Error())
		return
	}
	l.unwritable.Store(nil)
}

// pruneLoop runs Prune every PruneInterval until Close.
func (l *Ledger) pruneLoop() {
	defer close(l.prune)
	tick := time.NewTicker(l.opts.PruneInterval)
	defer tick.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-tick.C:
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			if _, err := l.Prune(ctx); err != nil {
				l.opts.Logger.Warn("ledger: pruning failed", "error", err.Error())
			}
			cancel()
		}
	}
}

// maxPruneBatches bounds the deletes of one table in one Prune: the rest waits for
// the next run.
const maxPruneBatches = 200

// Prune deletes the raw records and rollups older than their retentions, in batches,
// and returns how many rows it deleted. On PostgreSQL it first makes the raw records'
// partitions of the coming months and drops those wholly older than the retention
// (their rows counted by the planner's estimate).
func (l *Ledger) Prune(ctx context.Context) (int64, error) {
	now := l.opts.Now()
	if err := l.st.ensureAhead(ctx, now); err != nil { // partition.go: PostgreSQL's next months
		return 0, err
	}
	cut := func(d time.Duration) time.Time {
		if d <= 0 {
			return time.Time{}
		}
		return now.Add(-d)
	}
	return l.st.prune(ctx, cut(l.opts.Retention),
		[3]time.Time{cut(l.opts.MinuteRetention), cut(l.opts.HourRetention), cut(l.opts.DayRetention)}, maxPruneBatches)
}

// Usage runs a usage report over the rollups.
func (l *Ledger) Usage(ctx context.Context, q UsageQuery) ([]UsageRow, error) {
	return l.st.usage(ctx, q)
}

// Requests lists raw records, newest first, and the cursor of the next page ("": none).
func (l *Ledger) Requests(ctx context.Context, q RequestQuery) ([]Record, string, error) {
	return l.st.requests(ctx, q)
}

// Request returns the record whose ID is id; ok is false when there is none (never
// written, or pruned).
func (l *Ledger) Request(ctx context.Context, id int64) (r Record, ok bool, err error) {
	return l.st.request(ctx, id)
}

// SchemaVersion returns the database's schema version.
func (l *Ledger) SchemaVersion(ctx context.Context) (int, error) { return l.st.version(ctx) }
