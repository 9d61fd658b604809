package metrics

import "github.com/prometheus/client_golang/prometheus"

// Continuation outcomes (StreamContinuations' outcome label).
const (
	// ContinuationContinued: a failed stream was continued and ended well.
	ContinuationContinued = "continued"
	// ContinuationDiverged: the new answer (restart) did not start with the text the
	// client had; the stream ended with an in-band error.
	ContinuationDiverged = "diverged"
	// ContinuationRefused: a backend refused a prefill (400); the gateway went on with a
	// restart. Counted besides the final outcome.
	ContinuationRefused = "refused"
	// ContinuationFailed: no attempt could continue the stream (budget, deadline, every
	// route failing); the stream ended with the original failure.
	ContinuationFailed = "failed"
	// ContinuationNotPossible: the stream failed where it cannot be continued (inside a
	// tool call, after reasoning but before any text, after its finish); it ended with
	// the failure.
	ContinuationNotPossible = "not_continuable"
)

// Continuation holds the collectors of mid-stream continuation and of the malformed
// upstream events the gateway skipped.
type Continuation struct {
	// StreamContinuations counts streamed answers that failed after part of them reached
	// the client, by the model's label and outcome (the Continuation* constants).
	StreamContinuations *prometheus.CounterVec // model, outcome
	// MalformedEvents counts upstream stream events skipped because their data could not
	// be read, by backend; the stream went on with the next event.
	MalformedEvents *prometheus.CounterVec // backend
}

func newContinuation() Continuation {
	return Continuation{
		StreamContinuations: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gateway_stream_continuations_total", Help: "Streamed answers that failed after part of them reached the client, by outcome: continued, diverged (the new answer did not repeat what was sent), refused (a prefill refused; a restart followed), failed (nothing could continue it), not_continuable (cut inside a tool call, after reasoning alone or after its finish).",
		}, []string{"model", "outcome"}),
		MalformedEvents: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gateway_upstream_malformed_events_total", Help: "Upstream stream events skipped because their data could not be read; the stream went on.",
		}, []string{"backend"}),
	}
}

func (c Continuation) collectors() []prometheus.Collector {
	return []prometheus.Collector{c.StreamContinuations, c.MalformedEvents}
}
