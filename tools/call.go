package tools

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/agate-gateway/agate/internal/redact"
	"github.com/agate-gateway/agate/telemetry"
)

// errToolTimeout is the cancellation cause of a call whose own timeout expired.
var errToolTimeout = errors.New("tool timeout")

// Call runs the tool with model-facing name and the model's argument JSON (empty means
// {}), and returns what to give back to the model. It never panics and never returns a Go
// error: an unknown tool, arguments that are not a JSON object or fail the tool's schema
// (checked before anything runs), a tool error, a timeout, a lost server or a cancelled ctx
// all become a Result with IsError and a message for the model. Content longer than the
// tool's MaxResultBytes is cut there (on a UTF-8 boundary) and ends with
// "\n[truncated: result was N bytes, limit M]". Unless its source sets mask_results:
// false, what a tool returns has its credential-like tokens masked (redact.Mask) first.
//
// Cancelling ctx stops the running call. For a cacheable tool, a successful result is cached
// and concurrent calls with the same canonical arguments share one execution, which is
// cancelled only when all of its callers have gone.
func (r *Registry) Call(ctx context.Context, name string, args []byte) (res Result) {
	start := time.Now()
	label, outcome := UnknownToolLabel, OutcomeUnknown
	defer func() {
		if p := recover(); p != nil {
			r.logger.Error("tool call panicked", "tool", name, "panic", p)
			res, outcome = errorResult("tool %s failed: internal error", name), OutcomeError
		}
		r.reportCall(ctx, label, outcome, time.Since(start))
		telemetry.ToolOutcome(ctx, outcome, res.IsError) // on the caller's execute_tool span, if any
	}()

	r.mu.RLock()
	t, ok := r.byName[name]
	closed := r.closed
	r.mu.RUnlock()
	if closed {
		outcome = OutcomeError
		return errorResult("tool %s is unavailable: the gateway is shutting down", name)
	}
	if !ok {
		return r.unknownTool(name)
	}
	label = name
	if ctx.Err() != nil {
		outcome = OutcomeCancelled
		return cancelledResult(name, ctx)
	}

	args = bytes.TrimSpace(args)
	if len(args) == 0 {
		args = []byte("{}")
	}
	if !t.def.Cacheable {
		if res, ok := t.validate(args); !ok {
			outcome = OutcomeInvalidArguments
			return res
		}
		res, outcome = r.execute(ctx, t, args)
		return res
	}

	var caller string
	if r.cacheByCaller {
		caller = CallerFrom(ctx)
	}
	key, err := cacheKey(caller, name, args)
	if err != nil {
		outcome = OutcomeInvalidArguments
		return invalidJSON(name, err)
	}
	if res, ok := r.cache.Get(key); ok {
		r.obs.CacheLookup(true)
		outcome = OutcomeCached
		return res
	}
	r.obs.CacheLookup(false)
	// Canonically equal arguments validate alike, so a hit above needed no validation.
	if res, ok := t.validate(args); !ok {
		outcome = OutcomeInvalidArguments
		return res
	}
	res, outcome, _, ok = r.flights.do(ctx, key, func(ctx context.Context) (Result, string) {
		res, outcome := r.execute(ctx, t, args)
		if !res.IsError {
			r.cache.Add(key, res)
		}
		return res, outcome
	})
	if !ok {
		outcome = OutcomeCancelled
		return cancelledResult(name, ctx)
	}
	return res
}

// callerKey is the context key of the caller identity set by WithCaller.
type callerKey struct{}

// WithCaller returns a copy of ctx that names the caller of the tool calls made with it: an
// identity of the API key, such as its configured name (never the credential). With cache
// scope "key", cached results and shared executions are kept apart per caller; calls whose
// context names no caller share one scope.
func WithCaller(ctx context.Context, caller string) context.Context {
	return context.WithValue(ctx, callerKey{}, caller)
}

// CallerFrom returns the caller that ctx names (see [WithCaller]), or "".
func CallerFrom(ctx context.Context) string {
	s, _ := ctx.Value(callerKey{}).(string)
	return s
}

// cacheKey is the cache key of a call: the caller's length in decimal, a colon, the caller
// (empty with a global cache scope), the model-facing name, a NUL, and the canonical JSON of
// the arguments. The length prefix keeps a caller from forging another's key. An error
// means args is not JSON.
func cacheKey(caller, name string, args []byte) (string, error) {
	bp := keyBuffers.Get().(*[]byte)
	defer keyBuffers.Put(bp)
	buf := strconv.AppendInt((*bp)[:0], int64(len(caller)), 10)
	buf = append(buf, ':')
	buf = append(buf, caller...)
	buf = append(buf, name...)
	buf = append(buf, 0)
	buf, err := appendCanonicalJSON(buf, args)
	if cap(buf) <= maxPooledKeyBuffer {
		*bp = buf
	}
	if err != nil {
		return "", err
	}
	return string(buf), nil
}

// keyBuffers recycles cache key buffers; a sync.Pool holds no state visible to callers.
var keyBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 256); return &b }}

// maxPooledKeyBuffer keeps one huge argument document from pinning memory in the pool.
const maxPooledKeyBuffer = 64 << 10

// unknownTool is the result for a name the Registry does not know. It lists no other tools:
// the registry holds tools of every key, not only the caller's.
func (r *Registry) unknownTool(name string) Result {
	return errorResult("unknown tool %q: call one of the tools you were given", truncateString(name, 128))
}

// validate checks args against the tool's schema; when that fails it returns the result for
// the model.
func (t *tool) validate(args []byte) (Result, bool) {
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(args))
	if err != nil {
		return invalidJSON(t.def.Name, err), false
	}
	if _, ok := v.(map[string]any); !ok {
		return errorResult("invalid arguments for tool %s: arguments must be a JSON object", t.def.Name), false
	}
	if err := t.schema.Validate(v); err != nil {
		return errorResult("invalid arguments for tool %s: %s", t.def.Name, describeValidationError(err)), false
	}
	return Result{}, true
}

func invalidJSON(name string, err error) Result {
	return errorResult("invalid arguments for tool %s: not valid JSON (%v); send the arguments as a JSON object", name, err)
}

// describeValidationError lists each failed constraint with its location in the arguments,
// without the internal schema URL.
func describeValidationError(err error) string {
	var verr *jsonschema.ValidationError
	if !errors.As(err, &verr) {
		return err.Error()
	}
	var msgs []string
	var walk func(u *jsonschema.OutputUnit)
	walk = func(u *jsonschema.OutputUnit) {
		if u.Error != nil {
			loc := u.InstanceLocation
			if loc == "" {
				loc = "/"
			}
			msgs = append(msgs, fmt.Sprintf("at %s: %s", loc, u.Error.String()))
		}
		for i := range u.Errors {
			walk(&u.Errors[i])
		}
	}
	walk(verr.BasicOutput())
	if len(msgs) == 0 {
		return verr.Error()
	}
	const maxMsgs = 10
	if len(msgs) > maxMsgs {
		msgs = append(msgs[:maxMsgs], fmt.Sprintf("and %d more", len(msgs)-maxMsgs))
	}
	return strings.Join(msgs, "; ")
}

// execute runs one validated call under the tool's timeout and returns the bounded result
// and its outcome.
func (r *Registry) execute(ctx context.Context, t *tool, args []byte) (res Result, outcome string) {
	defer func() {
		if p := recover(); p != nil {
			r.logger.Error("tool call panicked", "tool", t.def.Name, "panic", p)
			res, outcome = errorResult("tool %s failed: internal error", t.def.Name), OutcomeError
		}
	}()
	callCtx, cancel := context.WithTimeoutCause(ctx, t.def.Timeout, errToolTimeout)
	defer cancel()
	res, err := t.src.call(callCtx, t.def.Tool, args)
	switch {
	case err == nil && res.IsError:
		outcome = OutcomeError
	case err == nil:
		outcome = OutcomeOK
	case errors.Is(context.Cause(callCtx), errToolTimeout):
		return errorResult("tool %s timed out after %v", t.def.Name, t.def.Timeout), OutcomeTimeout
	case ctx.Err() != nil:
		return cancelledResult(t.def.Name, ctx), OutcomeCancelled
	default:
		err = redactError(err) // each source redacts too; this funnel covers any that forgets
		r.logger.Warn("tool call failed", "tool", t.def.Name, "error", err)
		return errorResult("tool %s failed: %v", t.def.Name, err), OutcomeError
	}
	if t.mask {
		// A tool may hand back a secret (a server's environment, a config file it read):
		// masked like an upstream's error message before the model, and so the client, sees it.
		res.Content = redact.Mask(res.Content)
	}
	if len(res.Content) > t.def.MaxResultBytes {
		res.Content = truncateResult(res.Content, t.def.MaxResultBytes)
		if outcome == OutcomeOK {
			outcome = OutcomeTruncated
		}
	}
	return res, outcome
}

func cancelledResult(name string, ctx context.Context) Result {
	return errorResult("tool %s was cancelled: %v", name, context.Cause(ctx))
}

func errorResult(format string, args ...any) Result {
	return Result{Content: fmt.Sprintf(format, args...), IsError: true}
}

// truncateResult cuts s to at most limit bytes on a UTF-8 boundary and appends the marker.
func truncateResult(s string, limit int) string {
	return truncateString(s, limit) + fmt.Sprintf("\n[truncated: result was %d bytes, limit %d]", len(s), limit)
}

// truncateString returns the longest prefix of s of at most limit bytes that does not split
// a UTF-8 sequence.
func truncateString(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	cut := limit
	for cut > 0 && cut > limit-utf8.UTFMax && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut]
}
