package proxy

import (
	"time"

	"github.com/valyala/fasthttp"

	"github.com/agate-gateway/agate/ledger"
)

// This file records the requests refused before they were routed: a key no key matches
// (401), a body its parser refuses (400 and the like), a model the key may not use or
// that does not exist (404). Those refused after routing (limits: 429; a usd budget
// over an unpriced model: 403) are recorded by toLedger.

// unauthenticatedCounter is a ledger that counts requests refused before a key was known
// without recording them (*ledger.Ledger is one).
type unauthenticatedCounter interface{ AddUnauthenticated() }

// unauthenticatedToLedger counts a request refused before its key was known: no record,
// which a flood of bad keys would multiply, but one count in the rollups
// (ledger.AddUnauthenticated). The presented credential is never kept.
func (s *Server) unauthenticatedToLedger() {
	if l, ok := s.ledger.(unauthenticatedCounter); ok {
		l.AddUnauthenticated()
	}
}

// refusedToLedger records a request of a known key refused before it was routed, with
// the status the funnel answered and the error's type. model is the requested model's
// label when it routed, else "" (unparsed) or unknownLabel (a model that does not route
// for the key: the client's name is not kept, as in the metrics, so a key cannot grow
// the rollups by inventing names).
func (s *Server) refusedToLedger(ctx *fasthttp.RequestCtx, rid, api string, key *apiKey, model string, stream bool,
	start time.Time, err error) {
	if s.ledger == nil {
		return
	}
	if api == "" {
		api = apiChat
	}
	at := time.Now()
	status := ctx.Response.StatusCode()
	s.ledger.Add(ledger.Record{Time: at, RequestID: rid, Key: key.name, Team: key.team, API: api, Model: model,
		Stream: stream, Status: status, ErrorType: clip(classify(err, rid).Type, maxErrorType), Total: at.Sub(start)})
}
