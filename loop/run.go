package loop

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agate-gateway/agate/telemetry"
	"github.com/agate-gateway/agate/tools"
	"github.com/agate-gateway/agate/translate"
)

// The defaults a Loop applies where it leaves a field zero (or negative). The loop owns
// them; config documents the same numbers for a key's max_tool_iterations,
// max_tool_calls_per_turn and max_concurrent_tool_calls, and the gateway's tests hold the
// two equal.
const (
	DefaultMaxIterations      = 8
	DefaultMaxCallsPerTurn    = 32
	DefaultMaxConcurrentCalls = 8
	DefaultKeepAliveInterval  = 10 * time.Second
)

// Loop runs server-side tool loops for one key's configuration. A Loop value may serve
// many requests concurrently; per-request state lives in Run.
type Loop struct {
	// Model runs model turns (the proxy's upstream call, with retries and fallbacks).
	Model Model
	// Tools executes server tool calls.
	Tools Executor
	// Definitions are the server tools offered to the model.
	Definitions []tools.Definition
	// MaxIterations bounds the turns that may call server tools; the turn after the last
	// one is made with tool_choice none so the model answers with what it has. Default
	// DefaultMaxIterations.
	MaxIterations int
	// MaxCallsPerTurn bounds the server tool calls run for one model turn; the calls after
	// the first MaxCallsPerTurn are not run and give the model an error result. Default
	// DefaultMaxCallsPerTurn.
	MaxCallsPerTurn int
	// MaxConcurrentCalls bounds how many read-only calls of one turn run at the same time
	// (a turn with a mutating call runs its calls in order). Default DefaultMaxConcurrentCalls;
	// 1 runs them in order.
	MaxConcurrentCalls int
	// Caller identifies the API key the loop runs for (its configured name, never the
	// credential); tool calls carry it in their context ([tools.WithCaller]) so that a
	// per-key tool cache keeps keys apart. Empty means no identity.
	Caller string
	// KeepAliveInterval is how often the client is pinged while tools run. Default
	// DefaultKeepAliveInterval; one ping is also sent as each batch of tools starts.
	KeepAliveInterval time.Duration
	// Observer records the number of turns per request; may be nil.
	Observer Observer
	// Logger may be nil.
	Logger *slog.Logger
	// Tracer gives each server tool call a span (trace.go); nil means none.
	Tracer *telemetry.Tracer
	// Recorder is told of every server tool call, the calls over MaxCallsPerTurn too (as
	// failed calls that took no time); nil means none. It belongs to one Run at a time.
	Recorder ToolRecorder
}

// Run answers req, executing server tool calls between model turns, and writes what the
// client sees to out: one response whose text and reasoning arrive as they stream, whose
// tool calls are only the client's, with a single finish reason and the usage of all
// turns summed. Tool failures go back to the model as error results; Run returns an error
// only for infrastructure failures (the upstream, or the client going away).
func (l *Loop) Run(ctx context.Context, req *translate.Request, out Output) error {
	if req.N > 1 {
		return translate.Errorf("n", "n > 1 is not supported for keys with server-side tools")
	}
	work := req.Clone()
	server := make(map[string]*tools.Definition, len(l.Definitions))
	for i := range l.Definitions {
		d := &l.Definitions[i]
		server[d.Name] = d
		work.Tools = append(work.Tools, translate.Tool{Name: d.Name, Description: d.Description, Parameters: string(d.Parameters)})
	}
	if work.ToolChoice.Mode == "" {
		work.ToolChoice.Mode = translate.ToolChoiceAuto
	}
	maxIter := positiveOr(l.MaxIterations, DefaultMaxIterations)
	r := &run{l: l, out: out, server: server}
	defer func() {
		if l.Observer != nil {
			l.Observer.Iterations(r.turns)
		}
	}()
	for {
		last := r.turns >= maxIter
		if last {
			work.ToolChoice = translate.ToolChoice{Mode: translate.ToolChoiceNone}
		}
		done, err := r.turn(ctx, work, last)
		if err != nil {
			return err
		}
		if done {
			if err := out.Event(&translate.Event{Kind: translate.EventUsage, Usage: r.usage}); err != nil {
				return err
			}
			return out.Event(&translate.Event{Kind: translate.EventFinish, FinishReason: r.finish})
		}
	}
}

// run is the state of one Run call.
type run struct {
	l       *Loop
	out     Output
	server  map[string]*tools.Definition
	turns   int
	started bool
	usage   translate.Usage
	finish  string
}

// turn makes one model call and executes the server tools it asked for. It returns done
// when the response is complete (an answer, client tool calls, or the last turn).
func (r *run) turn(ctx context.Context, work *translate.Request, last bool) (done bool, err error) {
	r.turns++
	var t translate.Turn
	serverCall := map[int]bool{}
	err = r.l.Model.Stream(ctx, work, func(ev *translate.Event) error {
		t.Add(ev)
		switch ev.Kind {
		case translate.EventStart:
			if r.started {
				return nil
			}
			r.started = true
		case translate.EventUsage, translate.EventFinish, translate.EventError:
			return nil
		case translate.EventToolCallStart:
			if _, ok := r.server[ev.Name]; ok {
				serverCall[ev.Index] = true
				return nil
			}
		case translate.EventToolCallArgsDelta, translate.EventToolCallEnd:
			if serverCall[ev.Index] {
				return nil
			}
		}
		return r.out.Event(ev)
	})
	r.usage.Add(t.Usage())
	if err != nil {
		return false, err
	}
	if err := t.Err(); err != nil {
		return false, err
	}
	var calls, clientCalls []translate.ToolCall
	for _, tc := range t.ToolCalls() {
		if _, ok := r.server[tc.Name]; ok {
			calls = append(calls, tc)
		} else {
			clientCalls = append(clientCalls, tc)
		}
	}
	r.finish = t.FinishReason()
	if len(calls) == 0 || last {
		if len(clientCalls) == 0 && r.finish == translate.FinishToolCalls {
			r.finish = translate.FinishStop // only server calls, which the client never sees
		}
		return true, nil
	}
	results, err := r.execute(ctx, calls)
	if err != nil {
		return false, err
	}
	if len(clientCalls) > 0 {
		r.finish = translate.FinishToolCalls
		return true, nil // the client must answer its own calls; server results are cached
	}
	work.Messages = append(work.Messages, t.Message())
	for i, tc := range calls {
		work.Messages = append(work.Messages, translate.Message{
			Role: translate.RoleTool, ToolCallID: tc.ID, Name: tc.Name, ToolError: results[i].IsError,
			Content: []translate.Part{{Type: translate.PartText, Text: results[i].Content}},
		})
	}
	return false, nil
}

// execute runs the calls and returns one result per call, in order: the first
// MaxCallsPerTurn run, concurrently (at most MaxConcurrentCalls at a time) when every one
// of them is read-only, else in order; the rest get a limit error. It pings the client while
// they run.
func (r *run) execute(ctx context.Context, calls []translate.ToolCall) ([]tools.Result, error) {
	if err := r.out.KeepAlive(); err != nil {
		return nil, err
	}
	ctx = tools.WithCaller(ctx, r.l.Caller)
	results := make([]tools.Result, len(calls))
	var took []time.Duration // each call's time, for the Recorder
	if r.l.Recorder != nil {
		took = make([]time.Duration, len(calls))
		defer r.record(calls, results, took)
	}
	limit := positiveOr(r.l.MaxCallsPerTurn, DefaultMaxCallsPerTurn)
	if len(calls) > limit {
		for i := limit; i < len(calls); i++ {
			results[i] = tools.Result{IsError: true, Content: fmt.Sprintf(
				"tool call limit per turn (%d) exceeded: this call was not run; make at most %d tool calls in one turn", limit, limit)}
		}
		if r.l.Logger != nil {
			r.l.Logger.Warn("tool calls over the per-turn limit not run", "calls", len(calls), "limit", limit)
		}
		calls = calls[:limit]
	}
	workers := min(positiveOr(r.l.MaxConcurrentCalls, DefaultMaxConcurrentCalls), len(calls))
	for _, c := range calls {
		if !r.server[c.Name].ReadOnly {
			workers = 1
		}
	}
	call := func(i int) {
		start := time.Now()
		results[i] = r.callTool(ctx, calls[i]) // trace.go: Tools.Call in a span
		if took != nil {
			took[i] = time.Since(start)
		}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if workers <= 1 {
			for i := range calls {
				call(i)
			}
			return
		}
		var next atomic.Int64
		var wg sync.WaitGroup
		for range workers {
			wg.Go(func() {
				for i := int(next.Add(1) - 1); i < len(calls); i = int(next.Add(1) - 1) {
					call(i)
				}
			})
		}
		wg.Wait()
	}()
	every := r.l.KeepAliveInterval
	if every <= 0 {
		every = DefaultKeepAliveInterval
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-done:
			return results, ctx.Err()
		case <-tick.C:
			if err := r.out.KeepAlive(); err != nil {
				<-done // the output cancelled ctx; the tools stop
				return nil, err
			}
		}
	}
}

// record tells the Recorder of a turn's calls, once they are over (execute's calls all
// returned), in their order.
func (r *run) record(calls []translate.ToolCall, results []tools.Result, took []time.Duration) {
	for i, c := range calls {
		if d := r.server[c.Name]; d != nil {
			r.l.Recorder.ToolCall(d, results[i].IsError, took[i])
		}
	}
}

func positiveOr(v, def int) int {
	if v > 0 {
		return v
	}
	return def
}
