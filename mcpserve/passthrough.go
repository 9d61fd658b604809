package mcpserve

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agate-gateway/agate/tools"
)

// The resources and prompts of the MCP sources a key's tool list names whole, passed
// through. A source that cannot list (its server is down) is left out of a list and
// logged; the others are listed.

func (h *Handler) listResources(ctx context.Context, key *Key) (*mcp.ListResourcesResult, error) {
	rs := gather(ctx, h, key, "resources", h.reg.Resources, func(r *mcp.Resource) *string { return &r.Name })
	return &mcp.ListResourcesResult{Resources: rs}, nil
}

func (h *Handler) listResourceTemplates(ctx context.Context, key *Key) (*mcp.ListResourceTemplatesResult, error) {
	ts := gather(ctx, h, key, "resource templates", h.reg.ResourceTemplates, func(t *mcp.ResourceTemplate) *string { return &t.Name })
	return &mcp.ListResourceTemplatesResult{ResourceTemplates: ts}, nil
}

// gather lists what list gives for each MCP source the key's list names whole: copies,
// their name (the field name points to) made "<source>__<name>"; a source that cannot
// list is left out and logged.
func gather[T any](ctx context.Context, h *Handler, key *Key, what string, list func(context.Context, string) ([]*T, error), name func(*T) *string) []*T {
	out := []*T{}
	for _, src := range h.reg.MCPSources(key.Tools) {
		items, err := list(ctx, src)
		if err != nil {
			h.logger.Warn("mcp endpoint: listing "+what+" of a tool source failed", "tool_source", src, "error", err)
			continue
		}
		for _, it := range items {
			c := *it
			*name(&c) = tools.ModelName(src, *name(it))
			out = append(out, &c)
		}
	}
	return out
}

// readResource reads uri from the key's source that lists it, else from the first of the
// key's sources that can read it (a URI of a template).
func (h *Handler) readResource(ctx context.Context, key *Key, p *mcp.ReadResourceParams) (*mcp.ReadResourceResult, error) {
	if p == nil || p.URI == "" {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "resources/read needs params.uri"}
	}
	sources := h.reg.MCPSources(key.Tools)
	for _, src := range sources {
		rs, err := h.reg.Resources(ctx, src)
		if err == nil && slices.ContainsFunc(rs, func(r *mcp.Resource) bool { return r.URI == p.URI }) {
			res, err := h.reg.ReadResource(ctx, src, p.URI)
			if err != nil {
				return nil, sourceError("resources/read", src, err)
			}
			return res, nil
		}
	}
	for _, src := range sources {
		if res, err := h.reg.ReadResource(ctx, src, p.URI); err == nil {
			return res, nil
		}
	}
	return nil, mcp.ResourceNotFoundError(p.URI)
}

func (h *Handler) listPrompts(ctx context.Context, key *Key) (*mcp.ListPromptsResult, error) {
	ps := gather(ctx, h, key, "prompts", h.reg.Prompts, func(p *mcp.Prompt) *string { return &p.Name })
	return &mcp.ListPromptsResult{Prompts: ps}, nil
}

// getPrompt finds the key's source whose prompt has the model-facing name p.Name.
func (h *Handler) getPrompt(ctx context.Context, key *Key, p *mcp.GetPromptParams) (*mcp.GetPromptResult, error) {
	if p == nil || p.Name == "" {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "prompts/get needs params.name"}
	}
	for _, src := range h.reg.MCPSources(key.Tools) {
		if !strings.HasPrefix(p.Name, shortPrefix(src)) {
			continue
		}
		ps, err := h.reg.Prompts(ctx, src)
		if err != nil {
			return nil, sourceError("prompts/list", src, err)
		}
		for _, pr := range ps {
			if tools.ModelName(src, pr.Name) == p.Name {
				res, err := h.reg.GetPrompt(ctx, src, pr.Name, p.Arguments)
				if err != nil {
					return nil, sourceError("prompts/get", src, err)
				}
				return res, nil
			}
		}
	}
	name := p.Name
	if len(name) > 128 {
		name = name[:128]
	}
	return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown prompt %q: get one of the prompts prompts/list gives", name)}
}

// shortPrefix is what every model-facing name of source's items starts with: the source's
// name (valid, so kept as it is by the shortening) cut as a shortened name may cut it.
func shortPrefix(source string) string {
	const keep = 64 - 9 // tools' name bound minus the hash suffix
	if len(source) > keep {
		return source[:keep]
	}
	return source
}
