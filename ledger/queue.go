package ledger

// maxBlockLen bounds a queue block's records: a block is min(BatchSize, QueueSize,
// maxBlockLen) records (912 KB at the default batch of 2,000).
const maxBlockLen = 4096

// block is a run of queued records: recs[:n] are filled. att holds copies of their
// attempts (Record.Attempts), so that Add keeps none of its caller's memory and the
// caller needs no copy of its own: a request's record is built without allocating.
// The writer writes a block's records as they are, one transaction a block (no copy
// into a batch of its own).
type block struct {
	recs []Record
	n    int
	att  []Attempt
}

// records are b's filled records.
func (b *block) records() []Record { return b.recs[:b.n] }

// queue holds the records waiting for the writer in fixed blocks of size records (a
// batch's worth), so that adding one copies one record and never a growing slice, and
// its memory follows what waits, a batch at a time: the writer takes the blocks, writes
// each, and gives them back, cleared, for reuse up to about two batches' worth; the rest
// are left to the garbage collector. It is not safe for concurrent use (the Ledger's
// mutex guards it).
type queue struct {
	// size is a block's records, set before the first push.
	size   int
	blocks []*block
	// n counts the records in blocks.
	n int
	// free are written blocks, cleared, for reuse; spare is the slice blocks had before
	// the last take, for the next.
	free, spare []*block
}

// push copies *r, and its attempts, to the end of the queue.
func (q *queue) push(r *Record) {
	rec := q.slot()
	*rec = *r
	q.commit(rec)
}

// slot returns the record at the end of the queue, which holds zeros (a new block's, or
// one recycle cleared), to be filled and then added by commit.
func (q *queue) slot() *Record {
	var b *block
	if k := len(q.blocks); k > 0 && q.blocks[k-1].n < len(q.blocks[k-1].recs) {
		b = q.blocks[k-1]
	} else {
		if k := len(q.free); k > 0 {
			b, q.free = q.free[k-1], q.free[:k-1]
		} else {
			b = &block{recs: make([]Record, q.size)}
		}
		q.blocks = append(q.blocks, b)
	}
	return &b.recs[b.n]
}

// commit adds rec, the record slot returned, filled since, to the queue: its attempts
// (the caller's array) are copied into its block's arena.
func (q *queue) commit(rec *Record) {
	b := q.blocks[len(q.blocks)-1]
	if k := len(rec.Attempts); k > 0 {
		if b.att == nil {
			b.att = make([]Attempt, 0, len(b.recs)) // one attempt a record, most often
		}
		// A full arena grows by append: the records already in it keep the old array,
		// which is let go with them.
		i := len(b.att)
		b.att = append(b.att, rec.Attempts...)
		rec.Attempts = b.att[i : i+k : i+k]
	}
	b.n++
	q.n++
}

// take empties the queue and returns its blocks, oldest first, to be given back by
// recycle once written.
func (q *queue) take() []*block {
	blocks := q.blocks
	q.blocks, q.spare, q.n = q.spare[:0], nil, 0
	return blocks
}

// recycle gives back the blocks take returned: cleared, and kept for reuse while the
// free ones hold fewer than 2×batch records.
func (q *queue) recycle(blocks []*block, batch int) {
	keep := (2*batch + q.size - 1) / q.size
	for i, b := range blocks {
		if len(q.free) < keep {
			clear(b.recs[:b.n])
			clear(b.att)
			b.n, b.att = 0, b.att[:0]
			q.free = append(q.free, b)
		}
		blocks[i] = nil
	}
	if cap(blocks) <= 2*keep {
		q.spare = blocks[:0]
	}
}
