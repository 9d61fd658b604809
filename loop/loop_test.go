package loop

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agate-gateway/agate/tools"
	"github.com/agate-gateway/agate/translate"
)

// scriptedModel answers each turn with the next script entry and records the requests.
type scriptedModel struct {
	turns [][]translate.Event
	mu    sync.Mutex
	seen  []*translate.Request
}

func (m *scriptedModel) Stream(ctx context.Context, req *translate.Request, emit translate.Emit) error {
	m.mu.Lock()
	i := len(m.seen)
	cp := *req
	cp.Messages = append([]translate.Message(nil), req.Messages...)
	m.seen = append(m.seen, &cp)
	m.mu.Unlock()
	if i >= len(m.turns) {
		return errors.New("model called more often than scripted")
	}
	for j := range m.turns[i] {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := emit(&m.turns[i][j]); err != nil {
			return err
		}
	}
	return nil
}

// fakeTools answers calls from a map and records them.
type fakeTools struct {
	results map[string]tools.Result
	calls   atomic.Int32
	block   chan struct{} // if set, calls wait for it or ctx
	running atomic.Int32
	maxPar  atomic.Int32
}

func (f *fakeTools) Call(ctx context.Context, name string, args []byte) tools.Result {
	f.calls.Add(1)
	n := f.running.Add(1)
	defer f.running.Add(-1)
	for {
		m := f.maxPar.Load()
		if n <= m || f.maxPar.CompareAndSwap(m, n) {
			break
		}
	}
	if f.block != nil {
		select {
		case <-f.block:
		case <-ctx.Done():
			return tools.Result{Content: "cancelled", IsError: true}
		}
	}
	if r, ok := f.results[name]; ok {
		return tools.Result{Content: r.Content + " " + string(args), IsError: r.IsError}
	}
	return tools.Result{Content: "unknown tool " + name, IsError: true}
}

// recorder is an Output that keeps the client-visible events.
type recorder struct {
	events     []translate.Event
	keepAlives int
	failAfter  int // fail Event calls after this many (0 = never)
}

func (r *recorder) Event(ev *translate.Event) error {
	if r.failAfter > 0 && len(r.events) >= r.failAfter {
		return errors.New("client gone")
	}
	r.events = append(r.events, *ev)
	return nil
}
func (r *recorder) KeepAlive() error { r.keepAlives++; return nil }

func text(s string) translate.Event { return translate.Event{Kind: translate.EventTextDelta, Text: s} }
func call(i int, id, name, args string) []translate.Event {
	return []translate.Event{
		{Kind: translate.EventToolCallStart, Index: i, CallID: id, Name: name},
		{Kind: translate.EventToolCallArgsDelta, Index: i, Text: args},
		{Kind: translate.EventToolCallEnd, Index: i},
	}
}
func finish(r string, prompt, completion int) []translate.Event {
	return []translate.Event{
		{Kind: translate.EventUsage, Usage: translate.Usage{PromptTokens: prompt, CompletionTokens: completion}},
		{Kind: translate.EventFinish, FinishReason: r},
	}
}
func turn(parts ...any) []translate.Event {
	out := []translate.Event{{Kind: translate.EventStart, ID: "up", Model: "m"}}
	for _, p := range parts {
		switch v := p.(type) {
		case translate.Event:
			out = append(out, v)
		case []translate.Event:
			out = append(out, v...)
		}
	}
	return out
}

func baseRequest() *translate.Request {
	return &translate.Request{Model: "m", Messages: []translate.Message{{Role: "user", Content: []translate.Part{{Type: translate.PartText, Text: "weather?"}}}}}
}

var defs = []tools.Definition{
	{Name: "weather", Description: "w", Parameters: []byte(`{"type":"object"}`), ReadOnly: true},
	{Name: "clock", Description: "c", Parameters: []byte(`{"type":"object"}`), ReadOnly: true},
	{Name: "write", Description: "x", Parameters: []byte(`{"type":"object"}`)},
}

// kinds summarises the client-visible events.
func kinds(evs []translate.Event) []string {
	var out []string
	for _, e := range evs {
		switch e.Kind {
		case translate.EventStart:
			out = append(out, "start")
		case translate.EventTextDelta:
			out = append(out, "text:"+e.Text)
		case translate.EventToolCallStart:
			out = append(out, "call:"+e.Name)
		case translate.EventToolCallArgsDelta:
			out = append(out, "args:"+e.Text)
		case translate.EventToolCallEnd:
			out = append(out, "end")
		case translate.EventUsage:
			out = append(out, "usage:"+strconv.Itoa(e.Usage.PromptTokens)+"/"+strconv.Itoa(e.Usage.CompletionTokens))
		case translate.EventFinish:
			out = append(out, "finish:"+e.FinishReason)
		}
	}
	return out
}

func TestLoop(t *testing.T) {
	tests := []struct {
		name       string
		turns      [][]translate.Event
		maxIter    int
		wantEvents []string
		wantTurns  int
		wantCalls  int32
		// check inspects the requests the model saw.
		check func(t *testing.T, seen []*translate.Request)
	}{
		{
			name: "no tool calls is one turn",
			turns: [][]translate.Event{
				turn(text("hi"), finish("stop", 3, 1)),
			},
			wantEvents: []string{"start", "text:hi", "usage:3/1", "finish:stop"},
			wantTurns:  1,
		},
		{
			name: "one server call then answer: one response, usage summed, no tool_calls shown",
			turns: [][]translate.Event{
				turn(text("let me check. "), call(0, "c1", "weather", `{"city":"Paris"}`), finish("tool_calls", 10, 5)),
				turn(text("sunny"), finish("stop", 20, 2)),
			},
			wantEvents: []string{"start", "text:let me check. ", "text:sunny", "usage:30/7", "finish:stop"},
			wantTurns:  2,
			wantCalls:  1,
			check: func(t *testing.T, seen []*translate.Request) {
				second := seen[1].Messages
				if len(second) != 3 {
					t.Fatalf("second turn has %d messages, want user, assistant, tool", len(second))
				}
				a, tm := second[1], second[2]
				if a.Role != "assistant" || len(a.ToolCalls) != 1 || a.ToolCalls[0].ID != "c1" || a.Text() != "let me check. " {
					t.Errorf("assistant turn not kept intact: %+v", a)
				}
				if tm.Role != "tool" || tm.ToolCallID != "c1" || tm.Text() != `sun {"city":"Paris"}` {
					t.Errorf("tool result = %+v", tm)
				}
				if len(seen[0].Tools) != len(defs) {
					t.Errorf("server tools not offered: %d tools", len(seen[0].Tools))
				}
			},
		},
		{
			name: "mixed turn: client call ends the response with only the client's call",
			turns: [][]translate.Event{
				turn(call(0, "c1", "weather", `{}`), call(1, "c2", "client_fn", `{"a":1}`), finish("tool_calls", 10, 5)),
			},
			wantEvents: []string{"start", "call:client_fn", `args:{"a":1}`, "end", "usage:10/5", "finish:tool_calls"},
			wantTurns:  1,
			wantCalls:  1,
		},
		{
			name:    "iteration limit: last turn with tool_choice none",
			maxIter: 2,
			turns: [][]translate.Event{
				turn(call(0, "c1", "weather", `{}`), finish("tool_calls", 1, 1)),
				turn(call(0, "c2", "weather", `{}`), finish("tool_calls", 1, 1)),
				turn(text("done"), finish("stop", 1, 1)),
			},
			wantEvents: []string{"start", "text:done", "usage:3/3", "finish:stop"},
			wantTurns:  3,
			wantCalls:  2,
			check: func(t *testing.T, seen []*translate.Request) {
				if got := seen[2].ToolChoice.Mode; got != translate.ToolChoiceNone {
					t.Errorf("last turn tool_choice = %q, want none", got)
				}
				if got := seen[0].ToolChoice.Mode; got != translate.ToolChoiceAuto {
					t.Errorf("first turn tool_choice = %q, want auto", got)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := &scriptedModel{turns: tt.turns}
			ft := &fakeTools{results: map[string]tools.Result{"weather": {Content: "sun"}}}
			var obs iterObserver
			l := &Loop{Model: m, Tools: ft, Definitions: defs, MaxIterations: tt.maxIter, Observer: &obs}
			var out recorder
			if err := l.Run(context.Background(), baseRequest(), &out); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.wantEvents, kinds(out.events)); diff != "" {
				t.Errorf("client events (-want +got):\n%s", diff)
			}
			if len(m.seen) != tt.wantTurns || obs.n != tt.wantTurns {
				t.Errorf("turns = %d (observed %d), want %d", len(m.seen), obs.n, tt.wantTurns)
			}
			if got := ft.calls.Load(); got != tt.wantCalls {
				t.Errorf("tool calls = %d, want %d", got, tt.wantCalls)
			}
			if tt.check != nil {
				tt.check(t, m.seen)
			}
		})
	}
}

type iterObserver struct{ n int }

func (o *iterObserver) Iterations(n int) { o.n = n }

func TestLoop_ToolErrorResult(t *testing.T) {
	m := &scriptedModel{turns: [][]translate.Event{
		turn(call(0, "c1", "write", `{}`), finish("tool_calls", 1, 1)),
		turn(text("ok"), finish("stop", 1, 1)),
	}}
	ft := &fakeTools{results: map[string]tools.Result{"write": {Content: "disk full", IsError: true}}}
	l := &Loop{Model: m, Tools: ft, Definitions: defs}
	var out recorder
	if err := l.Run(context.Background(), baseRequest(), &out); err != nil {
		t.Fatal(err)
	}
	got := m.seen[1].Messages[2]
	if got.Role != "tool" || !got.ToolError || !strings.HasPrefix(got.Text(), "disk full") {
		t.Errorf("error result sent to the model = %+v, want a tool message flagged ToolError with the error text", got)
	}
}

func TestLoop_ReadOnlyCallsRunConcurrently(t *testing.T) {
	block := make(chan struct{})
	m := &scriptedModel{turns: [][]translate.Event{
		turn(call(0, "c1", "weather", `{"city":"a"}`), call(1, "c2", "clock", `{}`), finish("tool_calls", 1, 1)),
		turn(text("ok"), finish("stop", 1, 1)),
	}}
	ft := &fakeTools{results: map[string]tools.Result{"weather": {Content: "w"}, "clock": {Content: "c"}}, block: block}
	go func() {
		// Release the calls only once both are running at the same time.
		for ft.running.Load() < 2 {
			time.Sleep(time.Millisecond)
		}
		close(block)
	}()
	l := &Loop{Model: m, Tools: ft, Definitions: defs}
	var out recorder
	if err := l.Run(context.Background(), baseRequest(), &out); err != nil {
		t.Fatal(err)
	}
	if ft.maxPar.Load() != 2 {
		t.Errorf("max concurrent calls = %d, want 2", ft.maxPar.Load())
	}
}

func TestLoop_MutatingCallsRunInOrder(t *testing.T) {
	m := &scriptedModel{turns: [][]translate.Event{
		turn(call(0, "c1", "weather", `{}`), call(1, "c2", "write", `{}`), finish("tool_calls", 1, 1)),
		turn(text("ok"), finish("stop", 1, 1)),
	}}
	ft := &fakeTools{results: map[string]tools.Result{"weather": {Content: "w"}, "write": {Content: "x"}}}
	l := &Loop{Model: m, Tools: ft, Definitions: defs}
	var out recorder
	if err := l.Run(context.Background(), baseRequest(), &out); err != nil {
		t.Fatal(err)
	}
	if ft.maxPar.Load() != 1 {
		t.Errorf("max concurrent calls = %d, want 1 (a mutating tool in the turn)", ft.maxPar.Load())
	}
	msgs := m.seen[1].Messages
	if msgs[2].ToolCallID != "c1" || msgs[3].ToolCallID != "c2" {
		t.Errorf("results out of order: %q, %q", msgs[2].ToolCallID, msgs[3].ToolCallID)
	}
}

// TestLoop_ClientGoneCancelsTools: when the client disappears while a slow tool runs, the
// tool's context is cancelled and Run returns the output's error.
func TestLoop_ClientGoneCancelsTools(t *testing.T) {
	m := &scriptedModel{turns: [][]translate.Event{
		turn(call(0, "c1", "weather", `{}`), finish("tool_calls", 1, 1)),
	}}
	ft := &fakeTools{results: map[string]tools.Result{"weather": {Content: "w"}}, block: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	out := &cancelOnKeepAlive{cancel: cancel, after: 2}
	l := &Loop{Model: m, Tools: ft, Definitions: defs, KeepAliveInterval: time.Millisecond}
	err := l.Run(ctx, baseRequest(), out)
	if err == nil {
		t.Fatal("Run succeeded after the client left")
	}
	if ft.calls.Load() != 1 {
		t.Errorf("tool calls = %d", ft.calls.Load())
	}
}

// cancelOnKeepAlive fails its nth keep-alive and cancels ctx, as the proxy's SSE output
// does when a flush fails.
type cancelOnKeepAlive struct {
	recorder
	cancel context.CancelFunc
	after  int
}

func (c *cancelOnKeepAlive) KeepAlive() error {
	c.keepAlives++
	if c.keepAlives >= c.after {
		c.cancel()
		return errors.New("client gone")
	}
	return nil
}

func TestLoop_RejectsNGreaterThanOne(t *testing.T) {
	req := baseRequest()
	req.N = 2
	l := &Loop{Model: &scriptedModel{}, Tools: &fakeTools{}, Definitions: defs}
	err := l.Run(context.Background(), req, &recorder{})
	if !errors.Is(err, translate.ErrBadRequest) {
		t.Fatalf("err = %v, want a bad request", err)
	}
}

// BenchmarkLoopTurn measures the loop's own CPU per turn (model and tools are instant
// fakes): one server call turn plus the answer turn, reported per turn.
func BenchmarkLoopTurn(b *testing.B) {
	turns := [][]translate.Event{
		turn(text("checking. "), call(0, "c1", "weather", `{"city":"Paris"}`), finish("tool_calls", 10, 5)),
		turn(text("sunny"), finish("stop", 20, 2)),
	}
	ft := &fakeTools{results: map[string]tools.Result{"weather": {Content: "sun"}}}
	req := baseRequest()
	b.ReportAllocs()
	for b.Loop() {
		m := &replayModel{turns: turns}
		l := &Loop{Model: m, Tools: ft, Definitions: defs}
		var out discard
		if err := l.Run(context.Background(), req, &out); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/2, "ns/turn")
}

type replayModel struct {
	turns [][]translate.Event
	i     int
}

func (m *replayModel) Stream(_ context.Context, _ *translate.Request, emit translate.Emit) error {
	t := m.turns[m.i]
	m.i++
	for j := range t {
		if err := emit(&t[j]); err != nil {
			return err
		}
	}
	return nil
}

type discard struct{}

func (discard) Event(*translate.Event) error { return nil }
func (discard) KeepAlive() error             { return nil }

// manyCalls is a model turn calling tool n times, with arguments {"i":0}, {"i":1}, ...
func manyCalls(tool string, n int) []translate.Event {
	var parts []any
	for i := range n {
		parts = append(parts, call(i, "c"+strconv.Itoa(i), tool, `{"i":`+strconv.Itoa(i)+`}`))
	}
	parts = append(parts, finish("tool_calls", 1, 1))
	return turn(parts...)
}

// TestLoop_ToolCallsPerTurnLimit: calls of one turn beyond MaxCallsPerTurn are not run; each
// gives the model an error result naming the limit, in its place among the results.
func TestLoop_ToolCallsPerTurnLimit(t *testing.T) {
	tests := []struct {
		name         string
		tool         string
		calls, limit int
		wantRun      int32
	}{
		{name: "default limit of 32, read-only calls", tool: "weather", calls: 40, wantRun: 32},
		{name: "default limit of 32, mutating calls", tool: "write", calls: 40, wantRun: 32},
		{name: "configured limit", tool: "weather", calls: 6, limit: 5, wantRun: 5},
		{name: "at the limit", tool: "weather", calls: 5, limit: 5, wantRun: 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := &scriptedModel{turns: [][]translate.Event{
				manyCalls(tt.tool, tt.calls),
				turn(text("ok"), finish("stop", 1, 1)),
			}}
			ft := &fakeTools{results: map[string]tools.Result{"weather": {Content: "w"}, "write": {Content: "x"}}}
			l := &Loop{Model: m, Tools: ft, Definitions: defs, MaxCallsPerTurn: tt.limit}
			if err := l.Run(context.Background(), baseRequest(), &recorder{}); err != nil {
				t.Fatal(err)
			}
			if got := ft.calls.Load(); got != tt.wantRun {
				t.Errorf("tool calls run = %d, want %d", got, tt.wantRun)
			}
			limit := tt.limit
			if limit == 0 {
				limit = DefaultMaxCallsPerTurn
			}
			limitErr := "error: tool call limit per turn (" + strconv.Itoa(limit) + ") exceeded: this call was not run; make at most " +
				strconv.Itoa(limit) + " tool calls in one turn"
			var want, got []string
			for i, msg := range m.seen[1].Messages[2:] {
				if msg.ToolCallID != "c"+strconv.Itoa(i) {
					t.Errorf("result %d answers %q", i, msg.ToolCallID)
				}
				w := "ok: " + ft.results[tt.tool].Content + ` {"i":` + strconv.Itoa(i) + `}`
				if int32(i) >= tt.wantRun {
					w = limitErr
				}
				g := "ok: " + msg.Text()
				if msg.ToolError {
					g = "error: " + msg.Text()
				}
				want, got = append(want, w), append(got, g)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("tool results (-want +got):\n%s", diff)
			}
		})
	}
}

// gatedTools is an Executor whose calls each wait to be released; it counts the calls in
// flight and the most at once.
type gatedTools struct {
	release                      chan struct{} // lets one waiting call finish
	mu                           sync.Mutex
	inFlight, maxInFlight, calls int
}

func (g *gatedTools) Call(ctx context.Context, name string, args []byte) tools.Result {
	g.mu.Lock()
	g.calls++
	g.inFlight++
	g.maxInFlight = max(g.maxInFlight, g.inFlight)
	g.mu.Unlock()
	<-g.release
	g.mu.Lock()
	g.inFlight--
	g.mu.Unlock()
	return tools.Result{Content: "ok"}
}

// TestLoop_ConcurrencyLimit: read-only calls of one turn run concurrently, never more than
// MaxConcurrentCalls at once. The calls are released one at a time, each time only after
// every goroutine of the test's bubble is blocked (synctest.Wait), so the count of calls in
// flight is exactly how many the loop has started by then.
func TestLoop_ConcurrencyLimit(t *testing.T) {
	tests := []struct {
		name         string
		calls, limit int
		want         int
	}{
		{name: "default limit of 8", calls: 20, want: DefaultMaxConcurrentCalls},
		{name: "configured limit", calls: 10, limit: 3, want: 3},
		{name: "limit 1 runs in order", calls: 4, limit: 1, want: 1},
		{name: "fewer calls than the limit", calls: 3, limit: 5, want: 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				m := &scriptedModel{turns: [][]translate.Event{
					manyCalls("weather", tt.calls),
					turn(text("ok"), finish("stop", 1, 1)),
				}}
				g := &gatedTools{release: make(chan struct{})}
				l := &Loop{Model: m, Tools: g, Definitions: defs, MaxConcurrentCalls: tt.limit}
				errc := make(chan error, 1)
				go func() { errc <- l.Run(context.Background(), baseRequest(), &recorder{}) }()
				for released := 0; released < tt.calls; released++ {
					synctest.Wait()
					g.mu.Lock()
					inFlight := g.inFlight
					g.mu.Unlock()
					if want := min(tt.want, tt.calls-released); inFlight != want {
						t.Errorf("after %d calls finished, %d in flight, want %d", released, inFlight, want)
					}
					g.release <- struct{}{}
				}
				if err := <-errc; err != nil {
					t.Fatal(err)
				}
				if g.calls != tt.calls || g.maxInFlight != tt.want {
					t.Errorf("calls = %d, most in flight = %d; want %d, %d", g.calls, g.maxInFlight, tt.calls, tt.want)
				}
			})
		})
	}
}

// callerTools records the caller named by each call's context.
type callerTools struct {
	mu      sync.Mutex
	callers []string
}

func (c *callerTools) Call(ctx context.Context, _ string, _ []byte) tools.Result {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.callers = append(c.callers, tools.CallerFrom(ctx))
	return tools.Result{Content: "ok"}
}

// TestLoop_CallerReachesTools: every tool call's context names the loop's Caller, which the
// tool cache uses to keep keys apart.
func TestLoop_CallerReachesTools(t *testing.T) {
	m := &scriptedModel{turns: [][]translate.Event{
		turn(call(0, "c1", "weather", `{}`), call(1, "c2", "clock", `{}`), finish("tool_calls", 1, 1)),
		turn(call(0, "c3", "write", `{}`), finish("tool_calls", 1, 1)),
		turn(text("ok"), finish("stop", 1, 1)),
	}}
	ct := &callerTools{}
	l := &Loop{Model: m, Tools: ct, Definitions: defs, Caller: "alice"}
	if err := l.Run(context.Background(), baseRequest(), &recorder{}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"alice", "alice", "alice"}, ct.callers); diff != "" {
		t.Errorf("callers seen by the tools (-want +got):\n%s", diff)
	}
}
