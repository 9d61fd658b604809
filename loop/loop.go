package loop

import (
	"context"

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
