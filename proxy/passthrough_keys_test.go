package proxy

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// restrictedPassthroughConfig has a key allowed only the cheap-* models, all on one
// OpenAI-compatible upstream.
const restrictedPassthroughConfig = `
backends:
  up:
    type: openai
    base_url: "{{UP}}"
    api_key: upstream-secret
    retries: {max: 0}
models:
  cheap-a: {backend: up, upstream_model: cheap-upstream}
  gpt-4o: {backend: up, upstream_model: gpt-4o}
keys:
  restricted: {key: sk-restricted, models: ["cheap-*"]}
`

// TestPassthrough_AmbiguousKeysNeverForwarded: a body whose model or stream options read
// differently to different JSON decoders is a 400 naming the key, and nothing reaches the
// upstream; a plain body reaches it exactly as authorized, read the same way by a Go
// (case-insensitive, last-wins) decoder.
func TestPassthrough_AmbiguousKeysNeverForwarded(t *testing.T) {
	t.Parallel() // nothing shared, no clock or environment of the process (#54)
	const msgs = `"messages":[{"role":"user","content":"hi"}]`
	tests := []struct {
		name string
		body string
		want errorView
	}{
		{name: "model in upper case", body: `{"model":"cheap-a","MODEL":"gpt-4o",` + msgs + `}`,
			want: errorView{Status: 400, Type: "invalid_request_error", Param: "MODEL", Code: "key_case_mismatch"}},
		{name: "model twice", body: `{"model":"gpt-4o","model":"cheap-a",` + msgs + `}`,
			want: errorView{Status: 400, Type: "invalid_request_error", Param: "model", Code: "duplicate_key"}},
		{name: "stream_options twice", body: `{"model":"cheap-a","stream":true,"stream_options":{"include_usage":true},"stream_options":{"include_usage":false},` + msgs + `}`,
			want: errorView{Status: 400, Type: "invalid_request_error", Param: "stream_options", Code: "duplicate_key"}},
		{name: "include_usage in upper case", body: `{"model":"cheap-a","stream":true,"stream_options":{"include_usage":true,"INCLUDE_USAGE":false},` + msgs + `}`,
			want: errorView{Status: 400, Type: "invalid_request_error", Param: "stream_options.INCLUDE_USAGE", Code: "key_case_mismatch"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			up := newUpstream(t, replayJSON(200, fixture(t, "json/text.mirascope.json")))
			g := startGateway(t, restrictedPassthroughConfig, map[string]string{"UP": up.v1()})
			got := decodeError(t, g.chat("sk-restricted", tt.body))
			got.Message = ""
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("error (-want +got):\n%s", diff)
			}
			if n := len(up.calls()); n != 0 {
				t.Errorf("upstream saw %d requests, want none: %s", n, up.calls()[0].Body)
			}
		})
	}

	t.Run("plain body forwarded as authorized", func(t *testing.T) {
		up := newUpstream(t, replaySSE(fixture(t, "stream/text-include-usage.mirascope.sse")))
		g := startGateway(t, restrictedPassthroughConfig, map[string]string{"UP": up.v1()})
		r := g.chat("sk-restricted", `{"model":"cheap-a","stream":true,"stream_options":{"include_usage":false},`+msgs+`}`)
		if r.status != 200 {
			t.Fatalf("status %d: %s", r.status, r.body)
		}
		calls := up.calls()
		if len(calls) != 1 {
			t.Fatalf("upstream saw %d requests, want 1", len(calls))
		}
		type streamOptions struct {
			IncludeUsage bool `json:"include_usage"`
		}
		type goView struct { // what a Go upstream decodes
			Model         string         `json:"model"`
			Stream        bool           `json:"stream"`
			StreamOptions *streamOptions `json:"stream_options"`
		}
		var got goView
		if err := json.Unmarshal(calls[0].Body, &got); err != nil {
			t.Fatal(err)
		}
		want := goView{Model: "cheap-upstream", Stream: true, StreamOptions: &streamOptions{IncludeUsage: true}}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("upstream request (-want +got):\n%s", diff)
		}
	})
}

// TestPassthrough_InvalidUTF8NeverForwarded: a body that is not UTF-8 is a 400 and never
// reaches the upstream (it used to be forwarded and answered 200).
func TestPassthrough_InvalidUTF8NeverForwarded(t *testing.T) {
	t.Parallel() // nothing shared, no clock or environment of the process (#54)
	for _, tt := range []struct {
		name string
		body string
	}{
		{name: "in a message", body: "{\"model\":\"cheap-a\",\"messages\":[{\"role\":\"user\",\"content\":\"caf\xe9\"}]}"},
		{name: "in an unknown field", body: "{\"model\":\"cheap-a\",\"user_tag\":\"\xff\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			up := newUpstream(t, replayJSON(200, fixture(t, "json/text.mirascope.json")))
			g := startGateway(t, restrictedPassthroughConfig, map[string]string{"UP": up.v1()})
			got := decodeError(t, g.chat("sk-restricted", tt.body))
			got.Message = ""
			want := errorView{Status: 400, Type: "invalid_request_error", Code: "invalid_utf8"}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("error (-want +got):\n%s", diff)
			}
			if n := len(up.calls()); n != 0 {
				t.Errorf("upstream saw %d requests, want none", n)
			}
		})
	}
}
