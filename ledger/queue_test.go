package ledger_test

import (
	"context"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/agate-gateway/agate/ledger"
)

// TestLedger_QueueMemoryFollowsWhatWaits: with the default queue_size (65,536 records),
// a ledger that has written 20,000 records in batches of 2,000 holds about two batches'
// worth of queue (at most 2 blocks × 2,000 × 456 bytes ≈ 1.8 MB; 0.9 MB measured, one
// block, which the writer writes without a copy; 1.9 MB with 513da79's blocks of 256
// and its batch copy), not queue_size's worth (20 MB, which a channel of records held
// from the start, scanned by the garbage collector on every cycle).
func TestLedger_QueueMemoryFollowsWhatWaits(t *testing.T) {
	heap := func() int64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return int64(m.HeapAlloc)
	}
	before := heap()
	l := open(t, ledger.Options{Type: "sqlite", DSN: ledger.FreshSQLite(t), FlushInterval: time.Hour})
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

// TestLedger_AddCopiesAttempts: Add copies a record's attempts, so that the caller may
// reuse their array at once (the proxy passes its request's own, which the next request
// overwrites): records of one, three and no attempts, added through one array rewritten
// after each Add, past two queue blocks (a block is BatchSize records, here 256), are
// stored with their own attempts.
func TestLedger_AddCopiesAttempts(t *testing.T) {
	l := open(t, ledger.Options{Type: "sqlite", DSN: ledger.FreshSQLite(t), BatchSize: 256, FlushInterval: time.Hour})
	var reused [3]ledger.Attempt
	const n = 600
	for i := range n {
		count := [3]int{1, 3, 0}[i%3]
		for j := range count {
			reused[j] = ledger.Attempt{Backend: "b", Deployment: "b/m", Model: "m" + strconv.Itoa(i), Status: 200 + j}
		}
		r := ledger.Record{Time: day0, RequestID: strconv.Itoa(i), Key: "k", API: "chat", Model: "m", Status: 200}
		if count > 0 {
			r.Attempts = reused[:count]
		}
		if !l.Add(r) {
			t.Fatal("a record was dropped")
		}
		reused = [3]ledger.Attempt{{Model: "overwritten"}, {Model: "overwritten"}, {Model: "overwritten"}}
	}
	flush(t, l)
	recs, _, err := l.Requests(context.Background(), ledger.RequestQuery{Limit: 1000})
	if err != nil || len(recs) != n {
		t.Fatalf("%d records, %v; want %d", len(recs), err, n)
	}
	for _, r := range recs {
		i, _ := strconv.Atoi(r.RequestID)
		want := ""
		if count := [3]int{1, 3, 0}[i%3]; count > 0 {
			var b []byte
			b = append(b, '[')
			for j := range count {
				if j > 0 {
					b = append(b, ',')
				}
				b = append(b, `{"backend":"b","deployment":"b/m","model":"m`+strconv.Itoa(i)+`","status":`+strconv.Itoa(200+j)+
					`,"error_type":"","duration_ms":0,"continued":false,"prompt_tokens":0,"completion_tokens":0}`...)
			}
			want = string(append(b, ']'))
		}
		if r.AttemptsJSON != want {
			t.Errorf("record %d: attempts %s, want %s", i, r.AttemptsJSON, want)
		}
	}
}

// TestLedger_WriterCPU: OnWriteCPU is told of the writer's CPU time (Linux): after 2,000
// records are written it has been told of some, and of less than the whole process's.
func TestLedger_WriterCPU(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the writer's thread CPU is measured on Linux only")
	}
	var mu sync.Mutex
	var total time.Duration
	l := open(t, ledger.Options{Type: "sqlite", DSN: ledger.FreshSQLite(t), FlushInterval: time.Hour,
		OnWriteCPU: func(d time.Duration) { mu.Lock(); total += d; mu.Unlock() }})
	cpu0 := cpuTime()
	for _, r := range benchRecords(2000) {
		r.Time = day0
		if !l.Add(r) {
			t.Fatal("a record was dropped")
		}
	}
	flush(t, l)
	process := time.Duration(cpuTime() - cpu0)
	mu.Lock()
	defer mu.Unlock()
	t.Logf("writer %v, process %v for 2,000 records", total, process)
	if total <= 0 || total > process {
		t.Errorf("writer CPU %v: want more than 0 and at most the process's %v", total, process)
	}
}
