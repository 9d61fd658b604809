package translate_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/tidwall/gjson"

	"github.com/agate-gateway/agate/translate"
	"github.com/agate-gateway/agate/translate/anthropic"
	"github.com/agate-gateway/agate/translate/gemini"
	"github.com/agate-gateway/agate/translate/internal/spectest"
	"github.com/agate-gateway/agate/translate/messagesin"
	"github.com/agate-gateway/agate/translate/openaichat"
	"github.com/agate-gateway/agate/translate/responses"
	"github.com/agate-gateway/agate/translate/responsesin"
)

// TestToolWithoutSchema_EveryClientEveryUpstream pins what a function tool declared
// without a schema becomes upstream, from every client API (chat without parameters, as
// the recorded pelican_name_generator tool; Responses without parameters or with null;
// Messages without input_schema) to every translated upstream, each body valid by its
// published spec: Anthropic requires input_schema and gets {"type":"object",
// "properties":{}}, as the recorded llm-anthropic request sends it; the Responses API's
// function tool gets the same; Gemini's FunctionDeclaration goes without
// parametersJsonSchema, which it does not require.
func TestToolWithoutSchema_EveryClientEveryUpstream(t *testing.T) {
	clients := []struct {
		name string
		body string
		req  func(t *testing.T, body string) *translate.Request
	}{
		{"chat", `{"model":"m","messages":[{"role":"user","content":"Generate one name for a pet pelican"}],"tools":[{"type":"function","function":{"name":"pelican_name_generator","description":""}}]}`,
			func(t *testing.T, body string) *translate.Request {
				r, err := openaichat.ParseRequest([]byte(body))
				if err != nil {
					t.Fatal(err)
				}
				return r
			}},
		{"responses", `{"model":"m","input":"Generate one name for a pet pelican","tools":[{"type":"function","name":"pelican_name_generator"}]}`, responsesCore},
		{"responses, parameters null", `{"model":"m","input":"Generate one name for a pet pelican","tools":[{"type":"function","name":"pelican_name_generator","parameters":null}]}`, responsesCore},
		{"messages", `{"model":"m","max_tokens":100,"messages":[{"role":"user","content":"Generate one name for a pet pelican"}],"tools":[{"name":"pelican_name_generator"}]}`,
			func(t *testing.T, body string) *translate.Request {
				r, err := messagesin.Parse([]byte(body))
				if err != nil {
					t.Fatal(err)
				}
				return r
			}},
	}
	upstreams := []struct {
		name     string
		provider translate.Provider
		validate func([]byte) error
		path     string // the tool's schema in the upstream body
		want     string // its JSON; "" for none
	}{
		{"anthropic", anthropic.New(), spectest.AnthropicRequest(t), "tools.0.input_schema", `{"type":"object","properties":{}}`},
		{"responses", responses.New(), spectest.ResponsesRequest(t), "tools.0.parameters", `{"type":"object","properties":{}}`},
		{"gemini", gemini.New(), spectest.GeminiRequest(t), "tools.0.functionDeclarations.0.parametersJsonSchema", ""},
	}
	for _, c := range clients {
		for _, up := range upstreams {
			t.Run(c.name+" to "+up.name, func(t *testing.T) {
				out, err := up.provider.AppendRequest(nil, c.req(t, c.body), &translate.Options{UpstreamModel: "u"})
				if err != nil {
					t.Fatal(err)
				}
				if err := up.validate(out); err != nil {
					t.Errorf("upstream body fails its spec: %v\n%s", err, out)
				}
				if diff := cmp.Diff(up.want, gjson.GetBytes(out, up.path).Raw); diff != "" {
					t.Errorf("%s (-want +got):\n%s\nbody: %s", up.path, diff, out)
				}
			})
		}
	}
	// The check is not vacuous: the Anthropic spec refuses a tool without input_schema.
	if spectest.AnthropicRequest(t)([]byte(`{"model":"u","max_tokens":1,"messages":[{"role":"user","content":"x"}],"tools":[{"name":"f"}]}`)) == nil {
		t.Errorf("the Anthropic spec accepts a tool without input_schema")
	}
}

func responsesCore(t *testing.T, body string) *translate.Request {
	r, err := responsesin.Parse([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	return r.Core
}
