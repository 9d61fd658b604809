package proxy

import (
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agate-gateway/agate/config"
	"github.com/agate-gateway/agate/limits"
	"github.com/agate-gateway/agate/telemetry"
	"github.com/agate-gateway/agate/tools"
)

// TestOptions_SameFields: each options struct a config section maps to has the section's
// fields, by name (a field added to config must be mapped, or named here as not the
// package's).
func TestOptions_SameFields(t *testing.T) {
	tests := []struct {
		name          string
		config, opts  any
		notThePackage []string // config fields the mapped package does not take
		renamed       map[string]string
	}{
		{name: "tool source", config: config.ToolSource{}, opts: tools.SourceOptions{}},
		{name: "tool override", config: config.ToolOverride{}, opts: tools.Override{}},
		{name: "cache", config: config.Cache{}, opts: tools.CacheOptions{}, renamed: map[string]string{"Scope": "Shared"}},
		{name: "telemetry", config: config.Telemetry{}, opts: telemetry.Options{}},
		{name: "state", config: config.State{}, opts: limits.Options{},
			notThePackage: []string{"OnError", "ReserveOutputTokens"}, renamed: map[string]string{"Type": "Store"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var want []string
			ct := reflect.TypeOf(tt.config)
			for i := range ct.NumField() {
				n := ct.Field(i).Name
				if r, ok := tt.renamed[n]; ok {
					n = r
				}
				if !slices.Contains(tt.notThePackage, n) {
					want = append(want, n)
				}
			}
			var got []string
			ot := reflect.TypeOf(tt.opts)
			for i := range ot.NumField() {
				got = append(got, ot.Field(i).Name)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("fields (-config +options):\n%s", diff)
			}
		})
	}
}

// TestOptions_Mapping: every field of a section reaches the package's options unchanged.
func TestOptions_Mapping(t *testing.T) {
	yes, no := true, false
	src := config.ToolSource{
		Type: "mcp", Command: []string{"srv", "-x"}, Env: map[string]string{"A": "1"}, EnvPassthrough: []string{"B"},
		URL: "http://127.0.0.1:1/mcp", Headers: map[string]string{"H": "v"}, Description: "d",
		Parameters: map[string]any{"type": "object"}, Name: "n", ReadOnly: true, Timeout: 3 * time.Second,
		Cache: &yes, MaxResultBytes: 7, MaskResults: &no, Required: true,
		Overrides: map[string]config.ToolOverride{"t": {Timeout: time.Second, Cache: &no, MaxResultBytes: 9}},
	}
	want := map[string]tools.SourceOptions{
		"s": {
			Type: "mcp", Command: []string{"srv", "-x"}, Env: map[string]string{"A": "1"}, EnvPassthrough: []string{"B"},
			URL: "http://127.0.0.1:1/mcp", Headers: map[string]string{"H": "v"}, Description: "d",
			Parameters: map[string]any{"type": "object"}, Name: "n", ReadOnly: true, Timeout: 3 * time.Second,
			Cache: &yes, MaxResultBytes: 7, MaskResults: &no, Required: true,
			Overrides: map[string]tools.Override{"t": {Timeout: time.Second, Cache: &no, MaxResultBytes: 9}},
		},
		"plain": {Type: "builtin", Name: "time_now"},
	}
	got := ToolSources(map[string]config.ToolSource{"s": src, "plain": {Type: "builtin", Name: "time_now"}})
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ToolSources (-want +got):\n%s", diff)
	}

	caches := []struct {
		in   config.Cache
		want tools.CacheOptions
	}{
		{in: config.Cache{}, want: tools.CacheOptions{}},
		{in: config.Cache{MaxEntries: 5, TTL: time.Minute, Scope: "key"}, want: tools.CacheOptions{MaxEntries: 5, TTL: time.Minute}},
		{in: config.Cache{Scope: "global"}, want: tools.CacheOptions{Shared: true}},
	}
	for _, c := range caches {
		if diff := cmp.Diff(c.want, ToolCache(c.in)); diff != "" {
			t.Errorf("ToolCache(%+v) (-want +got):\n%s", c.in, diff)
		}
	}

	if got, want := TelemetryOptions(config.Telemetry{Traces: true, CaptureContent: true}), (telemetry.Options{Traces: true, CaptureContent: true}); got != want {
		t.Errorf("TelemetryOptions = %+v, want %+v", got, want)
	}
	st := config.State{Type: "redis", URL: "redis://127.0.0.1:1/0", KeyPrefix: "p:", Timeout: time.Second, OnError: "deny", ReserveOutputTokens: 1}
	if got, want := LimiterOptions(st), (limits.Options{Store: limits.StoreRedis, URL: st.URL, KeyPrefix: "p:", Timeout: time.Second}); got != want {
		t.Errorf("LimiterOptions = %+v, want %+v", got, want)
	}
}
