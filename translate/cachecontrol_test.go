package translate_test

import (
	"encoding/json"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agate-gateway/agate/translate"
	"github.com/agate-gateway/agate/translate/anthropic"
	"github.com/agate-gateway/agate/translate/gemini"
	"github.com/agate-gateway/agate/translate/internal/spectest"
	"github.com/agate-gateway/agate/translate/messagesin"
)

// cacheControls returns where body holds a cache_control member: the path of each object
// that has one, with the member's compact JSON.
func cacheControls(t *testing.T, body []byte) []string {
	t.Helper()
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		t.Fatalf("upstream body is not JSON: %v\n%s", err, body)
	}
	var out []string
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch v := v.(type) {
		case map[string]any:
			if cc, ok := v["cache_control"]; ok {
				b, _ := json.Marshal(cc)
				out = append(out, path+" "+string(b))
			}
			for k, e := range v {
				walk(path+"."+k, e)
			}
		case []any:
			for i, e := range v {
				walk(path+"."+strconv.Itoa(i), e)
			}
		}
	}
	walk("", v)
	sort.Strings(out)
	return out
}

// cacheRequest is a Messages request with a breakpoint on each kind of block that can
// carry one: a system block, a user text block, an image, a tool_result, an assistant
// text block and a tool.
const cacheRequest = `{"model":"m","max_tokens":100,` +
	`"system":[{"type":"text","text":"You are terse."},{"type":"text","text":"Long instructions.","cache_control":{"type":"ephemeral","ttl":"1h"}}],` +
	`"tools":[{"name":"a","input_schema":{"type":"object"}},{"name":"b","input_schema":{"type":"object"},"cache_control":{"type":"ephemeral"}}],` +
	`"messages":[` +
	`{"role":"user","content":[{"type":"text","text":"Look.","cache_control":{"type":"ephemeral"}},{"type":"image","source":{"type":"url","url":"https://x/y.png"},"cache_control":{"type":"ephemeral"}}]},` +
	`{"role":"assistant","content":[{"type":"text","text":"Calling.","cache_control":{"type":"ephemeral"}},{"type":"tool_use","id":"toolu_1","name":"a","input":{}}]},` +
	`{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":[{"type":"text","text":"one"},{"type":"text","text":"two"}],"cache_control":{"type":"ephemeral"}}]}]}`

// TestCacheControl_MessagesClientToAnthropic pins that an Anthropic Messages client's
// prompt-cache breakpoints reach an Anthropic upstream on the translated path, block for
// block, that they replace the route's automatic ones (the API allows four), and that
// Gemini, which has no per-part breakpoints, gets a valid body without them.
func TestCacheControl_MessagesClientToAnthropic(t *testing.T) {
	validAnthropic, validGemini := spectest.AnthropicRequest(t), spectest.GeminiRequest(t)
	ephemeral := `{"type":"ephemeral"}`
	tests := []struct {
		name     string
		body     string
		provider translate.Provider
		opts     translate.Options
		validate func([]byte) error
		want     []string
	}{
		{
			name: "every block kind", body: cacheRequest, provider: anthropic.New(), validate: validAnthropic,
			want: []string{
				".messages.0.content.0 " + ephemeral,
				".messages.0.content.1 " + ephemeral,
				".messages.1.content.0 " + ephemeral,
				".messages.2.content.0 " + ephemeral,
				`.system.1 {"ttl":"1h","type":"ephemeral"}`,
				".tools.1 " + ephemeral,
			},
		},
		{
			name: "client breakpoints replace automatic ones", body: cacheRequest, provider: anthropic.New(),
			opts: translate.Options{PromptCache: true}, validate: validAnthropic,
			want: []string{
				".messages.0.content.0 " + ephemeral,
				".messages.0.content.1 " + ephemeral,
				".messages.1.content.0 " + ephemeral,
				".messages.2.content.0 " + ephemeral,
				`.system.1 {"ttl":"1h","type":"ephemeral"}`,
				".tools.1 " + ephemeral,
			},
		},
		{
			name:     "without client breakpoints the route places them",
			body:     strings.ReplaceAll(strings.ReplaceAll(cacheRequest, `,"cache_control":{"type":"ephemeral"}`, ""), `,"cache_control":{"type":"ephemeral","ttl":"1h"}`, ""),
			provider: anthropic.New(), opts: translate.Options{PromptCache: true}, validate: validAnthropic,
			want: []string{
				".messages.0.content.1 " + ephemeral,
				".messages.2.content.0 " + ephemeral,
				".system.1 " + ephemeral,
				".tools.1 " + ephemeral,
			},
		},
		{
			name: "gemini drops them", body: cacheRequest, provider: gemini.New(), validate: validGemini,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := messagesin.Parse([]byte(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			tt.opts.UpstreamModel = "m"
			out, err := tt.provider.AppendRequest(nil, req, &tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			if err := tt.validate(out); err != nil {
				t.Errorf("upstream body fails its spec: %v\n%s", err, out)
			}
			if diff := cmp.Diff(tt.want, cacheControls(t, out)); diff != "" {
				t.Errorf("cache_control (-want +got):\n%s\nbody: %s", diff, out)
			}
		})
	}
}

// TestCacheControl_NotAnObject pins that a cache_control the upstream could not read is
// the client's 400, naming the block.
func TestCacheControl_NotAnObject(t *testing.T) {
	tests := []struct {
		name, body, param string
	}{
		{"text block", `{"model":"m","max_tokens":1,"messages":[{"role":"user","content":[{"type":"text","text":"x","cache_control":"ephemeral"}]}]}`, "messages[0].content[0].cache_control"},
		{"system block", `{"model":"m","max_tokens":1,"system":[{"type":"text","text":"x","cache_control":1}],"messages":[{"role":"user","content":"x"}]}`, "system[0].cache_control"},
		{"tool", `{"model":"m","max_tokens":1,"tools":[{"name":"a","input_schema":{"type":"object"},"cache_control":[]}],"messages":[{"role":"user","content":"x"}]}`, "tools[0].cache_control"},
		{"tool_result", `{"model":"m","max_tokens":1,"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":"x","cache_control":true}]}]}`, "messages[0].content[0].cache_control"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := messagesin.Parse([]byte(tt.body))
			pe, ok := err.(*translate.ParamError)
			if !ok {
				t.Fatalf("Parse error = %v, want a *ParamError", err)
			}
			if pe.Param != tt.param {
				t.Errorf("param = %q, want %q", pe.Param, tt.param)
			}
		})
	}
}
