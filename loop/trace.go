package loop

import (
	"context"

	"github.com/agate-gateway/agate/tools"
	"github.com/agate-gateway/agate/translate"
)

// callTool runs one server tool call in its "execute_tool {name}" span (none when
// Loop.Tracer is nil); the tool sources propagate the span's trace context.
func (r *run) callTool(ctx context.Context, c translate.ToolCall) tools.Result {
	ctx, span := r.l.Tracer.StartTool(ctx, c.Name, c.ID, c.Arguments)
	res := r.l.Tools.Call(ctx, c.Name, []byte(c.Arguments))
	span.End(res.IsError, res.Content)
	return res
}
