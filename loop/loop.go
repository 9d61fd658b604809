package loop

import (
	"context"
	"time"

	"github.com/agate-gateway/agate/tools"
	"github.com/agate-gateway/agate/translate"
)

// Model runs one model turn, passing its events to emit as they arrive.
type Model interface {
	Stream(ctx context.Context, req *translate.Request, emit translate.Emit) error
}

// Executor runs server tools. Call never fails: tool failures are results marked as errors.
type Executor interface {
	Call(ctx context.Context, name string, args []byte) tools.Result
}

// Output receives what the client sees.
type Output interface {
	// Event forwards one client-visible event. An error (client gone) ends the loop.
	Event(ev *translate.Event) error
	// KeepAlive tells the client the response is still alive while tools run.
	KeepAlive() error
}

// Observer records loop metrics; nil fields of Loop mean no recording.
type Observer interface {
	Iterations(n int)
}

// ToolRecorder is told of one request's server tool calls (Loop.Recorder): each call's
// tool, whether its result was an error, and how long it ran. It is called from the
// goroutine that runs Run, once a turn's calls are over, in the order the model made
// them; never with a call's arguments or result.
type ToolRecorder interface {
	ToolCall(d *tools.Definition, failed bool, took time.Duration)
}
