package proxy

import (
	"testing"
	"time"

	"github.com/agate-gateway/agate/config"
	"github.com/agate-gateway/agate/ledger"
	"github.com/agate-gateway/agate/translate"
)

// countingLedger is a Ledger that counts what it is given.
type countingLedger struct{ n int }

func (l *countingLedger) Add(ledger.Record) bool { l.n++; return true }
func (l *countingLedger) Ready() error           { return nil }

// BenchmarkToLedger is what the ledger adds to a request: building its record (priced)
// and handing it to the ledger (here one that counts; *ledger.Ledger's Add is
// BenchmarkLedger_Add). The budget is 1 µs and 1 allocation.
func BenchmarkToLedger(b *testing.B) {
	l := &countingLedger{}
	cfg := &config.Config{Models: map[string]config.Model{"m": {Price: &config.Price{Input: 3, Output: 15}}}}
	r := &route{name: "m", metricLabel: "m", backend: &backend{name: "openai"}}
	c := &requestRun{s: &Server{ledger: l}, rt: &runtime{cfg: cfg}, key: &apiKey{name: "alice", team: "eng"}, route: r,
		rid: "req_0123456789abcdef01234567", start: time.Now(), answeredBy: r}
	c.call = &c.ownCall
	c.call.Usage = translate.Usage{PromptTokens: 1000, CompletionTokens: 200, CachedTokens: 100}
	at := time.Now()
	b.ReportAllocs()
	for b.Loop() {
		c.toLedger(200, true, at)
	}
	if l.n == 0 {
		b.Fatal("no record")
	}
}
