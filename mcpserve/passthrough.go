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
	out := &mcp.ListResourcesResult{Resources: []*mcp.Resource{}}
	for _, src := range h.reg.MCPSources(key.Tools) {
		rs, err := h.reg.Resources(ctx, src)
		if err != nil {
			h.logger.Warn("mcp endpoint: listing resources of a tool source failed", "tool_source", src, "error", err)
			continue
		}
		for _, r := range rs {
			c := *r
			c.Name = tools.ModelName(src, r.Name)
			out.Resources = append(out.Resources, &c)
		}
	}
	return out, nil
}

func (h *Handler) listResourceTemplates(ctx context.Context, key *Key) (*mcp.ListResourceTemplatesResult, error) {
	out := &mcp.ListResourceTemplatesResult{ResourceTemplates: []*mcp.ResourceTemplate{}}
	for _, src := range h.reg.MCPSources(key.Tools) {
		ts, err := h.reg.ResourceTemplates(ctx, src)
		if err != nil {
			h.logger.Warn("mcp endpoint: listing resource templates of a tool source failed", "tool_source", src, "error", err)
			continue
		}
		for _, t := range ts {
			c := *t
			c.Name = tools.ModelName(src, t.Name)
			out.ResourceTemplates = append(out.ResourceTemplates, &c)
		}
	}
	return out, nil
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
	out := &mcp.ListPromptsResult{Prompts: []*mcp.Prompt{}}
	for _, src := range h.reg.MCPSources(key.Tools) {
		ps, err := h.reg.Prompts(ctx, src)
		if err != nil {
			h.logger.Warn("mcp endpoint: listing prompts of a tool source failed", "tool_source", src, "error", err)
			continue
		}
		for _, p := range ps {
			c := *p
			c.Name = tools.ModelName(src, p.Name)
			out.Prompts = append(out.Prompts, &c)
		}
	}
	return out, nil
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
