package proxy

import (
	"github.com/agate-gateway/agate/balance"
	"github.com/agate-gateway/agate/config"
	"github.com/agate-gateway/agate/limits"
	"github.com/agate-gateway/agate/telemetry"
	"github.com/agate-gateway/agate/tools"
)

// This file is where configuration reaches the packages built around the server: tools,
// telemetry and limits take options structs of their own and import no config, and these
// functions map a loaded config's sections to them, field by field, defaults included (the
// packages' own defaults are the numbers config documents). cmd/gateway builds the tool
// registry, the tracer and the limiter with them; New opens a limiter with LimiterOptions
// when it is given none. The tool loop needs no mapping: a key's bounds are copied into each
// loop.Loop (apiKey).

// ToolSources returns the tool registry's sources for the tools section.
func ToolSources(sources map[string]config.ToolSource) map[string]tools.SourceOptions {
	out := make(map[string]tools.SourceOptions, len(sources))
	for name, s := range sources {
		var overrides map[string]tools.Override
		if s.Overrides != nil {
			overrides = make(map[string]tools.Override, len(s.Overrides))
			for tool, ov := range s.Overrides {
				overrides[tool] = tools.Override{Timeout: ov.Timeout, Cache: ov.Cache, MaxResultBytes: ov.MaxResultBytes}
			}
		}
		out[name] = tools.SourceOptions{
			Type:           s.Type,
			Command:        s.Command,
			Env:            s.Env,
			EnvPassthrough: s.EnvPassthrough,
			URL:            s.URL,
			Headers:        s.Headers,
			Description:    s.Description,
			Parameters:     s.Parameters,
			Name:           s.Name,
			ReadOnly:       s.ReadOnly,
			Timeout:        s.Timeout,
			Cache:          s.Cache,
			MaxResultBytes: s.MaxResultBytes,
			MaskResults:    s.MaskResults,
			Required:       s.Required,
			Overrides:      overrides,
		}
	}
	return out
}

// ToolCache returns the tool registry's cache options for the cache section. Only scope
// global shares entries between keys; key (or "") keeps them apart.
func ToolCache(c config.Cache) tools.CacheOptions {
	return tools.CacheOptions{MaxEntries: c.MaxEntries, TTL: c.TTL, Shared: c.Scope == "global"}
}

// TelemetryOptions returns the tracer's options for the telemetry section.
func TelemetryOptions(t config.Telemetry) telemetry.Options {
	return telemetry.Options{Traces: t.Traces, CaptureContent: t.CaptureContent}
}

// LimiterOptions returns the limiter's options for the state section (on_error and
// reserve_output_tokens are the server's, not the limiter's).
func LimiterOptions(st config.State) limits.Options {
	return limits.Options{Store: st.Type, URL: st.URL, KeyPrefix: st.KeyPrefix, Timeout: st.Timeout}
}

// DeploymentSpecs returns package balance's specs of a model's deployments; a price is
// its input plus output USD per million tokens (balance cost).
func DeploymentSpecs(ds []config.Deployment) []balance.Spec {
	specs := make([]balance.Spec, len(ds))
	for i, d := range ds {
		specs[i] = balance.Spec{Name: d.Name(), Weight: d.Weight, Priority: d.Priority, MaxConns: d.MaxConns,
			RequestsPerMinute: int64(d.Limits.RequestsPerMinute), TokensPerMinute: int64(d.Limits.TokensPerMinute)}
		if d.Price != nil {
			specs[i].Price, specs[i].Priced = d.Price.Input+d.Price.Output, true
		}
	}
	return specs
}
