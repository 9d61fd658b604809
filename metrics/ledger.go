package metrics

import "github.com/prometheus/client_golang/prometheus"

// Ledger are the usage ledger's collectors (ledger.Options.OnDrop, OnWrite, OnWriteCPU).
type Ledger struct {
	// Dropped counts records the ledger did not keep, by reason: queue_full (its queue
	// was full, or it was closing) or spool_full (the database could not be written and
	// the spool file could not take them).
	Dropped *prometheus.CounterVec // reason
	// Written counts records written to the ledger's database.
	Written prometheus.Counter
	// WriterCPU counts the CPU seconds the ledger's writer spent writing, on its own
	// thread (Linux only): divided by Written, what a record costs the process.
	WriterCPU prometheus.Counter
}

// newLedger makes and registers the ledger's collectors, their reasons at zero.
func newLedger(reg prometheus.Registerer) Ledger {
	l := Ledger{
		Dropped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gateway_ledger_dropped_total", Help: "Usage ledger records dropped: queue_full (the write queue was full) or spool_full (the database could not be written and the spool file was full or off).",
		}, []string{"reason"}),
		Written: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "gateway_ledger_records_written_total", Help: "Usage ledger records written to its database.",
		}),
		WriterCPU: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "gateway_ledger_writer_cpu_seconds_total", Help: "CPU time the usage ledger's writer spent writing records and rollups, on its own thread (Linux; PostgreSQL's COPY row encoding, on another goroutine, not counted).",
		}),
	}
	reg.MustRegister(l.Dropped, l.Written, l.WriterCPU)
	l.Dropped.WithLabelValues("queue_full")
	l.Dropped.WithLabelValues("spool_full")
	return l
}
