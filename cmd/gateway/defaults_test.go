package main

import (
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agate-gateway/agate/config"
	"github.com/agate-gateway/agate/limits"
	"github.com/agate-gateway/agate/loop"
	"github.com/agate-gateway/agate/proxy"
	"github.com/agate-gateway/agate/telemetry"
	"github.com/agate-gateway/agate/tools"
)

// TestDefaults_ConfigAgreesWithPackages: loop, tools, telemetry and limits own their
// defaults and read no config; what config fills in for a field left unset is the same
// number, so a loaded config mapped to the packages' options behaves as the packages do
// with the field left zero.
func TestDefaults_ConfigAgreesWithPackages(t *testing.T) {
	cfg, err := config.Parse([]byte(`
backends: {offline: {type: mock}}
models: {demo: {backend: offline}}
keys: {alice: {key: sk-alice, models: ["*"], tools: [clock]}}
tools: {clock: {type: builtin, name: time_now}}
`), os.Environ())
	if err != nil {
		t.Fatal(err)
	}
	key, tool := cfg.Keys["alice"], cfg.Tools["clock"]
	tests := []struct {
		name      string
		config    any
		pkg       any
		pkgSymbol string
	}{
		{"keys.*.max_tool_iterations", key.MaxToolIterations, loop.DefaultMaxIterations, "loop.DefaultMaxIterations"},
		{"keys.*.max_tool_calls_per_turn", key.MaxToolCallsPerTurn, loop.DefaultMaxCallsPerTurn, "loop.DefaultMaxCallsPerTurn"},
		{"keys.*.max_concurrent_tool_calls", key.MaxConcurrentToolCalls, loop.DefaultMaxConcurrentCalls, "loop.DefaultMaxConcurrentCalls"},
		{"tools.*.timeout", tool.Timeout, tools.DefaultTimeout, "tools.DefaultTimeout"},
		{"tools.*.max_result_bytes", tool.MaxResultBytes, tools.DefaultMaxResultBytes, "tools.DefaultMaxResultBytes"},
		{"cache.max_entries", cfg.Cache.MaxEntries, tools.DefaultCacheMaxEntries, "tools.DefaultCacheMaxEntries"},
		{"cache.ttl", cfg.Cache.TTL, tools.DefaultCacheTTL, "tools.DefaultCacheTTL"},
		{"cache.scope (not shared)", proxy.ToolCache(cfg.Cache), tools.CacheOptions{MaxEntries: tools.DefaultCacheMaxEntries, TTL: tools.DefaultCacheTTL}, "tools.CacheOptions{}"},
		{"state.type", proxy.LimiterOptions(cfg.State).Store, limits.StoreMemory, "limits.StoreMemory"},
		{"state.timeout", cfg.State.Timeout, limits.DefaultTimeout, "limits.DefaultTimeout"},
		{"telemetry", proxy.TelemetryOptions(cfg.Telemetry), telemetry.Options{}, "telemetry.Options{}"},
		// The exported copies config keeps for its callers (proxy's anonymous key).
		{"config.DefaultMaxToolIterations", config.DefaultMaxToolIterations, loop.DefaultMaxIterations, "loop.DefaultMaxIterations"},
		{"config.DefaultMaxToolCallsPerTurn", config.DefaultMaxToolCallsPerTurn, loop.DefaultMaxCallsPerTurn, "loop.DefaultMaxCallsPerTurn"},
		{"config.DefaultMaxConcurrentToolCalls", config.DefaultMaxConcurrentToolCalls, loop.DefaultMaxConcurrentCalls, "loop.DefaultMaxConcurrentCalls"},
		{"config.DefaultToolTimeout", config.DefaultToolTimeout, tools.DefaultTimeout, "tools.DefaultTimeout"},
		{"config.DefaultMaxResultBytes", config.DefaultMaxResultBytes, tools.DefaultMaxResultBytes, "tools.DefaultMaxResultBytes"},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.pkg, tt.config); diff != "" {
			t.Errorf("%s: config's default differs from %s (-package +config):\n%s", tt.name, tt.pkgSymbol, diff)
		}
	}
}
