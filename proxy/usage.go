package proxy

import (
	"github.com/agate-gateway/agate/translate"
	"github.com/agate-gateway/agate/translate/messagesin"
)

// What an upstream answer is charged. An answer is charged the usage its upstream
// reported; what the upstream sent past the last figures it reported (a stream the client
// left, or the upstream cut, before its final usage; an upstream that reports none) is
// charged an estimate, so a client cannot read an answer to its end minus the last
// event for free. The estimator is messagesin's (the one count_tokens falls back on):
// the prompt, when the upstream reported no figures at all, as EstimateTokens; the output
// read past the last figures, as EstimateOutputTokens (a token per 4 bytes of text,
// reasoning and tool call names and arguments, as the upstream's JSON wrote them). Such
// a charge is flagged: usage_estimated in the access line, gateway_usage_estimated_total.

// meter counts the usage of one attempt of a model call: the translated path's events
// (modelCall.countEvent) and a forwarder's reads report to it.
type meter struct {
	// last is the usage the attempt's upstream reported last, tail the bytes of output it
	// sent past those figures, prompt the request of the running turn, whose tokens are
	// estimated when the upstream reports none.
	last   translate.Usage
	tail   int
	prompt *translate.Request
	// guessed marks last as the gateway's estimate (noteEstimate).
	guessed bool
	// pending is the run whose request prompt may point to before it is complete
	// (request_head.go); nil when it is.
	pending *requestRun
}

// reset starts an attempt.
func (m *meter) reset() { m.last, m.tail, m.guessed = translate.Usage{}, 0, false }

// noteEstimate records u, the gateway's estimate, as the attempt's usage, for an answer
// whose upstream reports none and has no output to estimate from (embeddings).
func (m *meter) noteEstimate(u translate.Usage) {
	m.noteUsage(u)
	m.guessed = true
}

// noteOutput counts n bytes of output the running attempt read from its upstream, past
// the figures of any usage it reported so far.
func (m *meter) noteOutput(n int) { m.tail += n }

// noteUsage records the cumulative usage the upstream reported in the running attempt:
// it covers every output read so far. A zero usage (a decoder's for an upstream that
// reported none, a null usage member) is no report.
func (m *meter) noteUsage(u translate.Usage) {
	if u == (translate.Usage{}) {
		return
	}
	m.last = u
	m.tail = 0
}

// noteUsageSoFar records, for an attempt whose stream ended with err before the upstream's
// final usage, the figures dec kept of the upstream's earlier reports, when nothing
// reported usage through an event. Output read past figures that are not current stays
// to be estimated (see translate.UsageReporter).
func (m *meter) noteUsageSoFar(dec translate.StreamDecoder, err error) {
	ur, ok := dec.(translate.UsageReporter)
	if !ok || err == nil || m.last != (translate.Usage{}) {
		return
	}
	u, current := ur.UsageSoFar()
	m.last = u
	if current {
		m.tail = 0
	}
}

// charge returns the usage to charge for the attempt that just ended, and whether any of
// it is estimated: the upstream's figures; the prompt estimated when the upstream
// reported none but sent output; plus the estimate of the output read past the figures.
// An attempt that read no output and no usage (an error, a stream cut before its first
// delta) is charged nothing. The charge is left in last, for the attempt's span.
func (m *meter) charge() (translate.Usage, bool) {
	u, estimated := m.last, m.guessed
	if u == (translate.Usage{}) && m.tail > 0 && m.prompt != nil {
		m.pending.fullRequest() // request_head.go
		u.PromptTokens, estimated = messagesin.EstimateTokens(m.prompt), true
	}
	if m.tail > 0 {
		u.CompletionTokens += messagesin.EstimateOutputTokens(m.tail)
		estimated = true
	}
	m.last, m.tail, m.guessed = u, 0, false
	return u, estimated
}
