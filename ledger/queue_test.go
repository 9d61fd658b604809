package ledger_test

import (
	"context"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/agate-gateway/agate/ledger"
)

// TestLedger_QueueMemoryFollowsWhatWaits: with the default queue_size (65,536 records),
// a ledger that has written 20,000 records in batches of 2,000 holds about two batches'
// worth of queue (2 × 2,000 × 312 bytes ≈ 1.2 MB, and the writer's batch), not
// queue_size's worth (20 MB, which a channel of records held from the start, scanned by
// the garbage collector on every cycle).
func TestLedger_QueueMemoryFollowsWhatWaits(t *testing.T) {
	heap := func() int64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return int64(m.HeapAlloc)
	}
	before := heap()
	l := open(t, ledger.Options{Type: "sqlite", DSN: filepath.Join(t.TempDir(), "ledger.db"), FlushInterval: time.Hour})
	recs := benchRecords(2000)
	for range 10 {
		for _, r := range recs {
			r.Time = day0
			if !l.Add(r) {
				t.Fatal("a record was dropped")
			}
		}
		flush(t, l)
	}
	grew := heap() - before
	t.Logf("the heap grew by %.1f MB", float64(grew)/(1<<20))
	if limit := int64(4 << 20); grew > limit {
		t.Errorf("the heap grew by %d bytes, more than %d: the queue's memory does not follow what waits", grew, limit)
	}
	u, err := l.Usage(context.Background(), ledger.UsageQuery{From: day0, To: day0.Add(time.Hour)})
	if err != nil || len(u) != 1 || u[0].Requests != 20000 {
		t.Errorf("usage %+v, %v; want the 20,000 records", u, err)
	}
}
