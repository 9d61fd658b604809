package tools

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestServe_RegistryForTheEndpoint(t *testing.T) {
	ms := newTestMCPServer()
	srv := ms.httptest(t)
	r := newTestRegistry(t, map[string]SourceOptions{
		"srv":   {Type: "mcp", URL: srv.URL},
		"clock": {Type: "builtin", Name: "time_now"},
		"hook":  {Type: "http", URL: "http://127.0.0.1:1/hook", ReadOnly: true},
	}, nil)

	t.Run("MCPSources names the whole MCP sources of a key's list, sorted", func(t *testing.T) {
		tests := []struct {
			names []string
			want  []string
		}{
			{names: []string{"srv", "clock"}, want: []string{"srv"}},
			{names: []string{"srv/lookup"}, want: nil},
			{names: []string{"hook", "srv", "srv"}, want: []string{"srv"}},
			{names: []string{"nope"}, want: nil},
		}
		for _, tt := range tests {
			if got := r.MCPSources(tt.names); !slices.Equal(got, tt.want) {
				t.Errorf("MCPSources(%v) = %v, want %v", tt.names, got, tt.want)
			}
		}
	})

	t.Run("Hints", func(t *testing.T) {
		tests := []struct {
			name string
			want Hints
			ok   bool
		}{
			{name: "srv__lookup", want: Hints{ReadOnly: true}, ok: true},
			{name: "srv__fail", want: Hints{}, ok: true},
			{name: "hook", want: Hints{ReadOnly: true}, ok: true},
			{name: "nope"},
		}
		for _, tt := range tests {
			got, ok := r.Hints(tt.name)
			if ok != tt.ok || got.ReadOnly != tt.want.ReadOnly || got.Destructive != nil || got.OpenWorld != nil {
				t.Errorf("Hints(%s) = %+v %v, want %+v %v", tt.name, got, ok, tt.want, tt.ok)
			}
		}
	})

	t.Run("a source that is no MCP source has no resources or prompts", func(t *testing.T) {
		if _, err := r.Resources(context.Background(), "clock"); err == nil {
			t.Error("Resources of a builtin source: no error")
		}
		if _, err := r.GetPrompt(context.Background(), "nope", "p", nil); err == nil {
			t.Error("GetPrompt of an unknown source: no error")
		}
		// The test server offers no prompts: none, no error.
		if ps, err := r.Prompts(context.Background(), "srv"); err != nil || len(ps) != 0 {
			t.Errorf("Prompts of a server without: %v %v", ps, err)
		}
	})
}

func TestViaObserver(t *testing.T) {
	obs := &viaRecorder{}
	r := newTestRegistry(t, map[string]SourceOptions{"clock": {Type: "builtin", Name: "time_now"}}, obs)
	r.Call(context.Background(), "clock", nil)
	r.Call(WithVia(context.Background(), ViaMCP), "clock", nil)
	r.Call(WithVia(context.Background(), ViaMCP), "nope", nil)
	want := []string{"loop clock ok", "mcp clock ok", "mcp (unknown) unknown"}
	if !slices.Equal(obs.calls, want) {
		t.Errorf("calls %q, want %q", obs.calls, want)
	}
}

type viaRecorder struct {
	nopObserver
	calls []string
}

func (v *viaRecorder) ToolCallVia(via, tool, outcome string, _ time.Duration) {
	v.calls = append(v.calls, via+" "+tool+" "+outcome)
}

func TestProgressRoutes(t *testing.T) {
	var p progressRoutes
	var got []Progress
	token, done := p.add(func(pr Progress) { got = append(got, pr) })
	other, doneOther := p.add(func(Progress) { t.Error("another call's route got a report") })
	defer doneOther()
	if token == other {
		t.Fatalf("two calls share the token %q", token)
	}
	p.deliver(&mcp.ProgressNotificationParams{ProgressToken: token, Progress: 1, Total: 2, Message: "key sk-ant-api03-aaaaBBBB1111"})
	p.deliver(&mcp.ProgressNotificationParams{ProgressToken: 7, Progress: 9})           // not a token of ours
	p.deliver(&mcp.ProgressNotificationParams{ProgressToken: "agate-999", Progress: 9}) // no such call
	done()
	p.deliver(&mcp.ProgressNotificationParams{ProgressToken: token, Progress: 2}) // after the call
	want := []Progress{{Progress: 1, Total: 2, Message: "key sk-***"}}
	if !slices.Equal(got, want) {
		t.Errorf("reports %+v, want %+v", got, want)
	}
}
