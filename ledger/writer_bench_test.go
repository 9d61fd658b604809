package ledger_test

import (
	"context"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/agate-gateway/agate/ledger"
)

// BenchmarkLedger_Write is the writer's cost per record: records are added through the
// real Ledger in bursts of batch (what the flush interval gathers at a given rate: 1,000
// records a second and the default 1 s interval make batches of 1,000), each burst
// flushed to a real database file, with the rollups. An op is one record written. It
// reports the process's CPU time per record (cpu-ns/record: the writer's goroutine, the
// driver and the garbage collector, which the wall time on a shared machine is not) and
// the bytes a queued record holds (queue-bytes/record). Records look like a gateway's:
// ten keys in two teams, three models, one answer in ten an error.
//
//	go test -run '^$' -bench BenchmarkLedger_Write -benchmem -benchtime 20000x ./ledger
func BenchmarkLedger_Write(b *testing.B) {
	for _, db := range []string{"sqlite", "postgres"} {
		for _, batch := range []int{100, 1000, 4000} {
			b.Run(db+"/batch="+strconv.Itoa(batch), func(b *testing.B) {
				opts := ledger.Options{Type: db, DSN: filepath.Join(b.TempDir(), "ledger.db"), FlushInterval: time.Hour}
				if db == "postgres" {
					opts.DSN = ledger.Postgres.NewDatabase(b)
				}
				l, err := ledger.Open(context.Background(), opts)
				if err != nil {
					b.Fatal(err)
				}
				defer l.Close(context.Background())
				recs := benchRecords(4096)
				ctx := context.Background()
				b.ReportAllocs()
				cpu0 := cpuTime()
				b.ResetTimer()
				i := 0
				for b.Loop() {
					r := recs[i%len(recs)]
					r.Time = time.Now()
					if !l.Add(r) {
						b.Fatal("a record was dropped")
					}
					if i++; i%batch == 0 {
						if err := l.Flush(ctx); err != nil {
							b.Fatal(err)
						}
					}
				}
				if err := l.Flush(ctx); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/record")
				b.ReportMetric(float64(ledger.QueuedBytes()), "queue-bytes/record")
			})
		}
	}
}

// benchRecords are n records of ten keys in two teams, three models, one in ten failed.
func benchRecords(n int) []ledger.Record {
	models := []string{"gpt-4o-mini", "claude-sonnet-4", "llama-3.1-8b"}
	out := make([]ledger.Record, n)
	for i := range out {
		k := i % 10
		r := ledger.Record{RequestID: "req_" + strconv.FormatInt(int64(1e12+i), 16), Key: "key-" + strconv.Itoa(k),
			Team: "team-" + strconv.Itoa(k%2), API: "chat", Model: models[i%3], Served: models[i%3], Backend: "openai",
			Stream: i%2 == 0, Status: 200, PromptTokens: int64(100 + i%900), CachedReadTokens: int64(i % 64),
			CompletionTokens: int64(20 + i%200), CostUSD: float64(i%1000) / 1e5, Total: time.Duration(100+i%900) * time.Millisecond,
			FirstToken: 80 * time.Millisecond, Upstream: 90 * time.Millisecond}
		if i%10 == 9 {
			r.Status, r.ErrorType, r.Served = 429, "rate_limit_exceeded", ""
		}
		out[i] = r
	}
	return out
}

// cpuTime is the process's user and system CPU time in nanoseconds.
func cpuTime() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// BenchmarkLedger_AddKeepingUp is Add's cost on the request path while the writer keeps
// up, as in a gateway below the database's rate: one record added by each op, every
// batch of 1,000 written (not timed) before the next is added, so that the queue is
// never full and Add never drops.
func BenchmarkLedger_AddKeepingUp(b *testing.B) {
	l, err := ledger.Open(context.Background(), ledger.Options{Type: "sqlite", DSN: filepath.Join(b.TempDir(), "ledger.db"), FlushInterval: time.Hour})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close(context.Background())
	recs := benchRecords(1000)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if !l.Add(recs[i]) {
			b.Fatal("a record was dropped")
		}
		if i++; i == len(recs) {
			i = 0
			b.StopTimer()
			if err := l.Flush(context.Background()); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
		}
	}
}

// BenchmarkLedger_Throughput is how many records a second the ledger writes with its
// default batching (BatchSize 2000, FlushInterval 1s) while writers goroutines add
// records as fast as they can, as a gateway's request goroutines would at full load: an
// op is one record added and written (a record Add refuses because the queue is full is
// added again after 100 µs, so none is lost). It reports records/s (the wall time until
// the last is written) and the process's cpu-ns/record.
//
//	go test -run '^$' -bench BenchmarkLedger_Throughput -benchtime 200000x ./ledger
func BenchmarkLedger_Throughput(b *testing.B) {
	for _, writers := range []int{1, 4, 16} {
		b.Run("sqlite/writers="+strconv.Itoa(writers), func(b *testing.B) {
			l, err := ledger.Open(context.Background(), ledger.Options{Type: "sqlite", DSN: filepath.Join(b.TempDir(), "ledger.db")})
			if err != nil {
				b.Fatal(err)
			}
			defer l.Close(context.Background())
			recs := benchRecords(4096)
			b.ReportAllocs()
			cpu0, t0 := cpuTime(), time.Now()
			b.ResetTimer()
			var next atomic.Int64
			var wg sync.WaitGroup
			for range writers {
				wg.Go(func() {
					for i := next.Add(1) - 1; i < int64(b.N); i = next.Add(1) - 1 {
						r := recs[i%int64(len(recs))]
						r.Time = time.Now()
						for !l.Add(r) {
							time.Sleep(100 * time.Microsecond)
						}
					}
				})
			}
			wg.Wait()
			if err := l.Flush(context.Background()); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			b.ReportMetric(float64(b.N)/time.Since(t0).Seconds(), "records/s")
			b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/record")
		})
	}
}
