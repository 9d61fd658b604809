package proxy_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agate-gateway/agate/internal/gatewaytest"
	"github.com/agate-gateway/agate/proxy"
)

// TestResponses_UnsupportedOnTranslated: the Responses parameters no translating backend
// serves (background: true, truncation: "auto", logprobs asked by include or
// top_logprobs) get chat's unsupported-parameter policy: a 400 naming the parameter, the
// upstream never called; with drop_unsupported_params the request goes on without them.
// A responses backend gets them as they were sent.
func TestResponses_UnsupportedOnTranslated(t *testing.T) {
	t.Parallel() // nothing shared, no clock or environment of the process (#54)
	strict, dropping, pass := gatewaytest.NewFakeJSON(t, "anthropic"), gatewaytest.NewFakeJSON(t, "anthropic"), gatewaytest.NewFakeJSON(t, "responses")
	y := fmt.Sprintf(`server: {listen: "127.0.0.1:0"}
backends:
  strict: {type: anthropic, base_url: %q, api_key: k, retries: {max: 0}}
  dropping: {type: anthropic, base_url: %q, api_key: k, retries: {max: 0}, drop_unsupported_params: true}
  pass: {type: responses, base_url: %q, api_key: k, retries: {max: 0}}
models:
  strict: {backend: strict, upstream_model: up}
  dropping: {backend: dropping, upstream_model: up}
  pass: {backend: pass, upstream_model: up}
keys:
  alice: {key: alice-key, models: ["*"]}
`, strict.BaseURL(), dropping.BaseURL(), pass.BaseURL())
	url := gatewaytest.StartYAML(t, y, gatewaytest.Options{Runtime: proxy.TestRuntime}).V1()
	tests := []struct {
		name, fields, param string
		upstream            []string // what a responses backend receives
	}{
		{"background", `"background":true`, "background", []string{`"background":true`}},
		{"truncation auto", `"truncation":"auto"`, "truncation", []string{`"truncation":"auto"`}},
		{"logprobs by include", `"include":["reasoning.encrypted_content","message.output_text.logprobs"]`, "include[1]", []string{`"message.output_text.logprobs"`}},
		{"top_logprobs", `"top_logprobs":3`, "top_logprobs", []string{`"top_logprobs":3`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := func(model string) string { return `{"model":"` + model + `","input":"hi",` + tt.fields + `}` }
			for _, f := range []*gatewaytest.Fake{strict, dropping, pass} {
				f.SetScript(gatewaytest.Turn{Text: "ok"})
			}
			r := postJSON(t, url+"/responses", "alice-key", body("strict"))
			want := respError{Status: 400, Type: "invalid_request_error", Param: tt.param, Code: "unsupported_parameter"}
			if diff := cmp.Diff(want, decodeRespError(t, r), cmpErrorView); diff != "" {
				t.Errorf("strict backend (-want +got):\n%s", diff)
			}
			if !strings.Contains(string(r.body), tt.param) {
				t.Errorf("the message does not name %s: %s", tt.param, r.body)
			}
			if b := strict.Bodies(); len(b) != 0 {
				t.Errorf("the strict upstream was called: %v", b)
			}
			if r := postJSON(t, url+"/responses", "alice-key", body("dropping")); r.status != 200 {
				t.Errorf("dropping backend: status %d: %s", r.status, r.body)
			}
			if b := dropping.Bodies(); len(b) != 1 {
				t.Errorf("the dropping upstream got %d requests", len(b))
			}
			if r := postJSON(t, url+"/responses", "alice-key", body("pass")); r.status != 200 {
				t.Errorf("responses backend: status %d: %s", r.status, r.body)
			}
			b := pass.Bodies()
			if len(b) != 1 {
				t.Fatalf("the responses upstream got %d requests", len(b))
			}
			for _, w := range tt.upstream {
				if !strings.Contains(b[0], w) {
					t.Errorf("the responses upstream did not get %s: %s", w, b[0])
				}
			}
		})
	}
}
