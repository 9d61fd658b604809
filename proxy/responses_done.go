package proxy

import (
	"log/slog"
	"strconv"

	"github.com/agate-gateway/agate/internal/logjson"
)

// responsesDone is what a POST /v1/responses request records once it is over: the
// request count, duration and time to first token of requestDone, on the request's metric
// series, and the Responses API's own access line, "response", whose members are
// unchanged since it was written through slog (request_id, then model, backend, key,
// stream, status, passthrough, duration_ms, the tokens, usage_estimated, answered_model
// and fallback, each always present). It is written by the gateway's handler from
// appendMembers, as requestDone's is, instead of through a request logger and slog's
// attributes.
type responsesDone struct {
	requestDone
	passthrough bool
}

// responsesLine is the message of the Responses API's access line.
const responsesLine = "response"

// record counts, observes and logs d.
func (d *responsesDone) record() {
	d.count()
	logLineAt(d.logger, d.at, responsesLine, d.appendMembers, d.attrs)
}

// attrs are the attributes of d's access line.
func (d *responsesDone) attrs() []slog.Attr {
	return []slog.Attr{slog.String("request_id", d.rid),
		slog.String("model", d.label), slog.String("backend", d.backend), slog.String("key", d.key), slog.Bool("stream", d.stream),
		slog.Int("status", d.code), slog.Bool("passthrough", d.passthrough), slog.Int64("duration_ms", d.took.Milliseconds()),
		slog.Int("prompt_tokens", d.prompt), slog.Int("completion_tokens", d.completion),
		slog.Bool("usage_estimated", d.estimated), slog.String("answered_model", d.answered), slog.Bool("fallback", d.fallback)}
}

// appendMembers appends the JSON members the gateway's log handler writes for attrs
// (TestResponsesLine_MembersMatchAttrs).
func (d *responsesDone) appendMembers(b []byte) []byte {
	b = logjson.AppendString(append(b, `,"request_id":`...), d.rid)
	b = logjson.AppendString(append(b, `,"model":`...), d.label)
	b = logjson.AppendString(append(b, `,"backend":`...), d.backend)
	b = logjson.AppendString(append(b, `,"key":`...), d.key)
	b = strconv.AppendBool(append(b, `,"stream":`...), d.stream)
	b = strconv.AppendInt(append(b, `,"status":`...), int64(d.code), 10)
	b = strconv.AppendBool(append(b, `,"passthrough":`...), d.passthrough)
	b = strconv.AppendInt(append(b, `,"duration_ms":`...), d.took.Milliseconds(), 10)
	b = strconv.AppendInt(append(b, `,"prompt_tokens":`...), int64(d.prompt), 10)
	b = strconv.AppendInt(append(b, `,"completion_tokens":`...), int64(d.completion), 10)
	b = strconv.AppendBool(append(b, `,"usage_estimated":`...), d.estimated)
	b = logjson.AppendString(append(b, `,"answered_model":`...), d.answered)
	return strconv.AppendBool(append(b, `,"fallback":`...), d.fallback)
}
