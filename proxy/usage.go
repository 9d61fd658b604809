package proxy

import (
	"math"

	"github.com/agate-gateway/agate/limits"
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

// noteOutput counts n bytes of output the running attempt read from its upstream, past
// the figures of any usage it reported so far.
func (c *modelCall) noteOutput(n int) { c.tail += n }

// noteUsage records the cumulative usage the upstream reported in the running attempt:
// it covers every output read so far. A zero usage (a decoder's for an upstream that
// reported none, a null usage member) is no report.
func (c *modelCall) noteUsage(u translate.Usage) {
	if u == (translate.Usage{}) {
		return
	}
	c.lastUsage = u
	c.tail = 0
}

// noteUsageSoFar records, for an attempt whose stream ended with err before the upstream's
// final usage, the figures dec kept of the upstream's earlier reports, when nothing
// reported usage through an event. Output read past figures that are not current stays
// to be estimated (see translate.UsageReporter).
func (c *modelCall) noteUsageSoFar(dec translate.StreamDecoder, err error) {
	ur, ok := dec.(translate.UsageReporter)
	if !ok || err == nil || c.lastUsage != (translate.Usage{}) {
		return
	}
	u, current := ur.UsageSoFar()
	c.lastUsage = u
	if current {
		c.tail = 0
	}
}

// attemptUsage returns the usage to charge for the attempt that just ended, and whether
// any of it is estimated: the upstream's figures (lastUsage); the prompt estimated when
// the upstream reported none but sent output; plus the estimate of the output read past
// the figures. An attempt that read no output and no usage (an error, a stream cut before
// its first delta) is charged nothing.
func (c *modelCall) attemptUsage() (translate.Usage, bool) {
	u, estimated := c.lastUsage, false
	if u == (translate.Usage{}) && c.tail > 0 && c.prompt != nil {
		u.PromptTokens, estimated = messagesin.EstimateTokens(c.prompt), true
	}
	if c.tail > 0 {
		u.CompletionTokens += messagesin.EstimateOutputTokens(c.tail)
		estimated = true
	}
	return u, estimated
}

// finalUsage is what the request is charged when it ends (endLimits): the usage of every
// upstream turn, each as attemptUsage counted it, and its cost.
func (c *requestRun) finalUsage() limits.Usage {
	u := c.call.Usage
	return limits.Usage{Tokens: int64(u.PromptTokens + u.CompletionTokens), MicroUSD: int64(math.Round(c.limits.microUSD))}
}
