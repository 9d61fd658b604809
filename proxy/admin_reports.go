package proxy

import (
	"strconv"
	"strings"
	"time"

	"github.com/agate-gateway/agate/internal/jsonx"
	"github.com/agate-gateway/agate/ledger"
)

// queryTime reads the query parameter name: an RFC 3339 time or a date (YYYY-MM-DD,
// midnight UTC); def when absent.
func queryTime(a *adminCall, name string, def time.Time) (time.Time, error) {
	v := string(a.ctx.QueryArgs().Peek(name))
	if v == "" {
		return def, nil
	}
	if t, err := time.Parse(time.RFC3339, v); err == nil {
		return t, nil
	}
	if t, err := time.Parse(time.DateOnly, v); err == nil {
		return t, nil
	}
	return time.Time{}, badRequest(name, "must be an RFC 3339 time or a date (YYYY-MM-DD)")
}

func queryString(a *adminCall, name string, max int) (string, error) {
	v := string(a.ctx.QueryArgs().Peek(name))
	if len(v) > max {
		return "", badRequest(name, "at most "+strconv.Itoa(max)+" bytes")
	}
	return v, nil
}

func queryInt(a *adminCall, name string) (int, error) {
	v := string(a.ctx.QueryArgs().Peek(name))
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, badRequest(name, "must be a whole number, not negative")
	}
	return n, nil
}

func queryBool(a *adminCall, name string) (bool, error) {
	switch string(a.ctx.QueryArgs().Peek(name)) {
	case "", "false", "0":
		return false, nil
	case "true", "1":
		return true, nil
	}
	return false, badRequest(name, "true or false")
}

// filters reads key, team and model.
func filters(a *adminCall) (key, team, model string, err error) {
	if key, err = queryString(a, "key", 64); err != nil {
		return
	}
	if team, err = queryString(a, "team", maxTeamLen); err != nil {
		return
	}
	model, err = queryString(a, "model", 256)
	return
}

// adminUsage is the usage report: the rollups of [from, to) (default: the last 30 days
// to the next midnight UTC) grouped by group_by (key, team, model, deployment, day,
// status), filtered by key, team, model and deployment, as
// JSON or, with format=csv, CSV.
func (s *Server) adminUsage(a *adminCall) error {
	end := time.Now().UTC().Truncate(24 * time.Hour).Add(24 * time.Hour)
	q := ledger.UsageQuery{}
	var err error
	if q.From, err = queryTime(a, "from", end.Add(-30*24*time.Hour)); err != nil {
		return err
	}
	if q.To, err = queryTime(a, "to", end); err != nil {
		return err
	}
	if !q.To.After(q.From) {
		return badRequest("to", "must be after from")
	}
	if g := string(a.ctx.QueryArgs().Peek("group_by")); g != "" {
		for _, f := range strings.Split(g, ",") {
			switch f {
			case "key", "team", "model", "deployment", "day", "status":
				q.GroupBy = append(q.GroupBy, f)
			default:
				return badRequest("group_by", "a comma-separated list of key, team, model, deployment, day and status")
			}
		}
	}
	if q.Key, q.Team, q.Model, err = filters(a); err != nil {
		return err
	}
	if q.Deployment, err = queryString(a, "deployment", 256); err != nil {
		return err
	}
	format := string(a.ctx.QueryArgs().Peek("format"))
	if format != "" && format != "json" && format != "csv" {
		return badRequest("format", "json (the default) or csv")
	}
	ctx, cancel := s.adminCtx()
	defer cancel()
	rows, err := s.keyStore.Usage(ctx, q)
	if err != nil {
		return err
	}
	if format == "csv" {
		a.ctx.SetContentType("text/csv; charset=utf-8")
		a.ctx.SetBody(appendUsageCSV(nil, q.GroupBy, rows))
		return nil
	}
	b := append(make([]byte, 0, 256+len(rows)*200), `{"from":`...)
	b = appendTime(b, q.From)
	b = appendTime(append(b, `,"to":`...), q.To)
	b = appendStrings(append(b, `,"group_by":`...), q.GroupBy)
	b = append(b, `,"data":[`...)
	for i, r := range rows {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '{')
		for _, g := range q.GroupBy {
			switch g {
			case "key":
				b = jsonx.AppendString(append(b, `"key":`...), r.Key)
			case "team":
				b = jsonx.AppendString(append(b, `"team":`...), r.Team)
			case "model":
				b = jsonx.AppendString(append(b, `"model":`...), r.Model)
			case "deployment":
				b = jsonx.AppendString(append(b, `"deployment":`...), r.Deployment)
			case "day":
				b = jsonx.AppendString(append(b, `"day":`...), r.Day)
			case "status":
				b = strconv.AppendInt(append(b, `"status":`...), int64(r.Status), 10)
			}
			b = append(b, ',')
		}
		b = appendUsageSums(b, &r)
		b = append(b, '}')
	}
	writeAdminJSON(a.ctx, 200, append(b, "]}"...))
	return nil
}

func appendUsageSums(b []byte, r *ledger.UsageRow) []byte {
	b = strconv.AppendInt(append(b, `"requests":`...), r.Requests, 10)
	b = strconv.AppendInt(append(b, `,"errors":`...), r.Errors, 10)
	b = strconv.AppendInt(append(b, `,"prompt_tokens":`...), r.PromptTokens, 10)
	b = strconv.AppendInt(append(b, `,"cached_read_tokens":`...), r.CachedReadTokens, 10)
	b = strconv.AppendInt(append(b, `,"cache_write_tokens":`...), r.CacheWriteTokens, 10)
	b = strconv.AppendInt(append(b, `,"completion_tokens":`...), r.CompletionTokens, 10)
	b = strconv.AppendInt(append(b, `,"reasoning_tokens":`...), r.ReasoningTokens, 10)
	return strconv.AppendFloat(append(b, `,"cost_usd":`...), r.CostUSD, 'f', -1, 64)
}

// appendUsageCSV writes the report as CSV (RFC 4180): a header line, then a line a row.
func appendUsageCSV(b []byte, groupBy []string, rows []ledger.UsageRow) []byte {
	for _, g := range groupBy {
		b = append(append(b, g...), ',')
	}
	b = append(b, "requests,errors,prompt_tokens,cached_read_tokens,cache_write_tokens,completion_tokens,reasoning_tokens,cost_usd\r\n"...)
	for _, r := range rows {
		for _, g := range groupBy {
			switch g {
			case "key":
				b = appendCSVField(b, r.Key)
			case "team":
				b = appendCSVField(b, r.Team)
			case "model":
				b = appendCSVField(b, r.Model)
			case "deployment":
				b = appendCSVField(b, r.Deployment)
			case "day":
				b = appendCSVField(b, r.Day)
			case "status":
				b = strconv.AppendInt(b, int64(r.Status), 10)
			}
			b = append(b, ',')
		}
		for _, n := range []int64{r.Requests, r.Errors, r.PromptTokens, r.CachedReadTokens, r.CacheWriteTokens, r.CompletionTokens, r.ReasoningTokens} {
			b = append(strconv.AppendInt(b, n, 10), ',')
		}
		b = append(strconv.AppendFloat(b, r.CostUSD, 'f', -1, 64), "\r\n"...)
	}
	return b
}

// appendCSVField quotes s when it needs it, and defuses a leading formula character
// (=, +, -, @) that a spreadsheet would run.
func appendCSVField(b []byte, s string) []byte {
	if s != "" && strings.ContainsRune("=+-@", rune(s[0])) {
		s = "'" + s
	}
	if !strings.ContainsAny(s, ",\"\r\n") {
		return append(b, s...)
	}
	return append(append(append(b, '"'), strings.ReplaceAll(s, `"`, `""`)...), '"')
}

// adminRequests lists ledger records, newest first: filters from, to, key, team, model,
// status; limit (default 100, at most 1000); cursor (next_cursor of the last page).
func (s *Server) adminRequests(a *adminCall) error {
	var q ledger.RequestQuery
	var err error
	if q.From, err = queryTime(a, "from", time.Time{}); err != nil {
		return err
	}
	if q.To, err = queryTime(a, "to", time.Time{}); err != nil {
		return err
	}
	if q.Key, q.Team, q.Model, err = filters(a); err != nil {
		return err
	}
	if q.Status, err = queryInt(a, "status"); err != nil {
		return err
	}
	if q.ErrorsOnly, err = queryBool(a, "errors"); err != nil {
		return err
	}
	if q.FallbacksOnly, err = queryBool(a, "fallbacks"); err != nil {
		return err
	}
	if q.Limit, err = queryInt(a, "limit"); err != nil {
		return err
	}
	if q.Cursor, err = queryString(a, "cursor", 20); err != nil {
		return err
	}
	if q.Cursor != "" {
		if n, err := strconv.ParseInt(q.Cursor, 10, 64); err != nil || n <= 0 {
			return badRequest("cursor", "not a cursor of this listing")
		}
	}
	ctx, cancel := s.adminCtx()
	defer cancel()
	recs, next, err := s.keyStore.Requests(ctx, q)
	if err != nil {
		return err
	}
	b := append(make([]byte, 0, 256+len(recs)*400), `{"data":[`...)
	for i := range recs {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendRecord(b, &recs[i])
	}
	b = append(b, `],"next_cursor":`...)
	if next == "" {
		b = append(b, "null"...)
	} else {
		b = jsonx.AppendString(b, next)
	}
	writeAdminJSON(a.ctx, 200, append(b, '}'))
	return nil
}

func appendRecord(b []byte, r *ledger.Record) []byte {
	b = strconv.AppendInt(append(b, `{"id":`...), r.ID, 10)
	b = appendTime(append(b, `,"time":`...), r.Time)
	b = jsonx.AppendString(append(b, `,"request_id":`...), r.RequestID)
	b = jsonx.AppendString(append(b, `,"key":`...), r.Key)
	b = jsonx.AppendString(append(b, `,"team":`...), r.Team)
	b = jsonx.AppendString(append(b, `,"api":`...), r.API)
	b = jsonx.AppendString(append(b, `,"model":`...), r.Model)
	b = jsonx.AppendString(append(b, `,"served_model":`...), r.Served)
	b = jsonx.AppendString(append(b, `,"backend":`...), r.Backend)
	b = strconv.AppendBool(append(b, `,"stream":`...), r.Stream)
	b = strconv.AppendInt(append(b, `,"status":`...), int64(r.Status), 10)
	b = jsonx.AppendString(append(b, `,"error_type":`...), r.ErrorType)
	b = strconv.AppendInt(append(b, `,"prompt_tokens":`...), r.PromptTokens, 10)
	b = strconv.AppendInt(append(b, `,"cached_read_tokens":`...), r.CachedReadTokens, 10)
	b = strconv.AppendInt(append(b, `,"cache_write_tokens":`...), r.CacheWriteTokens, 10)
	b = strconv.AppendInt(append(b, `,"completion_tokens":`...), r.CompletionTokens, 10)
	b = strconv.AppendInt(append(b, `,"reasoning_tokens":`...), r.ReasoningTokens, 10)
	b = strconv.AppendFloat(append(b, `,"cost_usd":`...), r.CostUSD, 'f', -1, 64)
	b = strconv.AppendBool(append(b, `,"usage_estimated":`...), r.Estimated)
	b = strconv.AppendInt(append(b, `,"total_ms":`...), r.Total.Milliseconds(), 10)
	b = strconv.AppendInt(append(b, `,"first_token_ms":`...), r.FirstToken.Milliseconds(), 10)
	b = strconv.AppendInt(append(b, `,"upstream_ms":`...), r.Upstream.Milliseconds(), 10)
	b = strconv.AppendInt(append(b, `,"tool_calls":`...), int64(r.ToolCalls), 10)
	b = strconv.AppendInt(append(b, `,"fallbacks":`...), int64(r.Fallbacks), 10)
	b = strconv.AppendBool(append(b, `,"cache_hit":`...), r.CacheHit)
	b = jsonx.AppendString(append(b, `,"deployment":`...), r.Deployment)
	b = jsonx.AppendString(append(b, `,"trace_id":`...), r.TraceID)
	b = jsonx.AppendString(append(b, `,"continued_from":`...), r.ContinuedFrom)
	if r.Prompt != "" || r.Completion != "" {
		b = jsonx.AppendString(append(b, `,"prompt":`...), r.Prompt)
		b = jsonx.AppendString(append(b, `,"completion":`...), r.Completion)
	}
	return append(b, '}')
}

// adminAudit lists the audit records, newest first: target (a key name) filters, limit
// bounds (default 100, at most 1000).
func (s *Server) adminAudit(a *adminCall) error {
	target, err := queryString(a, "target", 64)
	if err != nil {
		return err
	}
	limit, err := queryInt(a, "limit")
	if err != nil {
		return err
	}
	ctx, cancel := s.adminCtx()
	defer cancel()
	log, err := s.keyStore.AuditLog(ctx, target, limit)
	if err != nil {
		return err
	}
	b := append(make([]byte, 0, 256), `{"data":[`...)
	for i, e := range log {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(append(b, `{"id":`...), e.ID, 10)
		b = appendTime(append(b, `,"time":`...), e.Time)
		b = jsonx.AppendString(append(b, `,"actor":`...), e.Actor)
		b = jsonx.AppendString(append(b, `,"action":`...), e.Action)
		b = jsonx.AppendString(append(b, `,"target":`...), e.Target)
		b = appendRaw(append(b, `,"before":`...), e.Before)
		b = append(appendRaw(append(b, `,"after":`...), e.After), '}')
	}
	writeAdminJSON(a.ctx, 200, append(b, "]}"...))
	return nil
}

// appendRaw appends a stored JSON view, or null.
func appendRaw(b []byte, raw string) []byte {
	if raw == "" {
		return append(b, "null"...)
	}
	return append(b, raw...)
}
