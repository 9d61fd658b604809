package tools

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// webhook is a test webhook server that records requests and answers with respond.
type webhook struct {
	srv     *httptest.Server
	calls   atomic.Int64
	mu      sync.Mutex
	bodies  []string
	headers []http.Header
}

func newWebhook(t *testing.T, respond func(w http.ResponseWriter, r *http.Request, body []byte)) *webhook {
	t.Helper()
	wh := &webhook{}
	wh.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		wh.calls.Add(1)
		wh.mu.Lock()
		wh.bodies = append(wh.bodies, string(body))
		wh.headers = append(wh.headers, r.Header.Clone())
		wh.mu.Unlock()
		respond(w, r, body)
	}))
	t.Cleanup(wh.srv.Close)
	return wh
}

func (wh *webhook) lastBody() string {
	wh.mu.Lock()
	defer wh.mu.Unlock()
	if len(wh.bodies) == 0 {
		return ""
	}
	return wh.bodies[len(wh.bodies)-1]
}

// echoBody answers with the request body.
func echoBody(w http.ResponseWriter, _ *http.Request, body []byte) { w.Write(body) }

var weatherParams = map[string]any{
	"type": "object",
	"properties": map[string]any{
		"city": map[string]any{"type": "string"},
		"days": map[string]any{"type": "integer", "minimum": 1},
	},
	"required": []any{"city"},
}

func TestCall_ArgumentValidation(t *testing.T) {
	wh := newWebhook(t, echoBody)
	obs := &recordingObserver{}
	r := newTestRegistry(t, map[string]SourceOptions{
		"weather": {Type: "http", URL: wh.srv.URL, Parameters: weatherParams},
		"noargs":  {Type: "http", URL: wh.srv.URL},
	}, obs)

	tests := []struct {
		name        string
		tool, args  string
		wantOutcome string
		wantSent    string // body the webhook received; "" means not called
		wantInError string // substring of the error result
	}{
		{name: "valid", tool: "weather", args: `{"city":"Paris","days":2}`, wantOutcome: OutcomeOK, wantSent: `{"city":"Paris","days":2}`},
		{name: "wrong type", tool: "weather", args: `{"city":"Paris","days":"two"}`, wantOutcome: OutcomeInvalidArguments, wantInError: "at /days: got string, want integer"},
		{name: "below minimum", tool: "weather", args: `{"city":"Paris","days":0}`, wantOutcome: OutcomeInvalidArguments, wantInError: "/days"},
		{name: "missing required", tool: "weather", args: `{"days":2}`, wantOutcome: OutcomeInvalidArguments, wantInError: "missing property 'city'"},
		{name: "not JSON", tool: "weather", args: `{"city":`, wantOutcome: OutcomeInvalidArguments, wantInError: "not valid JSON"},
		{name: "not an object", tool: "weather", args: `["Paris"]`, wantOutcome: OutcomeInvalidArguments, wantInError: "must be a JSON object"},
		{name: "empty counts as empty object", tool: "noargs", args: ``, wantOutcome: OutcomeOK, wantSent: `{}`},
		{name: "whitespace counts as empty object", tool: "noargs", args: " \n", wantOutcome: OutcomeOK, wantSent: `{}`},
		{name: "empty fails required", tool: "weather", args: ``, wantOutcome: OutcomeInvalidArguments, wantInError: "missing property 'city'"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := wh.calls.Load()
			res := r.Call(context.Background(), tt.tool, []byte(tt.args))
			called := wh.calls.Load() != before
			if got := obs.lastCall(); got != (observedCall{tt.tool, tt.wantOutcome}) {
				t.Errorf("observed %+v, want outcome %q", got, tt.wantOutcome)
			}
			if tt.wantSent == "" {
				if called {
					t.Errorf("webhook called with invalid arguments")
				}
				if !res.IsError || !strings.Contains(res.Content, tt.wantInError) {
					t.Errorf("Call = %+v, want an error result containing %q", res, tt.wantInError)
				}
				return
			}
			want := Result{Content: tt.wantSent}
			if diff := cmp.Diff(want, res); diff != "" {
				t.Errorf("Call mismatch (-want +got):\n%s", diff)
			}
			if got := wh.lastBody(); got != tt.wantSent {
				t.Errorf("webhook got body %q, want %q", got, tt.wantSent)
			}
		})
	}
}

func TestCall_UnknownTool(t *testing.T) {
	obs := &recordingObserver{}
	r := newTestRegistry(t, map[string]SourceOptions{"clock": {Type: "builtin", Name: "time_now"}}, obs)
	res := r.Call(context.Background(), "no_such_tool", []byte(`{}`))
	if !res.IsError || !strings.Contains(res.Content, `unknown tool "no_such_tool"`) {
		t.Errorf("Call = %+v, want an unknown-tool error result", res)
	}
	if diff := cmp.Diff(observedCall{UnknownToolLabel, OutcomeUnknown}, obs.lastCall()); diff != "" {
		t.Errorf("observed call mismatch (-want +got):\n%s", diff)
	}
}

func TestCall_Timeout(t *testing.T) {
	cancelled := make(chan struct{}, 1)
	wh := newWebhook(t, func(w http.ResponseWriter, r *http.Request, _ []byte) {
		<-r.Context().Done()
		cancelled <- struct{}{}
	})
	obs := &recordingObserver{}
	r := newTestRegistry(t, map[string]SourceOptions{
		"slow": {Type: "http", URL: wh.srv.URL, Timeout: 50 * time.Millisecond},
	}, obs)
	res := r.Call(context.Background(), "slow", nil)
	want := Result{Content: "tool slow timed out after 50ms", IsError: true}
	if diff := cmp.Diff(want, res); diff != "" {
		t.Errorf("Call mismatch (-want +got):\n%s", diff)
	}
	if got := obs.lastCall().Outcome; got != OutcomeTimeout {
		t.Errorf("outcome = %q, want %q", got, OutcomeTimeout)
	}
	select {
	case <-cancelled:
	case <-time.After(10 * time.Second):
		t.Error("webhook request context was not cancelled")
	}
}

func TestCall_ContextCancelStopsTool(t *testing.T) {
	for _, readOnly := range []bool{false, true} { // true goes through cache and single flight
		name := map[bool]string{false: "uncached", true: "cached single flight"}[readOnly]
		t.Run(name, func(t *testing.T) {
			started := make(chan struct{}, 1)
			cancelled := make(chan struct{}, 1)
			wh := newWebhook(t, func(w http.ResponseWriter, r *http.Request, _ []byte) {
				started <- struct{}{}
				<-r.Context().Done()
				cancelled <- struct{}{}
			})
			obs := &recordingObserver{}
			r := newTestRegistry(t, map[string]SourceOptions{
				"slow": {Type: "http", URL: wh.srv.URL, ReadOnly: readOnly},
			}, obs)
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan Result, 1)
			go func() { done <- r.Call(ctx, "slow", []byte(`{}`)) }()
			<-started
			cancel()
			select {
			case <-cancelled:
			case <-time.After(10 * time.Second):
				t.Fatal("webhook request context was not cancelled")
			}
			res := <-done
			if !res.IsError || !strings.Contains(res.Content, "cancelled") {
				t.Errorf("Call = %+v, want a cancelled error result", res)
			}
			if got := obs.lastCall().Outcome; got != OutcomeCancelled {
				t.Errorf("outcome = %q, want %q", got, OutcomeCancelled)
			}
		})
	}
}

func TestCall_Truncation(t *testing.T) {
	wh := newWebhook(t, func(w http.ResponseWriter, r *http.Request, _ []byte) {
		io.WriteString(w, strings.Repeat("x", 100))
	})
	obs := &recordingObserver{}
	r := newTestRegistry(t, map[string]SourceOptions{
		"big": {Type: "http", URL: wh.srv.URL, MaxResultBytes: 10},
	}, obs)
	res := r.Call(context.Background(), "big", nil)
	want := Result{Content: "xxxxxxxxxx\n[truncated: result was 100 bytes, limit 10]"}
	if diff := cmp.Diff(want, res); diff != "" {
		t.Errorf("Call mismatch (-want +got):\n%s", diff)
	}
	if got := obs.lastCall().Outcome; got != OutcomeTruncated {
		t.Errorf("outcome = %q, want %q", got, OutcomeTruncated)
	}
}

func TestTruncateString(t *testing.T) {
	tests := []struct {
		name  string
		in    string
		limit int
		want  string
	}{
		{name: "short", in: "abc", limit: 5, want: "abc"},
		{name: "exact", in: "abc", limit: 3, want: "abc"},
		{name: "ascii cut", in: "abcdef", limit: 4, want: "abcd"},
		{name: "no split rune", in: "aé", limit: 2, want: "a"}, // é is two bytes
		{name: "emoji", in: "😀😀", limit: 6, want: "😀"},
		{name: "zero", in: "abc", limit: 0, want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, truncateString(tt.in, tt.limit)); diff != "" {
				t.Errorf("truncateString(%q, %d) mismatch (-want +got):\n%s", tt.in, tt.limit, diff)
			}
		})
	}
}

func TestCache_ErrorsNotCached(t *testing.T) {
	var fail atomic.Bool
	fail.Store(true)
	wh := newWebhook(t, func(w http.ResponseWriter, r *http.Request, _ []byte) {
		if fail.Load() {
			http.Error(w, "upstream broke", http.StatusBadGateway)
			return
		}
		io.WriteString(w, "sunny")
	})
	obs := &recordingObserver{}
	r := newTestRegistry(t, map[string]SourceOptions{
		"weather": {Type: "http", URL: wh.srv.URL, ReadOnly: true},
	}, obs)
	ctx := context.Background()

	res := r.Call(ctx, "weather", []byte(`{}`))
	if want := (Result{Content: "webhook returned HTTP 502 Bad Gateway: upstream broke", IsError: true}); !cmp.Equal(want, res) {
		t.Fatalf("first call mismatch (-want +got):\n%s", cmp.Diff(want, res))
	}
	fail.Store(false)
	for i, wantOutcome := range []string{OutcomeOK, OutcomeCached, OutcomeCached} {
		res := r.Call(ctx, "weather", []byte(`{}`))
		if diff := cmp.Diff(Result{Content: "sunny"}, res); diff != "" {
			t.Errorf("call %d mismatch (-want +got):\n%s", i, diff)
		}
		if got := obs.lastCall().Outcome; got != wantOutcome {
			t.Errorf("call %d outcome = %q, want %q", i, got, wantOutcome)
		}
	}
	if got := wh.calls.Load(); got != 2 {
		t.Errorf("webhook called %d times, want 2 (the error must not be cached)", got)
	}
	hits, misses, _ := obs.counts()
	if hits != 2 || misses != 2 {
		t.Errorf("cache hits, misses = %d, %d, want 2, 2", hits, misses)
	}
}

func TestCache_Policy(t *testing.T) {
	tests := []struct {
		name      string
		src       SourceOptions
		args      []string
		wantCalls int64
	}{
		{name: "read-only cached across key order", src: SourceOptions{ReadOnly: true},
			args: []string{`{"a":1, "b":2}`, `{"b":2,"a":1}`, "{\n\"a\": 1,\"b\" :2}"}, wantCalls: 1},
		{name: "different args miss", src: SourceOptions{ReadOnly: true},
			args: []string{`{"a":1}`, `{"a":2}`}, wantCalls: 2},
		{name: "not read-only not cached", src: SourceOptions{},
			args: []string{`{"a":1}`, `{"a":1}`}, wantCalls: 2},
		{name: "cache false overrides read-only", src: SourceOptions{ReadOnly: true, Cache: ptr(false)},
			args: []string{`{"a":1}`, `{"a":1}`}, wantCalls: 2},
		{name: "cache true on a side-effecting tool", src: SourceOptions{Cache: ptr(true)},
			args: []string{`{"a":1}`, `{"a":1}`}, wantCalls: 1},
		{name: "per-tool override wins", src: SourceOptions{ReadOnly: true, Cache: ptr(false),
			Overrides: map[string]Override{"t": {Cache: ptr(true)}}},
			args: []string{`{"a":1}`, `{"a":1}`}, wantCalls: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wh := newWebhook(t, echoBody)
			src := tt.src
			src.Type, src.URL = "http", wh.srv.URL
			r := newTestRegistry(t, map[string]SourceOptions{"t": src}, nil)
			for _, a := range tt.args {
				if res := r.Call(context.Background(), "t", []byte(a)); res.IsError {
					t.Fatalf("Call(%s) = %+v", a, res)
				}
			}
			if got := wh.calls.Load(); got != tt.wantCalls {
				t.Errorf("webhook called %d times, want %d", got, tt.wantCalls)
			}
		})
	}
}

// TestCache_Scope: with a cache that is not shared (the default; cache scope key), a key's
// call never reuses another key's result (nor learns from its timing that the call was
// made); with a shared one (scope global), keys share results. The observer sees every
// lookup either way. (The gateway's tests map the scopes to CacheOptions.)
func TestCache_Scope(t *testing.T) {
	tests := []struct {
		name         string
		cache        CacheOptions
		wantOutcomes []string // of alice, bob, alice
		wantCalls    int64
		wantHits     int
	}{
		{name: "default is per key", cache: CacheOptions{}, wantOutcomes: []string{OutcomeOK, OutcomeOK, OutcomeCached}, wantCalls: 2, wantHits: 1},
		{name: "key", cache: CacheOptions{Shared: false}, wantOutcomes: []string{OutcomeOK, OutcomeOK, OutcomeCached}, wantCalls: 2, wantHits: 1},
		{name: "global", cache: CacheOptions{Shared: true}, wantOutcomes: []string{OutcomeOK, OutcomeCached, OutcomeCached}, wantCalls: 1, wantHits: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wh := newWebhook(t, echoBody)
			obs := &recordingObserver{}
			r, err := New(context.Background(), map[string]SourceOptions{
				"weather": {Type: "http", URL: wh.srv.URL, ReadOnly: true},
			}, tt.cache, obs, testLogger(t))
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			var outcomes []string
			for _, caller := range []string{"alice", "bob", "alice"} {
				res := r.Call(WithCaller(context.Background(), caller), "weather", []byte(`{"city":"Oslo"}`))
				if diff := cmp.Diff(Result{Content: `{"city":"Oslo"}`}, res); diff != "" {
					t.Errorf("%s's call mismatch (-want +got):\n%s", caller, diff)
				}
				outcomes = append(outcomes, obs.lastCall().Outcome)
			}
			if diff := cmp.Diff(tt.wantOutcomes, outcomes); diff != "" {
				t.Errorf("outcomes (-want +got):\n%s", diff)
			}
			if got := wh.calls.Load(); got != tt.wantCalls {
				t.Errorf("webhook called %d times, want %d", got, tt.wantCalls)
			}
			if hits, misses, _ := obs.counts(); hits != tt.wantHits || misses != 3-tt.wantHits {
				t.Errorf("cache hits, misses = %d, %d, want %d, %d", hits, misses, tt.wantHits, 3-tt.wantHits)
			}
		})
	}
}

func TestCacheKey_CallerCannotForgeAnother(t *testing.T) {
	a, _ := cacheKey("al", "ice", []byte(`{}`))
	b, _ := cacheKey("ali", "ce", []byte(`{}`))
	c, _ := cacheKey("", "alice", []byte(`{}`))
	if a == b || a == c || b == c {
		t.Errorf("keys collide: %q, %q, %q", a, b, c)
	}
}

func TestCall_SingleFlight(t *testing.T) {
	release := make(chan struct{})
	wh := newWebhook(t, func(w http.ResponseWriter, r *http.Request, _ []byte) {
		<-release
		io.WriteString(w, "shared")
	})
	obs := &recordingObserver{}
	r := newTestRegistry(t, map[string]SourceOptions{
		"lookup": {Type: "http", URL: wh.srv.URL, ReadOnly: true},
	}, obs)

	const n = 16
	results := make([]Result, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			// Differently formatted but equal arguments share the flight.
			args := `{"q":"x","n":1}`
			if i%2 == 1 {
				args = `{ "n":1, "q":"x" }`
			}
			results[i] = r.Call(context.Background(), "lookup", []byte(args))
		})
	}
	key, _ := cacheKey("", "lookup", []byte(`{"q":"x","n":1}`))
	waitFor(t, "all callers to join one flight", 10*time.Second, func() bool {
		r.flights.mu.Lock()
		defer r.flights.mu.Unlock()
		f := r.flights.flights[key]
		return f != nil && f.waiters == n
	})
	close(release)
	wg.Wait()
	if got := wh.calls.Load(); got != 1 {
		t.Errorf("tool executed %d times, want 1", got)
	}
	for i, res := range results {
		if diff := cmp.Diff(Result{Content: "shared"}, res); diff != "" {
			t.Errorf("caller %d mismatch (-want +got):\n%s", i, diff)
		}
	}
}

func TestCall_SingleFlightSurvivesOneCallerLeaving(t *testing.T) {
	release := make(chan struct{})
	wh := newWebhook(t, func(w http.ResponseWriter, r *http.Request, _ []byte) {
		select {
		case <-release:
			io.WriteString(w, "done")
		case <-r.Context().Done():
		}
	})
	r := newTestRegistry(t, map[string]SourceOptions{
		"lookup": {Type: "http", URL: wh.srv.URL, ReadOnly: true},
	}, nil)
	key, _ := cacheKey("", "lookup", []byte(`{}`))
	waiters := func(want int) func() bool {
		return func() bool {
			r.flights.mu.Lock()
			defer r.flights.mu.Unlock()
			f := r.flights.flights[key]
			return f != nil && f.waiters == want
		}
	}
	impatientCtx, cancel := context.WithCancel(context.Background())
	impatient := make(chan Result, 1)
	go func() { impatient <- r.Call(impatientCtx, "lookup", nil) }()
	waitFor(t, "first caller", 10*time.Second, waiters(1))
	patient := make(chan Result, 1)
	go func() { patient <- r.Call(context.Background(), "lookup", nil) }()
	waitFor(t, "second caller", 10*time.Second, waiters(2))
	cancel()
	if res := <-impatient; !res.IsError {
		t.Errorf("cancelled caller got %+v, want an error result", res)
	}
	close(release)
	if diff := cmp.Diff(Result{Content: "done"}, <-patient); diff != "" {
		t.Errorf("remaining caller mismatch (-want +got):\n%s", diff)
	}
}

func TestResolve(t *testing.T) {
	wh := newWebhook(t, echoBody)
	r := newTestRegistry(t, map[string]SourceOptions{
		"weather": {Type: "http", URL: wh.srv.URL, Description: "Weather by city.", Parameters: weatherParams, ReadOnly: true,
			Timeout: 5 * time.Second, MaxResultBytes: 1000},
		"clock": {Type: "builtin", Name: "time_now"},
		"hook":  {Type: "http", URL: wh.srv.URL, Overrides: map[string]Override{"hook": {Timeout: time.Second, Cache: ptr(true)}}},
	}, nil)
	weather := Definition{Name: "weather", Source: "weather", Tool: "weather", Description: "Weather by city.",
		Parameters: []byte(`{"properties":{"city":{"type":"string"},"days":{"minimum":1,"type":"integer"}},"required":["city"],"type":"object"}`),
		ReadOnly:   true, Cacheable: true, Timeout: 5 * time.Second, MaxResultBytes: 1000}
	clock := Definition{Name: "clock", Source: "clock", Tool: "time_now",
		Description: "Returns the current date and time in UTC, in RFC 3339 format (for example 2025-01-31T14:05:09Z).",
		Parameters:  []byte(`{"type":"object","properties":{},"additionalProperties":false}`),
		ReadOnly:    true, Cacheable: false, Timeout: DefaultTimeout, MaxResultBytes: DefaultMaxResultBytes}
	hook := Definition{Name: "hook", Source: "hook", Tool: "hook", Parameters: []byte(emptyObjectSchema),
		Cacheable: true, Timeout: time.Second, MaxResultBytes: DefaultMaxResultBytes}

	tests := []struct {
		name    string
		names   []string
		want    []Definition
		wantErr string
	}{
		{name: "whole sources in order", names: []string{"weather", "clock"}, want: []Definition{weather, clock}},
		{name: "single tool", names: []string{"clock/time_now"}, want: []Definition{clock}},
		{name: "duplicates once", names: []string{"hook", "hook/hook", "hook"}, want: []Definition{hook}},
		{name: "none", names: nil, want: nil},
		{name: "unknown source", names: []string{"weather", "nope"}, wantErr: `resolving "nope": unknown tool source "nope"`},
		{name: "unknown tool", names: []string{"clock/time_later"}, wantErr: `unknown tool "time_later" in source "clock"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := r.Resolve(tt.names)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !errors.Is(err, ErrUnknownTool) {
					t.Fatalf("Resolve error = %v, want one containing %q and wrapping ErrUnknownTool", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Resolve mismatch (-want +got):\n%s", diff)
			}
		})
	}
	if err := r.anyDown(); err != nil {
		t.Errorf("Ready = %v, want nil", err)
	}
}

func TestNew_BadDefinitions(t *testing.T) {
	tests := []struct {
		name    string
		sources map[string]SourceOptions
		wantErr string
	}{
		{name: "invalid source name", sources: map[string]SourceOptions{"my weather": {Type: "builtin", Name: "time_now"}},
			wantErr: `tool source name "my weather"`},
		{name: "unknown type", sources: map[string]SourceOptions{"x": {Type: "grpc"}}, wantErr: `unknown type "grpc"`},
		{name: "unknown builtin", sources: map[string]SourceOptions{"x": {Type: "builtin", Name: "teleport"}},
			wantErr: `unknown builtin "teleport" (want one of: time_now)`},
		{name: "webhook without url", sources: map[string]SourceOptions{"x": {Type: "http"}}, wantErr: `want an absolute http or https URL`},
		{name: "schema does not compile", sources: map[string]SourceOptions{"x": {Type: "http", URL: "http://127.0.0.1:1/",
			Parameters: map[string]any{"type": "object", "properties": map[string]any{"a": map[string]any{"type": "nope"}}}}},
			wantErr: `tool "x" of source "x": parameters schema`},
		{name: "schema not an object schema", sources: map[string]SourceOptions{"x": {Type: "http", URL: "http://127.0.0.1:1/",
			Parameters: map[string]any{"type": "string"}}}, wantErr: `type is string, want "object"`},
		{name: "schema with external ref", sources: map[string]SourceOptions{"x": {Type: "http", URL: "http://127.0.0.1:1/",
			Parameters: map[string]any{"$ref": "file:///etc/passwd"}}}, wantErr: `parameters schema`},
		{name: "mcp without command or url", sources: map[string]SourceOptions{"x": {Type: "mcp"}}, wantErr: `set command (stdio) or url`},
		{name: "mcp with both", sources: map[string]SourceOptions{"x": {Type: "mcp", URL: "http://x", Command: []string{"x"}}},
			wantErr: `not both`},
		{name: "required mcp command not found", sources: map[string]SourceOptions{"x": {Type: "mcp", Command: []string{"/nonexistent/mcp-server"}, Required: true}},
			wantErr: `starting tool source "x"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := New(context.Background(), tt.sources, CacheOptions{}, nil, nil)
			if err == nil {
				r.Close()
				t.Fatalf("New succeeded, want an error containing %q", tt.wantErr)
			}
			if !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("New error = %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestBuiltin_TimeNow(t *testing.T) {
	paris := time.FixedZone("CET", 3600)
	now := time.Date(2025, 1, 31, 15, 5, 9, 123, paris)
	obs := &recordingObserver{}
	r := newTestRegistry(t, map[string]SourceOptions{"time_now": {Type: "builtin"}}, obs,
		WithClock(func() time.Time { return now }))
	tests := []struct {
		name string
		args string
		want Result
	}{
		{name: "no arguments", args: ``, want: Result{Content: "2025-01-31T14:05:09Z"}},
		{name: "empty object", args: `{}`, want: Result{Content: "2025-01-31T14:05:09Z"}},
		{name: "unexpected argument", args: `{"tz":"CET"}`, want: Result{IsError: true,
			Content: "invalid arguments for tool time_now: at /: additional properties 'tz' not allowed"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, r.Call(context.Background(), "time_now", []byte(tt.args))); diff != "" {
				t.Errorf("Call mismatch (-want +got):\n%s", diff)
			}
		})
	}
	if hits, misses, _ := obs.counts(); hits+misses != 0 {
		t.Errorf("time_now used the cache (%d hits, %d misses); it must not by default", hits, misses)
	}
}

func TestCall_AfterClose(t *testing.T) {
	r, err := New(context.Background(), map[string]SourceOptions{"clock": {Type: "builtin", Name: "time_now"}}, CacheOptions{}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Errorf("second Close = %v", err)
	}
	if res := r.Call(context.Background(), "clock", nil); !res.IsError {
		t.Errorf("Call after Close = %+v, want an error result", res)
	}
}

func TestModelName(t *testing.T) {
	long := strings.Repeat("a", 70)
	tests := []struct {
		name, source, tool, want string
	}{
		{name: "plain", source: "everything", tool: "echo", want: "everything__echo"},
		{name: "dash kept", source: "gh", tool: "list-issues", want: "gh__list-issues"},
		{name: "dots replaced and hashed", source: "fs", tool: "read.file", want: "fs__read_file_" + shortHash("fs__read.file")},
		{name: "too long cut and hashed", source: "src", tool: long, want: ("src__" + long)[:55] + "_" + shortHash("src__"+long)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := modelName(tt.source, tt.tool)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("modelName mismatch (-want +got):\n%s", diff)
			}
			if !validName(got) {
				t.Errorf("modelName(%q, %q) = %q is not a valid name", tt.source, tt.tool, got)
			}
		})
	}
}

func TestLRUCache_TTL(t *testing.T) {
	var evictions atomic.Int64
	const ttl = 50 * time.Millisecond
	c := NewLRUCache(10, ttl, func() { evictions.Add(1) })
	added := time.Now()
	c.Add("k", Result{Content: "v"})
	got, ok := c.Get("k")
	if !ok && time.Since(added) < ttl {
		t.Fatalf("Get right after Add missed")
	}
	if ok && got != (Result{Content: "v"}) {
		t.Fatalf("Get = %+v", got)
	}
	waitFor(t, "entry to expire", 10*time.Second, func() bool { _, ok := c.Get("k"); return !ok })
	waitFor(t, "expiry to be reported as an eviction", 10*time.Second, func() bool { return evictions.Load() == 1 })
}

func TestLRUCache_Bound(t *testing.T) {
	var evictions atomic.Int64
	c := NewLRUCache(2, time.Hour, func() { evictions.Add(1) })
	c.Add("a", Result{Content: "A"})
	c.Add("b", Result{Content: "B"})
	c.Get("a") // a is now more recent than b
	c.Add("c", Result{Content: "C"})
	present := map[string]bool{}
	for _, k := range []string{"a", "b", "c"} {
		_, present[k] = c.Get(k)
	}
	if diff := cmp.Diff(map[string]bool{"a": true, "b": false, "c": true}, present); diff != "" {
		t.Errorf("present mismatch (-want +got):\n%s", diff)
	}
	if got := evictions.Load(); got != 1 {
		t.Errorf("evictions = %d, want 1", got)
	}
	if got := c.Len(); got != 2 {
		t.Errorf("Len = %d, want 2", got)
	}
}

func TestRegistry_EvictionsObserved(t *testing.T) {
	wh := newWebhook(t, echoBody)
	obs := &recordingObserver{}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r, err := New(ctx, map[string]SourceOptions{"t": {Type: "http", URL: wh.srv.URL, ReadOnly: true}},
		CacheOptions{MaxEntries: 1, TTL: time.Hour}, obs, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	r.Call(ctx, "t", []byte(`{"a":1}`))
	r.Call(ctx, "t", []byte(`{"a":2}`))
	if _, _, ev := obs.counts(); ev != 1 {
		t.Errorf("evictions = %d, want 1", ev)
	}
}
