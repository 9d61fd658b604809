package proxy

import (
	"context"
	"errors"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/agate-gateway/agate/config"
	"github.com/agate-gateway/agate/internal/jsonx"
	"github.com/agate-gateway/agate/ledger"
	"github.com/agate-gateway/agate/limits"
	"github.com/agate-gateway/agate/translate"
)

// Ledger is where the server puts each client request's record once the request is
// over (*ledger.Ledger is one): Add and AddFrom must not block (the request path calls
// them) and must copy the record's Attempts if they keep them (their array is the
// request's, reused); AddFrom has the filler fill the record where it is kept (a routed
// request's record: requestRun.FillRecord), Add copies one (a refused request's). Ready
// reports a database that cannot be written (/readyz shows it; requests are served all
// the same).
type Ledger interface {
	Add(ledger.Record) bool
	AddFrom(ledger.Filler) bool
	Ready() error
}

// maxErrorType bounds a record's error type, which may be an upstream's.
const maxErrorType = 64

// ledgerCloseTimeout bounds the drain of the server's own ledger at Shutdown.
const ledgerCloseTimeout = 15 * time.Second

// LedgerOptions maps config's ledger section to the ledger's options; m may be nil.
func LedgerOptions(c config.Ledger, drop func(reason string, n int), written func(n int)) ledger.Options {
	o := ledger.Options{Type: c.Type, DSN: c.Path, QueueSize: c.QueueSize, BatchSize: c.BatchSize,
		FlushInterval: c.FlushInterval, SpoolPath: c.SpoolPath, SpoolMaxBytes: c.SpoolMaxBytes,
		Retention: c.Retention, MinuteRetention: c.Rollups.Minute, HourRetention: c.Rollups.Hour, DayRetention: c.Rollups.Day,
		CaptureContent: c.CaptureContent, MaxContentBytes: c.MaxContentBytes, OnDrop: drop, OnWrite: written}
	if c.Type == "postgres" {
		o.DSN = c.URL
	}
	if o.SpoolPath == "off" {
		o.SpoolPath = ""
	}
	return o
}

// openLedger opens the ledger of opts.Config unless opts gives one; the server closes
// the one it opened at Shutdown (closeLedger).
func (s *Server) openLedger(opts Options) error {
	if opts.Ledger != nil {
		s.ledger = opts.Ledger
		return nil
	}
	lc := opts.Config.Ledger
	if !lc.LedgerOn() {
		return nil
	}
	o := LedgerOptions(lc, func(reason string, n int) { s.metrics.Ledger.Dropped.WithLabelValues(reason).Add(float64(n)) },
		func(n int) { s.metrics.Ledger.Written.Add(float64(n)) })
	o.Logger = s.logger
	o.OnWriteCPU = func(d time.Duration) { s.metrics.Ledger.WriterCPU.Add(d.Seconds()) }
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	l, err := ledger.Open(ctx, o)
	if err != nil {
		return err
	}
	s.ledger, s.ownLedger = l, l
	if lc.CaptureContent {
		// The ledger masks credentials, which shortens them, and then cuts to
		// max_content_bytes: it is given that much and room for the masks.
		s.captureMax = 4*max(lc.MaxContentBytes, 1) + 256
	}
	return nil
}

// capture keeps text of the answer for the ledger, up to captureMax bytes in all.
func (c *modelCall) capture(text string) {
	if room := c.captureMax - len(c.captured); room > 0 {
		c.captured = append(c.captured, text[:min(len(text), room)]...)
	}
}

// lastUserText is the text of req's last user message, for the ledger's
// capture_content, at most limit bytes of it.
func lastUserText(req *translate.Request, limit int) string {
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if m := &req.Messages[i]; m.Role == "user" {
			b := req.AppendDecodedText(nil, m)
			return string(b[:min(len(b), limit)])
		}
	}
	return ""
}

// closeLedger drains and closes the ledger the server opened.
func (s *Server) closeLedger() {
	if s.ownLedger == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), ledgerCloseTimeout)
	defer cancel()
	if err := s.ownLedger.Close(ctx); err != nil {
		s.logger.Warn("closing the ledger", "error", err.Error())
	}
}

// ledgerNotReady answers /readyz with 200 and status "degraded", naming the failure,
// when the ledger's database cannot be written: the gateway serves requests all the same
// (their records are spooled), so a load balancer must not take it out of service, as
// it would every replica at once when their shared database is down.
func (s *Server) ledgerNotReady(ctx *fasthttp.RequestCtx) bool {
	if s.ledger == nil {
		return false
	}
	err := s.ledger.Ready()
	if err == nil {
		return false
	}
	ctx.SetBody(append(append([]byte(`{"status":"degraded","reason":`), jsonx.AppendString(nil, err.Error())...), '}'))
	return true
}

// ledgerDone is what toLedger knows of a request's end for FillRecord: its status,
// whether it streamed, when it was over, and what takes more than a copy to make (the
// error's type, the captured content, the trace id, the tools' summary: each may
// allocate or take a lock), made before the ledger's queue is locked.
type ledgerDone struct {
	status             int
	stream             bool
	at                 time.Time
	errorType          string
	prompt, completion string
	traceID            string
	tools              []ledger.ToolUse
	toolsOmitted       int
}

// toLedger puts the request's record in the ledger, if there is one: status is the
// answer's status, at when the request was over. It does not block (Ledger.AddFrom,
// which has FillRecord fill the record in the ledger's queue).
func (c *requestRun) toLedger(status int, stream bool, at time.Time) {
	l := c.s.ledger
	if l == nil {
		return
	}
	c.done = ledgerDone{status: status, stream: stream, at: at}
	if c.s.captureMax > 0 {
		c.fullRequest() // request_head.go
		c.done.prompt, c.done.completion = lastUserText(c.req, c.s.captureMax), string(c.call.captured)
	}
	if status >= 400 {
		c.done.errorType = clip(c.errorType(status), maxErrorType) // an upstream's type: bounded
	}
	c.done.traceID = c.span.TraceID()
	c.done.tools, c.done.toolsOmitted = c.toolUse.summary()
	l.AddFrom(c)
}

// FillRecord fills r, zeros, with the request's record (ledger.Filler: toLedger's
// AddFrom calls it with the ledger's queue locked): field by field, values only; it
// neither allocates nor locks.
func (c *requestRun) FillRecord(r *ledger.Record) {
	api := c.api
	if api == "" {
		api = apiChat
	}
	call, d := c.call, &c.done
	u := &call.Usage
	r.Time, r.RequestID, r.Key, r.Team, r.API = d.at, c.rid, c.key.name, c.key.team, api
	r.Model, r.Backend, r.Stream, r.Status = c.route.label(), c.route.backend.name, d.stream, d.status
	r.PromptTokens, r.CachedReadTokens, r.CacheWriteTokens = int64(u.PromptTokens), int64(u.CachedTokens), int64(u.CacheCreationTokens)
	r.CompletionTokens, r.ReasoningTokens, r.Estimated = int64(u.CompletionTokens), int64(u.ReasoningTokens), call.Estimated
	r.Total, r.Upstream, r.ToolCalls, r.Fallbacks = d.at.Sub(c.start), call.upstreamTime, call.toolCalls, call.fallbacks
	r.CacheHit = u.CachedTokens > 0 || c.fromCache()
	if !c.firstT.IsZero() {
		r.FirstToken = c.firstT.Sub(c.start)
	}
	priced := c.route
	if c.answeredBy != nil {
		r.Served, priced = c.answeredBy.label(), c.answeredBy
	}
	if p := priced.price; p != nil { // models.<name>.price, kept on the route (runtime.go)
		plain := max(0, u.PromptTokens-u.CachedTokens-u.CacheCreationTokens)
		r.CostUSD = (float64(plain)*p.Input + float64(u.CachedTokens)*p.CachedInput +
			float64(u.CacheCreationTokens)*p.CacheWrite + float64(u.CompletionTokens)*p.Output) / 1e6
	}
	r.Prompt, r.Completion, r.ErrorType, r.TraceID = d.prompt, d.completion, d.errorType, d.traceID
	r.Tools, r.ToolsOmitted = d.tools, d.toolsOmitted
	c.ledgerAttempts(r) // attempts.go
}

// ledgerStatus is the status finish records: code, or, when the funnel answered (code
// 0), the status it wrote.
func ledgerStatus(ctx *fasthttp.RequestCtx, code int) int {
	if code == 0 && ctx != nil {
		return ctx.Response.StatusCode()
	}
	return code
}

// errorType is the type of the error the request was answered with (status >= 400).
func (c *requestRun) errorType(status int) string {
	switch {
	case status == 499 || errors.Is(c.failed, errClientGone) || errors.Is(c.failed, context.Canceled):
		return "client_closed"
	case c.failed != nil:
		return classify(c.failed, c.rid).Type
	case c.limits.adm.Denied != limits.NoLimit:
		return classify(c.limitError(), c.rid).Type
	}
	return translate.ErrorType(status)
}
