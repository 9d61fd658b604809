package tools

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agate-gateway/agate/internal/redact"
)

// This file is what the gateway's MCP endpoint (package mcpserve) needs of a Registry
// beyond the loop's Resolve and Call: a tool's MCP hints, progress reported by a running
// call, the path a call came by (for metrics), and the resources and prompts of MCP
// sources passed through.

// Hints are the behaviour hints of a tool as MCP clients see them (MCP ToolAnnotations).
type Hints struct {
	// Title is a human-readable name ("" when the source gives none).
	Title string
	// ReadOnly is Definition.ReadOnly.
	ReadOnly bool
	// Destructive, Idempotent and OpenWorld are the MCP source's own hints; nil when it
	// gave none (and for webhook and built-in tools).
	Destructive *bool
	Idempotent  bool
	OpenWorld   *bool
}

// Hints returns the hints of the tool with model-facing name, and false when no tool has
// that name.
func (r *Registry) Hints(name string) (Hints, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	t, ok := r.byName[name]
	if !ok {
		return Hints{}, false
	}
	h := t.hints
	h.ReadOnly = t.def.ReadOnly
	return h, true
}

// hintsOf maps an MCP tool's annotations to Hints (ReadOnly is set from the definition).
func hintsOf(t *mcp.Tool) Hints {
	h := Hints{Title: t.Title}
	if a := t.Annotations; a != nil {
		if h.Title == "" {
			h.Title = a.Title
		}
		h.Destructive, h.Idempotent, h.OpenWorld = a.DestructiveHint, a.IdempotentHint, a.OpenWorldHint
	}
	return h
}

// Progress is one progress report of a running call, as MCP's notifications/progress
// carries it: Progress increases, Total is 0 when unknown.
type Progress struct {
	Progress, Total float64
	Message         string
}

type progressKey struct{}

// WithProgress returns a copy of ctx whose tool calls report their progress to fn (MCP
// sources that send notifications/progress; other sources report none). fn is called from
// the source's connection and must not block. A cacheable call shared by several callers
// reports to the first one's fn.
func WithProgress(ctx context.Context, fn func(Progress)) context.Context {
	return context.WithValue(ctx, progressKey{}, fn)
}

func progressFrom(ctx context.Context) func(Progress) {
	fn, _ := ctx.Value(progressKey{}).(func(Progress))
	return fn
}

// progressRoutes hands the progress notifications of one MCP client to the calls that
// asked for them, by progress token. The zero value is ready.
type progressRoutes struct {
	mu     sync.Mutex
	next   uint64
	routes map[string]func(Progress)
}

// add registers fn and returns the token to send and the function that removes it.
func (p *progressRoutes) add(fn func(Progress)) (string, func()) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.routes == nil {
		p.routes = make(map[string]func(Progress))
	}
	p.next++
	token := "agate-" + strconv.FormatUint(p.next, 10)
	p.routes[token] = fn
	return token, func() {
		p.mu.Lock()
		delete(p.routes, token)
		p.mu.Unlock()
	}
}

// deliver passes one notification to the call that owns its token, if still running.
func (p *progressRoutes) deliver(n *mcp.ProgressNotificationParams) {
	token, ok := n.ProgressToken.(string)
	if !ok {
		return
	}
	p.mu.Lock()
	fn := p.routes[token]
	p.mu.Unlock()
	if fn != nil {
		fn(Progress{Progress: n.Progress, Total: n.Total, Message: redact.Mask(n.Message)})
	}
}

// Via values: the path a tool call came by, a label of gateway_tool_calls_total.
const (
	ViaLoop = "loop" // the server-side tool loop (the default)
	ViaMCP  = "mcp"  // the gateway's MCP endpoint
)

type viaKey struct{}

// WithVia returns a copy of ctx whose tool calls are reported as made by via (ViaLoop or
// ViaMCP) to an Observer that is a [ViaObserver].
func WithVia(ctx context.Context, via string) context.Context {
	return context.WithValue(ctx, viaKey{}, via)
}

// ViaFrom returns the via of ctx (see [WithVia]), ViaLoop when it names none.
func ViaFrom(ctx context.Context) string {
	if v, _ := ctx.Value(viaKey{}).(string); v != "" {
		return v
	}
	return ViaLoop
}

// ViaObserver is an Observer that also tells calls apart by the path they came by: when
// the Registry's Observer implements it, ToolCallVia is called instead of ToolCall.
type ViaObserver interface {
	Observer
	// ToolCallVia is ToolCall with the call's via (ViaLoop or ViaMCP).
	ToolCallVia(via, tool, outcome string, d time.Duration)
}

// reportCall tells the Observer about one finished call.
func (r *Registry) reportCall(ctx context.Context, tool, outcome string, d time.Duration) {
	if vo, ok := r.obs.(ViaObserver); ok {
		vo.ToolCallVia(ViaFrom(ctx), tool, outcome, d)
		return
	}
	r.obs.ToolCall(tool, outcome, d)
}

// ErrNoSuchSource is wrapped by the passthrough methods' errors for a name that is no
// running MCP source.
var ErrNoSuchSource = errors.New("no such MCP source")

// MCPSources returns, sorted, the MCP sources that names (a key's tool list) grants whole:
// entries naming a source, not one tool of it ("source/tool"). Their resources and prompts
// are the key's.
func (r *Registry) MCPSources(names []string) []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	var out []string
	for _, n := range names {
		if strings.Contains(n, "/") {
			continue
		}
		if ent, ok := r.sources[n]; ok && ent.cfg.Type == SourceMCP && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

// session returns the live session of MCP source name, waiting as a call does for one
// that is reconnecting.
func (r *Registry) session(ctx context.Context, name string) (*mcp.ClientSession, *mcpSource, error) {
	r.mu.RLock()
	ent, ok := r.sources[name]
	closed := r.closed
	r.mu.RUnlock()
	if closed {
		return nil, nil, errSourceClosed
	}
	src, isMCP := (source)(nil), false
	if ok {
		src = ent.src
		_, isMCP = src.(*mcpSource)
	}
	if !isMCP {
		return nil, nil, fmt.Errorf("%w %q", ErrNoSuchSource, name)
	}
	s := src.(*mcpSource)
	cs, err := s.liveSession(ctx)
	if err != nil {
		return nil, nil, redactError(err)
	}
	return cs, s, nil
}

// maxListed bounds what one source's list of resources, templates or prompts may hold.
const maxListed = 10000

// collect gathers at most maxListed items of a paginated list.
func collect[T any](seq func(yield func(T, error) bool)) ([]T, error) {
	var out []T
	for item, err := range seq {
		if err != nil {
			return nil, redactError(err)
		}
		if len(out) == maxListed {
			return out, nil
		}
		out = append(out, item)
	}
	return out, nil
}

// Resources lists the resources of MCP source name; none when its server offers none.
func (r *Registry) Resources(ctx context.Context, name string) ([]*mcp.Resource, error) {
	cs, _, err := r.session(ctx, name)
	if err != nil || !offers(cs, func(c *mcp.ServerCapabilities) bool { return c.Resources != nil }) {
		return nil, err
	}
	return collect(cs.Resources(ctx, nil))
}

// ResourceTemplates lists the resource templates of MCP source name.
func (r *Registry) ResourceTemplates(ctx context.Context, name string) ([]*mcp.ResourceTemplate, error) {
	cs, _, err := r.session(ctx, name)
	if err != nil || !offers(cs, func(c *mcp.ServerCapabilities) bool { return c.Resources != nil }) {
		return nil, err
	}
	return collect(cs.ResourceTemplates(ctx, nil))
}

// ReadResource reads uri from MCP source name. Unless the source sets mask_results:
// false, text contents have their credential-like tokens masked, as call results do.
func (r *Registry) ReadResource(ctx context.Context, name, uri string) (*mcp.ReadResourceResult, error) {
	cs, s, err := r.session(ctx, name)
	if err != nil {
		return nil, err
	}
	res, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
	if err != nil {
		return nil, redactError(err)
	}
	if s.masks() {
		for _, c := range res.Contents {
			if c != nil {
				c.Text = redact.Mask(c.Text)
			}
		}
	}
	return res, nil
}

// Prompts lists the prompts of MCP source name; none when its server offers none.
func (r *Registry) Prompts(ctx context.Context, name string) ([]*mcp.Prompt, error) {
	cs, _, err := r.session(ctx, name)
	if err != nil || !offers(cs, func(c *mcp.ServerCapabilities) bool { return c.Prompts != nil }) {
		return nil, err
	}
	return collect(cs.Prompts(ctx, nil))
}

// GetPrompt gets prompt (its own name in the source) from MCP source name, with text
// masked as ReadResource masks it.
func (r *Registry) GetPrompt(ctx context.Context, name, prompt string, args map[string]string) (*mcp.GetPromptResult, error) {
	cs, s, err := r.session(ctx, name)
	if err != nil {
		return nil, err
	}
	res, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: prompt, Arguments: args})
	if err != nil {
		return nil, redactError(err)
	}
	if s.masks() {
		for _, m := range res.Messages {
			switch c := m.Content.(type) {
			case *mcp.TextContent:
				c.Text = redact.Mask(c.Text)
			case *mcp.EmbeddedResource:
				if c.Resource != nil {
					c.Resource.Text = redact.Mask(c.Resource.Text)
				}
			}
		}
	}
	return res, nil
}

// ModelName is the model-facing name of item (a tool, a prompt, a resource's name) of
// source: "<source>__<item>", shortened as tool names are.
func ModelName(source, item string) string { return modelName(source, item) }

func offers(cs *mcp.ClientSession, has func(*mcp.ServerCapabilities) bool) bool {
	ir := cs.InitializeResult()
	return ir != nil && ir.Capabilities != nil && has(ir.Capabilities)
}
