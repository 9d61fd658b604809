package proxy

import (
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agate-gateway/agate/internal/jsonx"
	"github.com/agate-gateway/agate/internal/logjson"
	"github.com/agate-gateway/agate/metrics"
	"github.com/agate-gateway/agate/telemetry"
)

// requestDone is what a chat request records once it is over: its request count and
// duration, its time to first token, and its access line. It holds values only, nothing
// of the run, which is reused once the handler returns.
//
// A non-streamed answer leaves its record to its connection (clientConn.leave), which
// records it once the answer is written: the client does not wait for a log line and a
// histogram to be formatted and updated, as an access log is written after the response
// in other servers too. Whatever reads the metrics or the log sees every answered request
// once Server.Settle has returned (the /metrics handler calls it).
type requestDone struct {
	// series are the request's metric series (those of its model label, backend and key).
	series *metrics.Series
	logger *slog.Logger
	// span is the server span for exemplars; nil when tracing is off.
	span *telemetry.Request

	rid, label, backend, key, api string
	// routeLog and keyLog are the access line's members of label and backend, and of key,
	// written when the route and the key were made (route.logMembers, apiKey.logMembers);
	// "" when they were not: appendMembers then writes them from the strings.
	routeLog, keyLog string
	// code is the answer's status; 0 when the funnel already counted the request.
	code   int
	stream bool
	// at is when the request was over, took how long it had taken by then, ttft the
	// time to its first token (0: none).
	at                 time.Time
	took, ttft         time.Duration
	prompt, completion int
	// estimated is set when the tokens are estimated in part or whole (meter); the
	// access line then says "usage_estimated":true.
	estimated bool
	// answered is the configured name of the model that answered, "" when none did;
	// fallback is set when it is a fallback of the requested model. The access line then
	// says "answered_model" and "fallback":true.
	answered string
	fallback bool
	// deployment is the deployment that answered, for a model with deployments ("": none).
	deployment string
	// continuedFrom is the configured name of the model whose stream broke when a
	// continuation finished the answer on answered ("": none); the access line then says
	// "continued_from".
	continuedFrom string
	// cache is the response cache's result (hit, miss, refresh; "": it did not apply).
	cache string
}

// record counts, observes and logs d.
func (d *requestDone) record() {
	d.count()
	logLineAt(d.logger, d.at, accessLine, d.appendMembers, d.attrs)
}

// count counts d's request and observes its duration and time to first token.
func (d *requestDone) count() {
	if d.code != 0 {
		d.series.CountRequest(d.code, d.stream, d.api)
	}
	d.span.Observe(d.series.RequestDuration(d.stream, d.api), d.took.Seconds()) // with exemplar
	if d.ttft > 0 {
		d.span.Observe(d.series.TTFT(), d.ttft.Seconds())
	}
}

// accessLine is the message of the access line.
const accessLine = "chat completion"

// attrs are the attributes of d's access line.
func (d *requestDone) attrs() []slog.Attr {
	a := []slog.Attr{slog.String("request_id", d.rid),
		slog.String("model", d.label), slog.String("backend", d.backend), slog.String("key", d.key), slog.Bool("stream", d.stream),
		slog.Int("status", d.code), slog.Int64("duration_ms", d.took.Milliseconds()),
		slog.Int("prompt_tokens", d.prompt), slog.Int("completion_tokens", d.completion)}
	if d.estimated {
		a = append(a, slog.Bool("usage_estimated", true))
	}
	if d.answered != "" {
		a = append(a, slog.String("answered_model", d.answered))
	}
	if d.fallback {
		a = append(a, slog.Bool("fallback", true))
	}
	if d.api == apiEmbeddings { // the other APIs' lines stay as they were
		a = append(a, slog.String("api", d.api))
	}
	if d.deployment != "" {
		a = append(a, slog.String("deployment", d.deployment))
	}
	if d.continuedFrom != "" {
		a = append(a, slog.String("continued_from", d.continuedFrom))
	}
	if d.cache != "" {
		a = append(a, slog.String("cache", d.cache))
	}
	return a
}

// appendMembers appends the JSON members the gateway's log handler writes for attrs
// (TestAccessLine_MembersMatchAttrs): the keys are written once, here.
func (d *requestDone) appendMembers(b []byte) []byte {
	b = logjson.AppendString(append(b, `,"request_id":`...), d.rid)
	if d.routeLog != "" {
		b = append(b, d.routeLog...)
	} else {
		b = appendRouteMembers(b, d.label, d.backend)
	}
	if d.keyLog != "" {
		b = append(b, d.keyLog...)
	} else {
		b = appendKeyMember(b, d.key)
	}
	b = strconv.AppendBool(append(b, `,"stream":`...), d.stream)
	b = jsonx.AppendInt(append(b, `,"status":`...), d.code) // small numbers written directly
	if ms := d.took.Milliseconds(); ms == int64(int(ms)) {
		b = jsonx.AppendInt(append(b, `,"duration_ms":`...), int(ms))
	} else { // beyond a 32-bit int
		b = strconv.AppendInt(append(b, `,"duration_ms":`...), ms, 10)
	}
	b = jsonx.AppendInt(append(b, `,"prompt_tokens":`...), d.prompt)
	b = jsonx.AppendInt(append(b, `,"completion_tokens":`...), d.completion)
	if d.estimated {
		b = append(b, `,"usage_estimated":true`...)
	}
	if d.answered != "" {
		b = logjson.AppendString(append(b, `,"answered_model":`...), d.answered)
	}
	if d.fallback {
		b = append(b, `,"fallback":true`...)
	}
	if d.api == apiEmbeddings {
		b = append(b, `,"api":"embeddings"`...)
	}
	if d.deployment != "" {
		b = logjson.AppendString(append(b, `,"deployment":`...), d.deployment)
	}
	if d.continuedFrom != "" {
		b = logjson.AppendString(append(b, `,"continued_from":`...), d.continuedFrom)
	}
	if d.cache != "" {
		b = append(append(append(b, `,"cache":"`...), d.cache...), '"')
	}
	return b
}

// appendRouteMembers appends the access line's model and backend members.
func appendRouteMembers(b []byte, label, backend string) []byte {
	b = logjson.AppendString(append(b, `,"model":`...), label)
	return logjson.AppendString(append(b, `,"backend":`...), backend)
}

// appendKeyMember appends the access line's key member.
func appendKeyMember(b []byte, key string) []byte {
	return logjson.AppendString(append(b, `,"key":`...), key)
}

// routeLogMembers is a route's access line members as appendRouteMembers writes them,
// made once per route (route.logMembers) instead of escaped again on every request (#55).
func routeLogMembers(label, backend string) string {
	return string(appendRouteMembers(nil, label, backend))
}

// keyLogMembers is a key's access line member as appendKeyMember writes it (apiKey.logMembers).
func keyLogMembers(key string) string { return string(appendKeyMember(nil, key)) }

// doneSlot is a connection's record left by its last answer (requestDone), kept until
// the answer is written. Safe for concurrent use: the connection's goroutine leaves and
// takes it, Server.Settle may take it from any goroutine.
type doneSlot struct {
	mu sync.Mutex
	d  requestDone // guarded by mu
	// pending is set while d is kept or being recorded; written under mu.
	pending atomic.Bool
}

// leave keeps d to be recorded later; a record still kept (a pipelined request answered
// before the last answer was written) is recorded first.
func (s *doneSlot) leave(d requestDone) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pending.Load() {
		s.d.record()
	}
	s.d = d
	s.pending.Store(true)
}

// flush records the kept record, if any. A flush that finds the record being recorded by
// another returns once it is.
func (s *doneSlot) flush() {
	if !s.pending.Load() {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pending.Load() {
		s.d.record()
		s.d = requestDone{}    // holds no strings of a request that is over
		s.pending.Store(false) // only now: a flush meanwhile waits for the record (mu)
	}
}
