package proxy

import (
	"context"
	"strconv"

	"github.com/agate-gateway/agate/internal/jsonx"
	"github.com/agate-gateway/agate/ledger"
)

// RequestStore is a key store that also reads one ledger record by its id
// (*ledger.Ledger is one): GET /admin/v1/requests/{id}.
type RequestStore interface {
	Request(ctx context.Context, id int64) (ledger.Record, bool, error)
}

// adminRequest is one ledger record, the listing's fields and its attempts: the
// upstream attempts in order (at most ledger.MaxAttempts, attempts_omitted counting the
// rest), with the trace id and continued_from; and its server tools (at most
// ledger.MaxTools, tools_omitted counting the others' calls).
func (s *Server) adminRequest(a *adminCall) error {
	id, err := strconv.ParseInt(a.name, 10, 64)
	if err != nil || id <= 0 {
		return badRequest("id", "a record's id: a positive whole number")
	}
	rs, ok := s.keyStore.(RequestStore)
	if !ok {
		return notFound("this key store keeps no ledger records")
	}
	ctx, cancel := s.adminCtx()
	defer cancel()
	r, found, err := rs.Request(ctx, id)
	if err != nil {
		return err
	}
	if !found {
		return notFound("no ledger record " + strconv.FormatInt(id, 10) + " (never written, or pruned)")
	}
	b := appendRecord(make([]byte, 0, 1024+len(r.AttemptsJSON)+len(r.ToolsJSON)), &r)
	b = b[:len(b)-1] // the record's closing brace
	// The ledger wrote both lists (ledger.appendAttempts, ledger.appendTools).
	b = appendStoredList(b, "attempts", r.AttemptsJSON, r.AttemptsOmitted)
	b = appendStoredList(b, "tools", r.ToolsJSON, r.ToolsOmitted)
	writeAdminJSON(a.ctx, 200, append(b, '}'))
	return nil
}

// appendStoredList appends the members name (the JSON array list, as the ledger stored
// it: a damaged or missing one is an empty array) and name_omitted (omitted).
func appendStoredList(b []byte, name, list string, omitted int) []byte {
	if !jsonx.Valid(list) {
		list = ""
	}
	b = jsonx.AppendRawOr(append(append(append(b, `,"`...), name...), `":`...), list, "[]")
	b = append(append(append(b, `,"`...), name...), `_omitted":`...)
	return strconv.AppendInt(b, int64(omitted), 10)
}
