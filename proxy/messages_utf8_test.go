package proxy

import (
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/tidwall/gjson"
)

// TestMessages_InvalidUTF8NeverForwarded: a /v1/messages or count_tokens body that is not
// UTF-8 is a 400 invalid_request_error, and nothing reaches the anthropic upstream, whose
// passthrough would forward the bytes as they came (issue 45 item 6: an overlong
// "mod\xc1\xa5l" key reached the upstream beside model).
func TestMessages_InvalidUTF8NeverForwarded(t *testing.T) {
	t.Parallel() // nothing shared, no clock or environment of the process (#54)
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"input_tokens":3}`))
	})
	g := startGateway(t, `
backends:
  claude: {type: anthropic, base_url: "{{UP}}", api_key: up-secret, retries: {max: 0}}
models:
  m-claude: {backend: claude, upstream_model: claude-x}
keys:
  client: {key: client-key, models: ["*"]}
`, map[string]string{"UP": up.URL})
	for _, path := range []string{"/v1/messages", "/v1/messages/count_tokens"} {
		for _, tt := range []struct{ name, body string }{
			{"an overlong key", "{\"model\":\"m-claude\",\"mod\xc1\xa5l\":\"claude-opus\",\"max_tokens\":5,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}"},
			{"in a message", "{\"model\":\"m-claude\",\"max_tokens\":5,\"messages\":[{\"role\":\"user\",\"content\":\"caf\xe9\"}]}"},
			{"in an unknown field", "{\"model\":\"m-claude\",\"max_tokens\":5,\"x\":\"\xff\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}"},
		} {
			t.Run(path+"/"+tt.name, func(t *testing.T) {
				r := g.do("POST", path, "client-key", []byte(tt.body))
				got := []string{http.StatusText(r.status), gjson.GetBytes(r.body, "error.type").Str}
				if diff := cmp.Diff([]string{"Bad Request", "invalid_request_error"}, got); diff != "" {
					t.Errorf("answer (-want +got):\n%s\n%s", diff, r.body)
				}
			})
		}
	}
	if n := len(up.calls()); n != 0 {
		t.Errorf("upstream saw %d requests, want none", n)
	}
}
