package ledger_test

import (
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"testing"
	"time"

	"github.com/agate-gateway/agate/ledger"
)

// TestLedger_QueueIsNotScanned: records waiting in the queue add nothing the garbage
// collector must scan (docs/ledger.md, "GC and memory, ninth session"): 4,096 records
// queued, with an attempt each, grow the heap the collector scans by less than 32 bytes
// a record (0 measured: the blocks' headers), and the live heap by less than 512 bytes
// a record (445 measured). The queue of Records it replaced (513da79) grew both by 587
// bytes a record.
func TestLedger_QueueIsNotScanned(t *testing.T) {
	const n = 4096
	l := open(t, ledger.Options{Type: "sqlite", DSN: filepath.Join(t.TempDir(), "ledger.db"), BatchSize: 2 * n, FlushInterval: time.Hour})
	recs := benchRecords(n)
	for i := range recs {
		recs[i].Time = day0
		recs[i].Attempts = []ledger.Attempt{{Backend: recs[i].Backend, Deployment: "openai/" + recs[i].Model, Model: recs[i].Model, Status: recs[i].Status}}
	}
	sample := []metrics.Sample{{Name: "/gc/scan/heap:bytes"}, {Name: "/gc/heap/live:bytes"}}
	read := func() (scan, live int64) {
		runtime.GC() // the heap to scan is counted at a cycle's start: of the cycle before,
		runtime.GC() // and what was allocated since
		metrics.Read(sample)
		return int64(sample[0].Value.Uint64()), int64(sample[1].Value.Uint64())
	}
	scan0, live0 := read()
	for i := range recs {
		if !l.Add(recs[i]) {
			t.Fatal("a record was dropped")
		}
	}
	scan1, live1 := read()
	runtime.KeepAlive(recs)
	scan, live := (scan1-scan0)/n, (live1-live0)/n
	t.Logf("a queued record: %d bytes to scan, %d bytes live", scan, live)
	if scan >= 32 {
		t.Errorf("a queued record adds %d bytes the collector scans, want < 32", scan)
	}
	if live >= 512 {
		t.Errorf("a queued record holds %d bytes live, want < 512", live)
	}
	flush(t, l)
}
